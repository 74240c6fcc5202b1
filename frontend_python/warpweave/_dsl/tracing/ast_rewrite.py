"""The preprocessor: rewrites a @cute.jit / @cute.kernel function once, before tracing.

`for ... in range(...)` (and cutlass.range), `if` and `while` become calls into control_flow, with the body as a
nested function whose parameters and return values are the variables the body assigns; at trace time those
helpers emit structured IR (scf.for, scf.if, scf.while) for dynamic conditions and bounds, and run plain Python
for static ones. `cutlass.range_constexpr` loops and `cutlass.const_expr` conditions stay Python. `and`, `or`,
`not` and conditional expressions become calls that keep Python's short-circuit for static values. Calls of the
names `min` and `max` go through control_flow.builtin_min_max, which, when they are Python's builtins and an
argument is a DSL number, compares at run time (cutlass.min / cutlass.max) instead of asking it for a truth value.

Line numbers are kept, so tracebacks, diagnostics and the IR's locations point at the user's source.
"""
from __future__ import annotations

import __future__
import ast
import collections
import functools
from typing import Callable

from ..base.errors import DSLNotImplementedError, DSLTypeError
from . import control_flow, rewrite_cache
from .function_source import source_tree

# The control_flow module inside rewritten code. It ends in "__" so that Python's private-name mangling leaves it
# alone in the methods of a class defined inside a kernel (where "__ww_cf" would be read as "_Class__ww_cf").
_H = "__ww_cf__"


# The ast field types that never hold a node (ast's classes state their fields' types in their
# docstrings, e.g. "Name(identifier id, expr_context ctx)"), and the context markers no helper here looks at.
_LEAF_TYPES = frozenset({"identifier", "string", "constant", "int", "expr_context"})
_NODE_FIELDS: dict = {}


def _node_fields(cls) -> tuple:
    """The fields of an ast class that may hold nodes (all of them where its docstring does not say)."""
    fields = _NODE_FIELDS.get(cls)
    if fields is None:
        doc = (cls.__doc__ or "").strip()
        types = {}
        if doc.startswith(cls.__name__ + "(") and doc.endswith(")"):
            for part in doc[len(cls.__name__) + 1:-1].split(","):
                words = part.split()
                if len(words) == 2:
                    types[words[1]] = words[0].rstrip("?*")
        fields = _NODE_FIELDS[cls] = tuple(f for f in cls._fields if types.get(f) not in _LEAF_TYPES)
    return fields


def _children(node) -> list:
    """ast.iter_child_nodes as a list, without the context markers (Load, Store, Del) no helper here looks at: a
    kernel of ~10,000 nodes is walked by several of them, and ast's generators cost a GEMM's rewrite ~40 ms. Only
    the fields that may hold nodes are read (a Name's or a Constant's none)."""
    out = []
    AST = ast.AST
    for name in _node_fields(node.__class__):
        value = getattr(node, name, None)
        if value.__class__ is list:
            for v in value:
                if isinstance(v, AST):
                    out.append(v)
        elif isinstance(value, AST) and not isinstance(value, ast.expr_context):
            out.append(value)
    return out


def _walk(node):
    """ast.walk's nodes in its order (breadth first), context markers aside."""
    todo = collections.deque([node])
    while todo:
        node = todo.popleft()
        todo.extend(_children(node))
        yield node


_ABSENT = object()


def _position(node, attrs, name: str, inherited, none_is_absent: bool):
    """The node's position `name`, set to the inherited one where it has none (ast.fix_missing_locations's rule:
    a start absent, an end absent or None)."""
    if name not in attrs:
        return inherited
    value = getattr(node, name, _ABSENT)
    if value is _ABSENT or (none_is_absent and value is None):
        setattr(node, name, inherited)
        return inherited
    return value


def _fix_missing_locations(root) -> None:
    """ast.fix_missing_locations (a node made here takes its parent's location), iteratively."""
    stack = [(root, 1, 0, 1, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        node, lineno, col, end_lineno, end_col = pop()
        attrs = node._attributes
        if "lineno" in attrs:
            # Most nodes come from the parsed source with their four positions: read them at once.
            d = node.__dict__
            el, ec = d.get("end_lineno"), d.get("end_col_offset")
            if "lineno" in d and "col_offset" in d and el is not None and ec is not None:
                lineno, col, end_lineno, end_col = d["lineno"], d["col_offset"], el, ec
            else:
                lineno = _position(node, attrs, "lineno", lineno, False)
                end_lineno = _position(node, attrs, "end_lineno", end_lineno, True)
                col = _position(node, attrs, "col_offset", col, False)
                end_col = _position(node, attrs, "end_col_offset", end_col, True)
        for child in _children(node):
            push((child, lineno, col, end_lineno, end_col))


class _Visitor(ast.NodeVisitor):
    """ast.NodeVisitor over _children, each method looked up once per node class: the helpers below walk a block
    once for every loop or branch around it."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._methods = {}

    def visit(self, node):
        method = self._methods.get(node.__class__)
        if method is None:
            method = self._methods[node.__class__] = getattr(type(self), "visit_" + node.__class__.__name__,
                                                             type(self).generic_visit)
        return method(self, node)

    def generic_visit(self, node):
        for child in _children(node):
            self.visit(child)

    def visit_Constant(self, node):  # ast's own is a shim for the visit_Num era, and a constant has no children
        pass


def _is_call_to(node, names: set[str]) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    if isinstance(f, ast.Name):
        return f.id in names
    if isinstance(f, ast.Attribute):
        return f.attr in names
    return False


def _assigned_names(stmts) -> list[str]:
    """Names a block assigns (not inside nested functions, lambdas or comprehensions), in first-seen order. `_`,
    Python's name for a value thrown away (`a, _ = f()`), is not one: a dynamic region does not carry it out, so it
    may hold values of other types in and after the region."""
    found: list[str] = []

    class V(_Visitor):
        def add(self, name):
            if name not in found and not name.startswith("__ww") and name != "_":
                found.append(name)

        def visit_Name(self, node):
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                self.add(node.id)

        def visit_FunctionDef(self, node):
            if not node.name.startswith("__ww"):
                self.add(node.name)

        visit_AsyncFunctionDef = visit_FunctionDef

        def visit_ClassDef(self, node):
            self.add(node.name)

        def visit_Lambda(self, node):
            pass

        def visit_ListComp(self, node):
            pass

        visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ListComp

    v = V()
    for s in stmts:
        v.visit(s)
    return found


def _method_receivers(stmts, assigned) -> list[str]:
    """Names whose methods a block calls (x.advance()), whose attributes or elements it assigns, and names it passes
    to a function or method call (helper(x), self.load(x, n): a @cute.jit helper that may call x.set(...) or
    x.advance()): objects it may change in place, which a dynamic region carries when they hold run-time values
    (e.g. a pipeline state, a tiled MMA's ACCUMULATE field, a list of running statistics)."""
    found: list[str] = []

    def note(n):
        if n not in found and n not in assigned and not n.startswith("__ww"):
            found.append(n)

    for s in stmts:
        for node in _walk(s):
            # an attribute assigned (x.f = ..., x.f ^= 1): the object changes in place as a method would change it
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = list(node.targets if isinstance(node, ast.Assign) else [node.target])
                while any(isinstance(t, (ast.Tuple, ast.List)) for t in targets):  # a, x[i] = ...
                    targets = [e for t in targets for e in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t])]
                for t in targets:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
                        note(t.value.id)
                    # an element stored (x[i] = ..., x[i][j] += ...): a Python list of numbers changes in place
                    # (running statistics kept per stage); tensors' stores are memory's and carry nothing
                    while isinstance(t, ast.Subscript):
                        t = t.value
                        if isinstance(t, ast.Name):
                            note(t.id)
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                note(node.func.value.id)
            if isinstance(node.func, ast.Attribute) or \
                    isinstance(node.func, ast.Name) and not node.func.id.startswith("__ww"):
                for a in list(node.args) + [k.value for k in node.keywords]:
                    if isinstance(a, ast.Name):
                        note(a.id)
    return found


def _rebound_first(stmts, names) -> list[str]:
    """Those of `names` whose first mention in the block (its statements in order) is a plain assignment whose
    value does not read them: each trip of a loop over the block sets them before reading them, so the trip never
    reads what the one before left there (a stage's view made again at the top of the trip)."""
    def mentions(node, n):
        return any(isinstance(x, ast.Name) and x.id == n for x in ast.walk(node))

    out = []
    for n in names:
        for st in stmts:
            if not mentions(st, n):
                continue
            value = st.value if isinstance(st, (ast.Assign, ast.AnnAssign)) else None
            targets = st.targets if isinstance(st, ast.Assign) else [st.target] if isinstance(st, ast.AnnAssign) else []
            if value is not None and len(targets) == 1 and isinstance(targets[0], ast.Name) and \
                    targets[0].id == n and not mentions(value, n):
                out.append(n)
            break
    return out


def _indexed_by(stmts, var: str) -> list[str]:
    """Names a block subscripts with an index that uses `var` (x[i], x[i, 0], x[(None, i)]): where they are
    register tensors, a loop over `var` must be unrolled for them to stay in registers."""
    found: list[str] = []
    for s in stmts:
        for node in _walk(s):
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and \
                    any(isinstance(n, ast.Name) and n.id == var for n in _walk(node.slice)) and \
                    node.value.id not in found and not node.value.id.startswith("__ww"):
                found.append(node.value.id)
    return found


def _contains(stmts, types) -> ast.AST | None:
    """The first node of the given types in a block, not looking into nested functions or loops they end."""

    class V(_Visitor):
        hit = None

        def generic_visit(self, node):
            if self.hit is None:
                super().generic_visit(node)

        def visit_FunctionDef(self, node):
            pass

        visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef

        def visit(self, node):
            if self.hit is None and isinstance(node, types):
                self.hit = node
            else:
                super().visit(node)

    v = V()
    for s in stmts:
        v.visit(s)
    return v.hit


def _loop_escapes(stmts) -> ast.AST | None:
    """break/continue that leave this loop (not those of nested loops), and return anywhere."""

    class V(_Visitor):
        hit = None

        def visit_For(self, node):
            # break/continue inside a nested loop belong to it; return still escapes.
            r = _contains(node.body + node.orelse, (ast.Return,))
            if r is not None and self.hit is None:
                self.hit = r

        visit_While = visit_For

        def visit_FunctionDef(self, node):
            pass

        visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef

        def visit_Break(self, node):
            if self.hit is None:
                self.hit = node

        visit_Continue = visit_Return = visit_Break

    v = V()
    for s in stmts:
        v.visit(s)
    return v.hit


def _own_scope_nodes(fdef):
    """The nodes of a function's own scope: not inside nested functions, lambdas or classes."""
    stack = list(fdef.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(_children(node))


def _check_function(fdef, filename, qualname):
    """Refuses what a traced function cannot be (a generator, a coroutine, a writer of enclosing variables), and
    hoists `global` statements to the top of the function, where they mean the same (a global declaration covers
    the whole function) and do not end up inside the nested functions that dynamic bodies become."""
    def refuse(node, message):
        raise DSLTypeError(message, (filename, getattr(node, "lineno", fdef.lineno)))

    if isinstance(fdef, ast.AsyncFunctionDef):
        refuse(fdef, f"{qualname} is an `async def`; a @cute.kernel or @cute.jit function must be a plain `def`")
    names = []
    for node in _own_scope_nodes(fdef):
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            refuse(node, f"`yield` makes {qualname} a generator, which is never traced (the kernel would be empty); "
                         "a @cute.kernel or @cute.jit function must not yield: write results to a tensor or return "
                         "them")
        if isinstance(node, ast.Await):
            refuse(node, f"`await` is not supported in {qualname}")
        if isinstance(node, ast.Nonlocal):
            refuse(node, f"`nonlocal {', '.join(node.names)}` in {qualname}: a @cute.kernel or @cute.jit function "
                         "cannot assign the variables of the function that encloses it; return the value instead "
                         "(a `nonlocal` inside a helper function defined within the kernel is fine)")
        if isinstance(node, ast.Global):
            names.extend(n for n in node.names if n not in names)

    if names:
        class Drop(ast.NodeTransformer):
            def visit_Global(self, node):
                return None

            def visit_FunctionDef(self, node):
                return node  # nested scopes keep their own declarations

            visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef

        fdef.body = [Drop().visit(st) for st in fdef.body]
        fdef.body = [st for st in fdef.body if st is not None] or [ast.Pass()]
        fdef.body.insert(0, ast.copy_location(ast.Global(names=names), fdef))


class DSLPreprocessor(ast.NodeTransformer):
    def __init__(self, filename: str):
        self.filename = filename
        self.counter = 0
        self._visitors = {}  # node class -> this instance's method for it (None: generic_visit)

    # --- traversal: ast.NodeTransformer's, with each method looked up once per node class (libraries' wrappers
    # included, as they stand when the instance is made) and a node's fields read without ast's generators ---------
    def visit(self, node):
        cls = node.__class__
        try:
            method = self._visitors[cls]
        except KeyError:
            method = self._visitors[cls] = getattr(self, "visit_" + cls.__name__, None)
        return self.generic_visit(node) if method is None else method(node)

    def generic_visit(self, node):
        for name in node._fields:
            try:
                old = getattr(node, name)
            except AttributeError:
                continue
            if isinstance(old, list):
                new = None  # the field's new list, from the first node a visit replaced
                for i, value in enumerate(old):
                    if not isinstance(value, ast.AST):
                        if new is not None:
                            new.append(value)
                        continue
                    result = self.visit(value)
                    if result is value and new is None:
                        continue
                    if new is None:
                        new = old[:i]
                    if result is None:
                        continue
                    if isinstance(result, ast.AST):
                        new.append(result)
                    else:
                        new.extend(result)
                if new is not None:
                    old[:] = new
            elif isinstance(old, ast.AST):
                result = self.visit(old)
                if result is None:
                    delattr(node, name)
                elif result is not old:
                    setattr(node, name, result)
        return node

    def visit_Constant(self, node):  # ast's own is a shim for the visit_Num era, and a constant has no children
        return node

    def fresh(self, kind: str) -> str:
        self.counter += 1
        return f"__ww_{kind}_{self.counter}"

    def error(self, node, message, cls=DSLNotImplementedError):
        raise cls(message, (self.filename, getattr(node, "lineno", 0)))

    # --- helpers to build code ----------------------------------------------------------------------------------
    @staticmethod
    def _helper(name: str) -> ast.expr:
        return ast.Attribute(value=ast.Name(id=_H, ctx=ast.Load()), attr=name, ctx=ast.Load())

    @staticmethod
    def _names_tuple(names) -> ast.expr:
        return ast.Tuple(elts=[ast.Constant(value=n) for n in names], ctx=ast.Load())

    def _values_tuple(self, names) -> ast.expr:
        # Each value is read through a lambda, so that a name not yet bound reads as Undefined.
        return ast.Tuple(
            elts=[ast.Call(func=self._helper("read"),
                           args=[ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                                                               defaults=[]),
                                            body=ast.Name(id=n, ctx=ast.Load())),
                                 ast.Constant(value=n)], keywords=[])
                  for n in names], ctx=ast.Load())

    def _func(self, name, params, body, returns) -> ast.FunctionDef:
        body = list(body) if body else []
        body.append(ast.Return(value=ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Load()) for n in returns], ctx=ast.Load())))
        return ast.FunctionDef(
            name=name,
            args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params], kwonlyargs=[], kw_defaults=[],
                               defaults=[]),
            body=body, decorator_list=[], returns=None, type_params=[])

    def _assign_back(self, names, call) -> ast.stmt:
        if not names:
            return ast.Expr(value=call)
        return ast.Assign(targets=[ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Store()) for n in names], ctx=ast.Store())],
                          value=call)

    # --- statements ---------------------------------------------------------------------------------------------
    def visit_FunctionDef(self, node):
        node.body = self._block(node.body)
        return node

    def _block(self, stmts):
        out = []
        for s in stmts:
            r = self.visit(s)
            if isinstance(r, list):
                out.extend(r)
            elif r is not None:
                out.append(r)
        return out

    def visit_For(self, node: ast.For):
        if _is_call_to(node.iter, {"range_constexpr"}):
            node.body = self._block(node.body)
            node.orelse = self._block(node.orelse)
            return node
        if not _is_call_to(node.iter, {"range"}):
            # A Python loop over a Python iterable (list, tuple, zip, ...).
            node.body = self._block(node.body)
            node.orelse = self._block(node.orelse)
            return node
        if not isinstance(node.target, ast.Name):
            self.error(node, "the variable of a dynamic `for ... in range(...)` loop must be a single name")
        if node.orelse:
            self.error(node, "`for ... else` is not supported on a dynamic loop")
        esc = _loop_escapes(node.body)
        if esc is not None:
            self.error(esc, f"`{type(esc).__name__.lower()}` inside a dynamic `for ... in range(...)` loop is not "
                            "supported; use cutlass.range_constexpr for a loop unrolled in Python")
        names = [n for n in _assigned_names(node.body) if n != node.target.id]
        body = self._block(node.body)
        # The bounds are expressions of the enclosing code: rewritten as it is (range(0, min(d, n)) compares at
        # run time where n is a runtime value).
        node.iter.args = [self.visit(a) for a in node.iter.args]
        for k in node.iter.keywords:
            k.value = self.visit(k.value)
        fname = self.fresh("for")
        fdef = self._func(fname, [node.target.id] + names, body, names)
        mutables = _method_receivers(node.body, set(names) | {node.target.id})
        indexed = [n for n in _indexed_by(node.body, node.target.id) if n not in names]
        rebound = _rebound_first(node.body, names)
        call = ast.Call(func=self._helper("for_range"),
                        args=[ast.Name(id=fname, ctx=ast.Load()),
                              ast.Tuple(elts=node.iter.args, ctx=ast.Load()),
                              self._names_tuple(names), self._values_tuple(names), ast.Constant(value=node.lineno)],
                        keywords=node.iter.keywords + [ast.keyword(arg="mutables",
                                                                   value=self._values_tuple(mutables)),
                                                       ast.keyword(arg="mutable_names",
                                                                   value=self._names_tuple(mutables)),
                                                       ast.keyword(arg="indexed",
                                                                   value=self._values_tuple(indexed)),
                                                       ast.keyword(arg="rebound", value=self._names_tuple(rebound))])
        out = [fdef, self._assign_back(names, call)]
        for s in out:
            ast.copy_location(s, node)
        return out

    def visit_If(self, node: ast.If):
        if _is_call_to(node.test, {"const_expr"}):
            node.test = self.visit(node.test)
            node.body = self._block(node.body)
            node.orelse = self._block(node.orelse)
            return node
        node.test = self.visit(node.test)
        if _contains(node.body + node.orelse, (ast.Return, ast.Break, ast.Continue)) is not None:
            # Cannot be a region: allowed only when the condition is static at trace time.
            node.test = ast.Call(func=self._helper("static_condition"), args=[node.test, ast.Constant(value=node.lineno)],
                                 keywords=[])
            node.body = self._block(node.body)
            node.orelse = self._block(node.orelse)
            return node
        names = _assigned_names(node.body + node.orelse)
        then_name, else_name = self.fresh("then"), self.fresh("else")
        then_def = self._func(then_name, names, self._block(node.body), names)
        else_def = self._func(else_name, names, self._block(node.orelse), names)
        mutables = _method_receivers(node.body + node.orelse, set(names))
        call = ast.Call(func=self._helper("if_"),
                        args=[node.test, ast.Name(id=then_name, ctx=ast.Load()), ast.Name(id=else_name, ctx=ast.Load()),
                              self._names_tuple(names), self._values_tuple(names), ast.Constant(value=node.lineno)],
                        keywords=[ast.keyword(arg="mutables", value=self._values_tuple(mutables)),
                                  ast.keyword(arg="mutable_names", value=self._names_tuple(mutables))])
        # On the condition's line: a statement's location spans its body, and the helper's call would report the
        # last of those lines as the frame's line while it judges the condition.
        ast.copy_location(call, node.test)
        out = [then_def, else_def, self._assign_back(names, call)]
        for s in out:
            ast.copy_location(s, node)
        return out

    def visit_While(self, node: ast.While):
        if _is_call_to(node.test, {"const_expr"}):
            node.test = self.visit(node.test)
            node.body = self._block(node.body)
            node.orelse = self._block(node.orelse)
            return node
        if node.orelse:
            self.error(node, "`while ... else` is not supported on a dynamic loop")
        esc = _loop_escapes(node.body)
        if esc is not None:
            node.test = ast.Call(func=self._helper("static_condition"), args=[self.visit(node.test),
                                                                               ast.Constant(value=node.lineno)],
                                 keywords=[])
            node.body = self._block(node.body)
            return node
        names = _assigned_names(node.body)
        cond_name, body_name = self.fresh("cond"), self.fresh("while")
        cond_def = ast.FunctionDef(
            name=cond_name,
            args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in names], kwonlyargs=[], kw_defaults=[],
                               defaults=[]),
            body=[ast.Return(value=self.visit(node.test))], decorator_list=[], returns=None, type_params=[])
        body_def = self._func(body_name, names, self._block(node.body), names)
        mutables = _method_receivers(node.body, set(names))
        call = ast.Call(func=self._helper("while_"),
                        args=[ast.Name(id=cond_name, ctx=ast.Load()), ast.Name(id=body_name, ctx=ast.Load()),
                              self._names_tuple(names), self._values_tuple(names), ast.Constant(value=node.lineno)],
                        keywords=[ast.keyword(arg="mutables", value=self._values_tuple(mutables)),
                                  ast.keyword(arg="mutable_names", value=self._names_tuple(mutables))])
        out = [cond_def, body_def, self._assign_back(names, call)]
        for s in out:
            ast.copy_location(s, node)
        return out

    # --- expressions --------------------------------------------------------------------------------------------
    def visit_BoolOp(self, node: ast.BoolOp):
        values = [self.visit(v) for v in node.values]
        helper = "and_" if isinstance(node.op, ast.And) else "or_"
        lambdas = [ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
                              body=v) for v in values[1:]]
        return ast.copy_location(ast.Call(func=self._helper(helper), args=[values[0]] + lambdas, keywords=[]), node)

    def visit_UnaryOp(self, node: ast.UnaryOp):
        node.operand = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(ast.Call(func=self._helper("not_"), args=[node.operand], keywords=[]), node)
        return node

    def visit_Compare(self, node: ast.Compare):
        self.generic_visit(node)
        if len(node.ops) > 1:
            # `a < b < c`: Python asks the truth of `a < b` before it compares b and c; on DSL values that is
            # and_'s combination, each operand evaluated once (branches.compare_chain)
            empty = ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])
            ops = ast.Tuple(elts=[ast.Constant(value=type(op).__name__) for op in node.ops], ctx=ast.Load())
            rights = [ast.Lambda(args=empty, body=c) for c in node.comparators]
            call = ast.Call(func=self._helper("compare_chain"), args=[node.left, ops] + rights, keywords=[])
            return ast.copy_location(call, node)
        if not isinstance(node.ops[0], (ast.In, ast.NotIn)):
            return node
        call = ast.Call(func=self._helper("contains"), args=[node.left, node.comparators[0]], keywords=[])
        if isinstance(node.ops[0], ast.NotIn):
            call = ast.Call(func=self._helper("not_"), args=[call], keywords=[])
        return ast.copy_location(call, node)

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in ("min", "max") and node.args and \
                not any(isinstance(a, ast.Starred) for a in node.args) and not node.keywords:
            call = ast.Call(func=self._helper("builtin_min_max"),
                            args=[ast.Name(id=node.func.id, ctx=ast.Load()), ast.Constant(value=node.func.id)] +
                            node.args, keywords=[])
            return ast.copy_location(call, node)
        return node

    def visit_IfExp(self, node: ast.IfExp):
        empty = ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])
        call = ast.Call(func=self._helper("ifexp"),
                        args=[self.visit(node.test), ast.Lambda(args=empty, body=self.visit(node.body)),
                              ast.Lambda(args=empty, body=self.visit(node.orelse))], keywords=[])
        return ast.copy_location(call, node)


def preprocessor_extensions() -> tuple:
    """What libraries changed of DSLPreprocessor (a `visit_*` wrapped or added, as CuTe DSL lets them): the
    module, name and source file state of each such method. A rewrite kept by an earlier process holds only when the
    preprocessor was extended the same way."""
    out = []
    for name, attr in sorted(vars(DSLPreprocessor).items()):
        fn = getattr(attr, "__func__", attr)
        code = getattr(fn, "__code__", None)
        if code is None or getattr(fn, "__module__", None) == __name__:
            continue
        out.append((name, fn.__module__, fn.__qualname__, rewrite_cache.source_key(code.co_filename)))
    return tuple(out)


def rewrite(fn: Callable) -> Callable:
    """The function with its control flow rewritten (see the module doc), closures and defaults kept."""
    extensions = preprocessor_extensions()
    code = rewrite_cache.load(fn, extensions)   # an earlier process's rewrite of the same source
    if code is None:
        code = _rewritten_code(fn)
        rewrite_cache.store(fn, code, extensions)
    ns: dict = {}
    exec(code, fn.__globals__, ns)
    cells = [c.cell_contents for c in (fn.__closure__ or ())]
    new = ns["__ww_factory"](control_flow, *cells)
    new.__defaults__ = fn.__defaults__
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__annotations__ = dict(getattr(fn, "__annotations__", {}))
    new.__wrapped__ = fn
    functools.update_wrapper(new, fn, assigned=("__module__", "__name__", "__qualname__", "__doc__"), updated=())
    return new


def _drop_definition_time_expressions(fdef):
    """The rewritten def runs in the module's scope, not where the original was defined (a class body, whose names
    an annotation or default may use: `def create(params: Params)` in the class defining Params); its annotations
    and defaults are the original function's, set after it is made, so their expressions are not evaluated again."""
    args = fdef.args
    for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if a is not None:
            a.annotation = None
    fdef.returns = None
    args.defaults = [ast.Constant(value=None) for _ in args.defaults]
    args.kw_defaults = [None if d is None else ast.Constant(value=None) for d in args.kw_defaults]


def _rewritten_code(fn: Callable):
    """The code of a module defining `__ww_factory(control_flow, *free variables)`, which returns fn rewritten."""
    try:
        tree, filename = source_tree(fn)  # its nodes carry the file's line numbers (the helpers receive them)
    except (OSError, TypeError) as e:
        raise DSLTypeError(f"cannot read the source of {fn.__qualname__}: warpweave rewrites a decorated function's "
                           f"source, so it must live in a file ({e})") from None
    fdef = tree.body[0]
    if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise DSLTypeError(f"{fn.__qualname__} is not a plain function definition")
    fdef.decorator_list = []
    _drop_definition_time_expressions(fdef)
    _check_function(fdef, filename, fn.__qualname__)
    preprocessor = DSLPreprocessor(filename)
    fdef = preprocessor.visit(fdef)
    preprocessor._visitors.clear()  # its bound methods refer back to it
    # Free variables of the original become parameters of a factory, so the rewritten function sees them too.
    freevars = fn.__code__.co_freevars
    factory = ast.FunctionDef(
        name="__ww_factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=_H)] + [ast.arg(arg=v) for v in freevars], kwonlyargs=[],
                           kw_defaults=[], defaults=[]),
        body=[fdef, ast.Return(value=ast.Name(id=fdef.name, ctx=ast.Load()))], decorator_list=[], returns=None,
        type_params=[])
    module = ast.Module(body=[factory], type_ignores=[])
    _fix_missing_locations(module)
    flags = fn.__code__.co_flags & __future__.annotations.compiler_flag
    return compile(module, filename, "exec", flags=flags, dont_inherit=True)
