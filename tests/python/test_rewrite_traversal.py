"""The preprocessor walks a kernel's syntax tree with its own traversal (ast_rewrite._children, _walk, _Visitor,
DSLPreprocessor.visit / generic_visit, _fix_missing_locations): ast's generators cost a GEMM's rewrite tens of
milliseconds. What it computes must be what ast's own traversal computes: the same nodes in the same order, the
same locations, and in the end the same code for every function rewritten."""
import ast
import copy
import glob
import inspect
import os
import random
import types

import pytest

from warpweave._dsl.tracing import ast_rewrite as ar

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Sources with kernels of every shape the preprocessor meets: the examples and the frontend's own modules.
SOURCES = sorted(glob.glob(os.path.join(ROOT, "frontend_python", "examples", "**", "*.py"), recursive=True) +
                 glob.glob(os.path.join(ROOT, "frontend_python", "warpweave", "_dsl", "tracing", "*.py")) +
                 glob.glob(os.path.join(ROOT, "tests", "python", "test_dsl_*.py")))


def _trees():
    for path in SOURCES:
        with open(path, encoding="utf-8") as f:
            yield path, ast.parse(f.read())


def test_sources_are_found():
    assert len(SOURCES) > 10


def test_walk_is_ast_walk_without_context_markers():
    for path, tree in _trees():
        ours = list(ar._walk(tree))
        theirs = [n for n in ast.walk(tree) if not isinstance(n, ast.expr_context)]
        assert len(ours) == len(theirs) and all(a is b for a, b in zip(ours, theirs)), path


def _strip_some_locations(tree, rng):
    for node in ast.walk(tree):
        if "lineno" in node._attributes and rng.random() < 0.3:
            for a in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
                if rng.random() < 0.7 and hasattr(node, a):
                    delattr(node, a)


def _locations(tree):
    return [tuple(getattr(n, a, "-") for a in ("lineno", "col_offset", "end_lineno", "end_col_offset"))
            for n in ast.walk(tree)]


def test_fix_missing_locations_is_asts():
    rng = random.Random(29)
    for path, tree in _trees():
        _strip_some_locations(tree, rng)
        ours, theirs = copy.deepcopy(tree), copy.deepcopy(tree)
        ar._fix_missing_locations(ours)
        ast.fix_missing_locations(theirs)
        assert _locations(ours) == _locations(theirs), path


class _Edits:
    """Edits of every kind a NodeTransformer's result may make: a node replaced, removed from a list, a
    statement expanded into several, a required field given a new node."""

    def visit_Name(self, node):
        if node.id.startswith("_") and isinstance(node.ctx, ast.Load):
            return ast.copy_location(ast.Name(id=node.id + "_x", ctx=ast.Load()), node)
        return node

    def visit_Pass(self, node):
        return None

    def visit_Expr(self, node):
        self.generic_visit(node)
        if isinstance(node.value, ast.Constant):
            return [node, ast.copy_location(ast.Expr(value=ast.Constant(value=1)), node)]
        return node

    def visit_Constant(self, node):
        return ast.copy_location(ast.Constant(value=node.value), node) if node.value == 0 else node


class _Ours(_Edits, ast.NodeTransformer):
    """The edits through the preprocessor's traversal (and none of its rewrites)."""

    def __init__(self):
        self._visitors = {}

    visit = ar.DSLPreprocessor.visit
    generic_visit = ar.DSLPreprocessor.generic_visit


class _Theirs(_Edits, ast.NodeTransformer):
    pass


def test_generic_visit_is_node_transformers():
    for path, tree in _trees():
        ours, theirs = copy.deepcopy(tree), copy.deepcopy(tree)
        _Ours().visit(ours)
        _Theirs().visit(theirs)
        assert ast.dump(ours, include_attributes=True) == ast.dump(theirs, include_attributes=True), path


def _decorated_functions():
    """A function object (free variables as empty cells) for every @jit / @kernel function of the sources."""
    for path in SOURCES:
        with open(path, encoding="utf-8") as f:
            src = f.read()
        tree = ast.parse(src)
        want = {(n.name, n.decorator_list[0].lineno) for n in ast.walk(tree)
                if isinstance(n, ast.FunctionDef) and n.decorator_list and
                any("jit" in ast.unparse(d) or "kernel" in ast.unparse(d) for d in n.decorator_list)}
        todo = [compile(src, path, "exec", dont_inherit=True)]
        while todo:
            code = todo.pop()
            todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
            if (code.co_name, code.co_firstlineno) in want:
                fn = types.FunctionType(code, {}, code.co_name, None,
                                        tuple(types.CellType(None) for _ in code.co_freevars))
                fn.__qualname__ = code.co_qualname
                yield fn


def _with_asts_traversal(monkeypatch):
    """The preprocessor with ast's traversal in place of its own."""
    monkeypatch.setattr(ar, "_children", lambda node: [n for n in ast.iter_child_nodes(node)
                                                        if not isinstance(n, ast.expr_context)])
    monkeypatch.setattr(ar, "_walk", lambda node: (n for n in ast.walk(node) if not isinstance(n, ast.expr_context)))
    monkeypatch.setattr(ar, "_fix_missing_locations", ast.fix_missing_locations)
    monkeypatch.setattr(ar.DSLPreprocessor, "visit", ast.NodeVisitor.visit)
    monkeypatch.setattr(ar.DSLPreprocessor, "generic_visit", ast.NodeTransformer.generic_visit)
    monkeypatch.setattr(ar._Visitor, "visit", ast.NodeVisitor.visit)


def _rewritten(fn):
    # Code objects compare by their instructions, constants (nested functions' code included), names, line and
    # column tables (marshal's bytes would also differ by reference counts).
    try:
        return ar._rewritten_code(fn)
    except Exception as e:  # noqa: BLE001 - a refusal must be the same refusal
        return f"{type(e).__name__}: {e}"


def test_rewritten_code_is_that_of_asts_traversal(monkeypatch):
    fns = list(_decorated_functions())
    assert len(fns) > 20
    ours = [_rewritten(fn) for fn in fns]
    with monkeypatch.context() as m:
        _with_asts_traversal(m)
        theirs = [_rewritten(fn) for fn in fns]
    for fn, a, b in zip(fns, ours, theirs):
        assert a == b, f"{inspect.getsourcefile(fn)}: {fn.__qualname__}"
