"""External device functions (CuTe DSL's `cute.extern`, `cutlass.base_dsl.ffi.extern`): a Python function whose
annotations declare the signature of a function defined elsewhere, in an LLVM bitcode file given as
`source=BitCode(path)` (a user's CUDA C++ compiled with `clang -emit-llvm --cuda-device-only`, a library's device
API such as NVSHMEM's). A call in a kernel declares the symbol once per module and calls it; the compiler links
each named bitcode file into the module before optimising it (core/compiler/extern_bitcode.cpp), so the callee
may be inlined and what nobody calls disappears.

Arguments are matched as CuTe DSL 4.8.1 matches them: a DSL number of exactly the parameter's type (or an IR value
of its storage type), a Python int for an integer or Boolean parameter, a Python float for a float parameter, a
Pointer (an address of its memory space) for a `cute.Pointer` parameter. A DSL number of another type is no match
(CuTe DSL converts none): the caller converts it. Overloads (`typing.overload`) and TypeVar-generic signatures are
resolved per call to a concrete signature, named as CuTe DSL names them (`name_f32_i32`: the parameters' IR types,
characters outside [A-Za-z0-9_] written `_XX` in hex), for numeric parameters; a pointer in such a signature is
refused (CuTe DSL spells its own pointer type in the name). The result is a DSL number of the annotated type.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import os
import re
import typing
from dataclasses import dataclass

from ..base import trace
from ..base import ir_values
from ..base.errors import DSLTypeError, DSLValueError, DSLNotImplementedError, user_location
from ..base.ir_ops import mlir_string
from ..tracing import reach_recording
from ..values.numeric import (Boolean, BFloat16, Float16, Float32, Float64, Int8, Int16, Int32, Int64, Numeric,
                              TFloat32, Uint8, Uint16, Uint32, Uint64)
from ..values.pointer import Pointer, ptr_type

# The numbers an extern passes and returns: those with an LLVM scalar type of their own.
_SCALARS = (Boolean, Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64, Float16, BFloat16, Float32,
            TFloat32, Float64)
_SYMBOL = re.compile(r"[A-Za-z_.$][A-Za-z0-9_.$]*")


@dataclass(frozen=True)
class BitCode:
    """An LLVM bitcode file (`.bc`) to link when compiling: it defines the extern functions that name it."""
    path: str


def mangle(name: str) -> str:
    """`name` as a symbol: characters outside [A-Za-z0-9_] written as `_` and their two hex digits (CuTe DSL's)."""
    return "".join(c if c.isascii() and (c.isalnum() or c == "_") else f"_{ord(c):02X}" for c in name)


def default_name_mangler(ffi: "FFI") -> str:
    """The symbol of a concrete signature of an overloaded or generic extern: its name, then each parameter's IR
    type, joined by `_` (CuTe DSL's)."""
    return "_".join([ffi.name] + [mangle(_param_ir_type(t)) for t in ffi.params_types])


def _param_ir_type(t) -> str:
    if isinstance(t, type) and issubclass(t, Numeric):
        return t.ir_type
    raise DSLNotImplementedError(
        "an overloaded or generic cute.extern with a pointer parameter: CuTe DSL names such a symbol after its own "
        "pointer type, which warpweave does not reproduce; declare one extern per pointer type with a concrete "
        "signature and name=", user_location())


def _bitcode_digest(path: str, cache={}) -> str:  # noqa: B006 - per process: (size, mtime) -> digest
    st = os.stat(path)
    key = (path, st.st_size, st.st_mtime_ns)
    digest = cache.get(key)
    if digest is None:
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        cache[key] = digest
    return digest


def _symbol_ref(name: str) -> str:
    if _SYMBOL.fullmatch(name):
        return "@" + name
    return '@"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _describe(t) -> str:
    return getattr(t, "__name__", None) or repr(t)


def _arg_text(x) -> str:
    if isinstance(x, Numeric):
        return type(x).__name__
    if isinstance(x, ir_values.Value):
        return f"an IR value of type {x.type.text}"
    return type(x).__name__


class FFI:
    """One concrete signature of an extern function: declares it in the module traced now (once) and calls it."""

    def __init__(self, *, name, params_types=None, return_type=None, inline=True, source=None, overloaded=False,
                 name_mangler=None, implicit_convert=None, where=None):
        self.name = name
        self.params_types = list(params_types or [])
        self.return_type = return_type
        self.inline = inline
        self.source = source
        self.overloaded = overloaded
        self.name_mangler = name_mangler or default_name_mangler
        self.implicit_convert = implicit_convert
        self.where = where  # "file:line" of the Python declaration, for messages

    @property
    def full_name(self) -> str:
        return self.name_mangler(self) if self.overloaded else self.name

    def __call__(self, *args):
        if len(args) != len(self.params_types):
            raise DSLTypeError(f"the extern function '{self.name}' takes {len(self.params_types)} argument(s), got "
                               f"{len(args)}", user_location())
        b = trace.builder()
        values, types = [], []
        for i, (x, t) in enumerate(zip(args, self.params_types)):
            v, ty = _operand(x, t, self, i)
            values.append(v)
            types.append(ty)
        ret = None if self.return_type is None else self.return_type.ir_type
        symbol = self.full_name
        _declare(symbol, types, ret, self)
        attrs = " {always_inline}" if self.inline else " {no_inline}"
        ops = ", ".join(f"${i}" for i in range(len(values)))
        sig = f"({', '.join(types)}) -> {ret or '()'}"
        text = f"llvm.call {_symbol_ref(symbol)}({ops}){attrs} : {sig}"
        if ret is None:
            b.custom_op(text, values, [])
            return None
        (r,) = b.custom_op("$r0 = " + text, values, [ret])
        return self.return_type.from_ir(r)


def _operand(x, t, ffi: FFI, i: int):
    """(SSA id, IR type) of argument x for a parameter of type t, already matched."""
    if isinstance(t, type) and issubclass(t, Numeric):
        if isinstance(x, ir_values.Value):
            return x.use(), t.ir_type
        return x.ir(), t.ir_type
    # a pointer
    if isinstance(x, Pointer):
        return x.address(0), ptr_type(x.memspace)
    return x.use(), x.type.text


def _declare(symbol: str, types: list, ret, ffi: FFI) -> None:
    """The module's declaration of `symbol`, once; the compiler is told which file defines it."""
    st = trace.current()
    sig = (tuple(types), ret)
    bitcode = os.path.abspath(ffi.source.path) if ffi.source is not None else ""
    known = st.externs.get(symbol)
    if known is not None:
        if known["signature"] != sig:
            raise DSLTypeError(
                f"the extern function '{symbol}' is called as ({', '.join(types)}) -> {ret or 'None'} here and as "
                f"({', '.join(known['signature'][0])}) -> {known['signature'][1] or 'None'} before: one symbol has "
                "one signature (declare overloads with typing.overload, which name each signature's symbol apart)",
                user_location())
        if bitcode and known["bitcode"] and bitcode != known["bitcode"]:
            raise DSLValueError(f"the extern function '{symbol}' is given by two bitcode files, "
                                f"'{known['bitcode']}' and '{bitcode}'", user_location())
        if bitcode and not known["bitcode"]:
            known.update(_bitcode_entry(bitcode, symbol))
            _set_module_attribute(st)
        return
    if symbol in st.kernel_names or (symbol == "vprintf" and st.has_vprintf):
        raise DSLValueError(f"the extern function '{symbol}' has the name of a function the module defines "
                            "already: give it another name= ", user_location())
    entry = {"signature": sig, "bitcode": ""}
    if bitcode:
        entry.update(_bitcode_entry(bitcode, symbol))
    st.externs[symbol] = entry
    attrs = "" if ffi.inline else " attributes {no_inline}"
    result = f" -> {ret}" if ret is not None else ""
    st.builder.add_module_text(f"llvm.func {_symbol_ref(symbol)}({', '.join(types)}){result}{attrs}")
    _set_module_attribute(st)


def _bitcode_entry(path: str, symbol: str) -> dict:
    try:
        digest = _bitcode_digest(path)
    except OSError as e:
        raise DSLValueError(f"the bitcode file of the extern function '{symbol}' (source=BitCode) cannot be read: "
                            f"{path}: {e.strerror or e}", user_location()) from None
    # A later process's function cache must see the file change, as it sees a source file change.
    reach_recording.note_file(path)
    return {"bitcode": path, "sha256": digest}


def _set_module_attribute(st) -> None:
    # The digests are in the module text, which keys the compile cache: a changed library is compiled again.
    items = []
    for symbol, e in st.externs.items():
        fields = [f"symbol = {mlir_string(symbol)}"]
        if e["bitcode"]:
            fields += [f"bitcode = {mlir_string(e['bitcode'])}", f"sha256 = {mlir_string(e['sha256'])}"]
        items.append("{" + ", ".join(fields) + "}")
    st.builder.set_module_attribute("ww.externs", "[" + ", ".join(items) + "]")


# --- matching a call to a signature ---------------------------------------------------------------------------

class _NoMatch(Exception):
    """An argument does not fit a parameter: the reason, for the message when no signature fits."""


def _convert_python(x, t):
    """CuTe DSL's implicit conversion: a Python number for a parameter of its kind; anything else as it is."""
    if isinstance(t, type) and issubclass(t, Numeric) and type(x) in (bool, int, float):
        if t.is_boolean and isinstance(x, (bool, int)):
            return t(x)
        if t.is_integer and isinstance(x, (bool, int)):
            return t(x)
        if t.is_float and isinstance(x, float):
            return t(x)
    return x


def _fits(x, t) -> bool:
    if isinstance(t, type) and issubclass(t, Numeric):
        if isinstance(x, Numeric):
            return type(x) is t
        return isinstance(x, ir_values.Value) and x.type.text == t.ir_type
    if t is Pointer:
        return isinstance(x, Pointer) or (isinstance(x, ir_values.Value) and x.type.text.startswith("!llvm.ptr"))
    return False


def _type_of_argument(x):
    """The concrete type a TypeVar binds to for argument x, or None."""
    if isinstance(x, Numeric):
        return type(x)
    if isinstance(x, ir_values.Value):
        for t in _SCALARS:
            if t.ir_type == x.type.text:
                return t
    return None


class _Signature:
    """One declared signature (the function's, or one overload's): its parameter and return annotations."""

    def __init__(self, fn, owner: str):
        self.fn = fn
        self.where = f"{fn.__code__.co_filename}:{fn.__code__.co_firstlineno}"
        try:
            sig = inspect.signature(fn, eval_str=True)
        except Exception as e:  # noqa: BLE001 - an annotation that does not evaluate
            raise DSLTypeError(f"the extern function '{owner}' ({self.where}): its annotations cannot be read: {e}",
                               user_location()) from None
        self.params = []
        for p in sig.parameters.values():
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                raise DSLTypeError(f"the extern function '{owner}' ({self.where}): parameter '{p.name}' must be a "
                                   "plain positional parameter (no *args, **kwargs or keyword-only)",
                                   user_location())
            self.params.append((p.name, self._check(p.annotation, owner, f"parameter '{p.name}'")))
        ret = sig.return_annotation
        self.ret = None if ret in (None, type(None), inspect.Signature.empty) else \
            self._check(ret, owner, "the return type", result=True)
        self.generic = any(isinstance(t, typing.TypeVar) for _, t in self.params)

    def _check(self, t, owner, what, result=False):
        if isinstance(t, typing.TypeVar):
            return t
        if t is inspect.Parameter.empty:
            raise DSLTypeError(f"the extern function '{owner}' ({self.where}): {what} has no annotation: annotate "
                               "it with its DSL type (Int32, Float32, ..., cute.Pointer)", user_location())
        if t in _SCALARS or (t is Pointer and not result):
            return t
        if typing.get_origin(t) is typing.Union or type(t).__name__ == "UnionType":
            raise DSLNotImplementedError(f"the extern function '{owner}' ({self.where}): {what} is a Union; "
                                         "declare one overload (typing.overload) per type instead", user_location())
        if getattr(t, "__name__", "") == "Constexpr" or "Constexpr" in repr(t):
            raise DSLNotImplementedError(f"the extern function '{owner}' ({self.where}): {what} is a Constexpr, "
                                         "which warpweave's externs do not take", user_location())
        kinds = "a DSL number with an LLVM type (Boolean, Int8..Int64, Uint8..Uint64, Float16, BFloat16, " \
                "Float32, Float64)" + ("" if result else " or cute.Pointer")
        raise DSLTypeError(f"the extern function '{owner}' ({self.where}): {what} is annotated {_describe(t)}; an "
                           f"extern's {'result' if result else 'parameter'} is {kinds}", user_location())

    def match(self, args, convert):
        """(argument values, parameter types, return type) of a call, or raises _NoMatch."""
        if len(args) != len(self.params):
            raise _NoMatch(f"takes {len(self.params)} argument(s), got {len(args)}")
        bound, values, types = {}, [], []
        for (name, t), x in zip(self.params, args):
            if isinstance(t, typing.TypeVar):
                if isinstance(x, Pointer):
                    _param_ir_type(Pointer)  # refused: the symbol would be named after a pointer type
                got = _type_of_argument(x)
                if got is None:
                    raise _NoMatch(f"'{name}' is generic ({t.__name__}): pass a DSL number (e.g. Int32(3)), got "
                                   f"{_arg_text(x)}")
                if bound.setdefault(t, got) is not got:
                    raise _NoMatch(f"'{name}' is {t.__name__}, bound to {bound[t].__name__} already, got "
                                   f"{got.__name__}")
                t = got
            x = convert(x, t)
            if not _fits(x, t):
                raise _NoMatch(f"'{name}' is {_describe(t)}, got {_arg_text(x)}")
            values.append(x)
            types.append(t)
        ret = self.ret
        if isinstance(ret, typing.TypeVar):
            if ret not in bound:
                raise _NoMatch(f"the return type {ret.__name__} is bound by no parameter")
            ret = bound[ret]
        return values, types, ret


class ExternCallHandler:
    """What `@cute.extern` makes of a function: each call is resolved to a concrete signature (the function's, or
    the first of its overloads that fits), whose FFI declares and calls the symbol."""

    def __init__(self, func, name, inline, source, name_mangler, overloaded, implicit_convert):
        if source is not None and not isinstance(source, BitCode):
            raise DSLTypeError(f"cute.extern's source= is a BitCode(path), got {type(source).__name__}",
                               user_location())
        functools.update_wrapper(self, func)
        self.func = func
        self.name = name or func.__name__
        self.inline = bool(inline)
        self.source = source
        self.name_mangler = name_mangler
        self.overloaded = overloaded
        # CuTe DSL converts Python numbers whether or not a conversion is given: ours is the default
        self.implicit_convert = implicit_convert or _convert_python
        self._signatures = None
        self._ffis = {}

    def _resolve_signatures(self):
        if self._signatures is None:
            overloads = list(typing.get_overloads(self.func))
            fns = overloads or [self.func]
            sigs = [_Signature(f, self.name) for f in fns]
            mangled = self.overloaded
            if mangled is None:
                mangled = len(sigs) > 1 or any(s.generic or isinstance(s.ret, typing.TypeVar) for s in sigs)
            self._signatures, self._mangled = sigs, mangled
        return self._signatures

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise DSLTypeError(f"the extern function '{self.name}' takes its arguments by position, got "
                               f"keyword(s) {', '.join(kwargs)}", user_location())
        reasons = []
        for sig in self._resolve_signatures():
            try:
                values, types, ret = sig.match(args, self.implicit_convert)
            except _NoMatch as e:
                reasons.append(f"{sig.where}: {e}")
                continue
            key = (tuple(types), ret)
            ffi = self._ffis.get(key)
            if ffi is None:
                ffi = FFI(name=self.name, params_types=types, return_type=ret, inline=self.inline,
                          source=self.source, overloaded=self._mangled, name_mangler=self.name_mangler,
                          implicit_convert=self.implicit_convert, where=sig.where)
                self._ffis[key] = ffi
            return ffi(*values)
        raise DSLTypeError(f"no signature of the extern function '{self.name}' takes these arguments ("
                           f"{', '.join(_arg_text(a) for a in args) or 'none'}); a DSL number of another type is "
                           "converted by the caller (e.g. Float32(x)):\n  " + "\n  ".join(reasons), user_location())


def extern(func=None, *, name=None, inline=True, source=None, name_mangler=None, overloaded=None,
           implicit_convert=None):
    """Declares an external device function (`@extern`, `@extern(source=BitCode("lib.bc"), name="sym")`): calls in
    a kernel call the symbol `name` (the function's name by default), defined by the bitcode file `source`, linked
    when the kernel is compiled. inline=True marks the calls for inlining, inline=False forbids it."""
    def decorate(fn):
        return ExternCallHandler(fn, name, inline, source, name_mangler, overloaded, implicit_convert)
    return decorate if func is None else decorate(func)


# cute.extern: Python numbers are converted to the parameter's type (CuTe DSL's default conversion).
cute_extern = functools.partial(extern, implicit_convert=_convert_python)
