"""cutlass_call: a @cute.jit function called as an operation of a JAX program.

`cutlass_call(fn, output_shape_dtype=..., **static)` returns a callable of JAX arrays. Called (inside jax.jit, or
eagerly), it compiles `fn(stream, *inputs, *outputs, **static)` for the arrays' shapes and dtypes (TensorSpec,
tensor_spec.py) and puts one XLA FFI custom call into the computation, whose handler calls the compiled function
through its TVM FFI entry (the package jax-tvm-ffi adapts XLA's FFI to TVM FFI): XLA passes its stream, which the
entry reads as TVM FFI's environment stream, and the buffers, and no Python runs at a launch. Outputs that alias
an input (input_output_aliases) are that input's buffer and are not passed to `fn` again. Static values (`**static`)
are compiled in, as cute.compile's Constexpr arguments are.

Each compiled function is its own FFI target, named after the function and a digest of what it was compiled for;
the targets live in this process (the kernels are not serialized into the computation), so a jax.export-ed
computation runs where its cutlass_calls were traced, and get_export_disabled_safety_checks() names them for
jax.export's check of custom calls.

A function that launches no kernel (host code only: printing layouts and values) runs as a JAX host callback on
host copies of the arrays, wherever JAX runs. In a compile-only run (`python -m warpweave run --compile-only`,
registry/compile_only.py) nothing needs a GPU: a call whose function launches kernels goes to the session when it
is traced (the program ends there, or, with on_launch="skip", its outputs are left as they were allocated).
"""
from __future__ import annotations

import hashlib
import itertools
import linecache
import os

import jax
import numpy as np

from ..base.errors import DSLRuntimeError, DSLTypeError, DSLValueError, register_library_dir, user_location
from ..call.jit import compile as cute_compile, jit as cute_jit
from ..registry import compile_only
from ..values.runtime import make_fake_stream
from .tensor_spec import ArrayView, aligned_empty, cutlass_to_jax_dtype, specs_for

# JAX's frames (jax.jit tracing the user's function) are never the user's line that a message names
register_library_dir(os.path.dirname(jax.__file__))

_TARGET_PREFIX = "warpweave_cutlass_call_"
_compiled: dict = {}      # cache key -> _Compiled
_targets: list = []       # FFI target names registered, in order
_bodies = itertools.count()


def _jax_tvm_ffi():
    try:
        import jax_tvm_ffi
    except ImportError:
        raise DSLRuntimeError("cutlass_call runs its functions through the jax-tvm-ffi package (pip install "
                              "jax-tvm-ffi)", user_location()) from None
    return jax_tvm_ffi


def _body(fn, n_in: int, n_out: int, in_tree, passed_outputs, static: dict):
    """The function compiled: flat tensor parameters (the TVM FFI entry takes one tensor a parameter, as XLA passes
    them), calling `fn` with the inputs in their tree and the outputs it is given. Its source is kept in linecache,
    as @cute.jit reads the source of what it traces."""
    names = [f"in{k}" for k in range(n_in)] + [f"out{k}" for k in range(n_out)]
    src = (f"def cutlass_call_body(stream, {', '.join(names)}):\n"
           f"    return fn(stream, *unflatten(in_tree, [{', '.join(names[:n_in])}]), "
           f"{''.join(f'out{k}, ' for k in passed_outputs)}**static)\n")
    filename = f"<warpweave.jax cutlass_call {next(_bodies)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    scope = {"fn": fn, "unflatten": jax.tree_util.tree_unflatten, "in_tree": in_tree, "static": static}
    exec(compile(src, filename, "exec"), scope)
    body = scope["cutlass_call_body"]
    body.__qualname__ = f"cutlass_call({getattr(fn, '__name__', 'fn')})"
    return body


def _static_key(v):
    try:
        hash(v)
        return ("=", v)
    except TypeError:
        return ("id", id(v))


class _Compiled:
    """A compiled function (JitCompiledFunction), its TVM FFI function (or None) and FFI target (None: host-only
    or compile-only, called through a host callback), and the views it was compiled for."""

    def __init__(self, compiled, ffi, target, views_in, views_out):
        self.compiled = compiled
        self.ffi = ffi
        self.target = target
        self.views_in = views_in
        self.views_out = views_out


def _compile(fn, views_in, views_out, in_tree, aliases, static, tvm_ffi: bool, cuda_graph: bool = True) -> _Compiled:
    passed = [k for k in range(len(views_out)) if k not in aliases.values()]
    key = (fn, in_tree, tuple(v.key() for v in views_in), tuple(v.key() for v in views_out),
           tuple(sorted(aliases.items())), tuple(sorted((k, _static_key(v)) for k, v in static.items())), tvm_ffi,
           cuda_graph)
    hit = _compiled.get(key)
    if hit is not None:
        return hit
    body = cute_jit(_body(fn, len(views_in), len(views_out), in_tree, passed, static))
    stream = make_fake_stream(use_tvm_ffi_env_stream=tvm_ffi)
    fakes = [v.fake() for v in views_in + views_out]
    options = {"options": "--enable-tvm-ffi"} if tvm_ffi else {}
    compiled, ffi, target = cute_compile(body, stream, *fakes, **options), None, None
    if tvm_ffi:
        # the TVM FFI function is the FFI target's handler; its compiled function serves a host-only call
        ffi, compiled = compiled, compiled.compiled
        if compiled.launches:
            digest = hashlib.sha256(repr(key[1:]).encode()).hexdigest()[:16]
            target = f"{_TARGET_PREFIX}{getattr(fn, '__name__', 'fn')}_{digest}"
            if target in _targets:  # the same name from another function object of the same name: keep both
                target = f"{target}_{len(_targets)}"
            _jax_tvm_ffi().register_ffi_target(target, ffi.__tvm_ffi_object__(), ["args", "rets"], platform="gpu",
                                               allow_cuda_graph=cuda_graph)
            _targets.append(target)
    out = _Compiled(compiled, ffi, target, views_in, views_out)
    _compiled[key] = out
    return out


def _host_call(entry: _Compiled, aliases: dict):
    """The JAX host callback of a function that launches no kernel (its host code prints, computes layouts), and
    of any in a compile-only run: the arrays as host tensors, outputs in fresh aligned buffers (an aliased output
    starts as its input)."""
    def run(*arrays):
        ins = [np.ascontiguousarray(a) for a in arrays]
        ins = [x if x.ctypes.data % v.align == 0 else _aligned_copy(x, v.align) for x, v in zip(ins, entry.views_in)]
        outs = []
        for k, v in enumerate(entry.views_out):
            src = next((ins[i] for i, o in aliases.items() if o == k), None)
            buf = aligned_empty(tuple(int(d) for d in v.shape), np.dtype(_np_dtype(v)), v.align)
            if src is not None:
                buf[...] = src
            outs.append(buf)
        entry.compiled(0, *[v.host(x) for v, x in zip(entry.views_in, ins)],
                       *[v.host(x) for v, x in zip(entry.views_out, outs)])
        return tuple(outs)
    return run


def _aligned_copy(x, align):
    buf = aligned_empty(x.shape, x.dtype, align)
    buf[...] = x
    return buf


def _np_dtype(view):
    return cutlass_to_jax_dtype(view.dtype)


class CutlassCall:
    """What cutlass_call returns: called with JAX arrays (a tree of them), it runs the compiled function on them
    and returns its outputs (one array, or a tuple as output_shape_dtype is one)."""

    def __init__(self, fn, output_shape_dtype, input_spec, output_spec, input_output_aliases, use_static_tensors,
                 allow_cuda_graph, static):
        if not callable(fn):
            raise DSLTypeError(f"cutlass_call: the function must be callable, got {fn!r}", user_location())
        self.fn = fn
        self.single = not isinstance(output_shape_dtype, (tuple, list))
        self.outputs = [output_shape_dtype] if self.single else list(output_shape_dtype)
        for o in self.outputs:
            if not hasattr(o, "shape") or not hasattr(o, "dtype"):
                raise DSLTypeError(f"cutlass_call: output_shape_dtype must be a jax.ShapeDtypeStruct (or an array), "
                                   f"or a tuple of them, got {o!r}", user_location())
        self.input_spec = input_spec
        self.output_spec = specs_for(output_spec, len(self.outputs), "output_spec")
        self.aliases = dict(input_output_aliases or {})
        for i, o in self.aliases.items():
            if not (isinstance(o, int) and 0 <= o < len(self.outputs)):
                raise DSLValueError(f"cutlass_call: input_output_aliases maps input {i} to output {o}, but there are "
                                    f"{len(self.outputs)} outputs", user_location())
        self.use_static = bool(use_static_tensors)
        self.allow_cuda_graph = allow_cuda_graph
        self.static = static

    def __call__(self, *args):
        flat, in_tree = jax.tree_util.tree_flatten(args)
        for i, x in enumerate(flat):
            if not hasattr(x, "shape") or not hasattr(x, "dtype"):
                raise DSLTypeError(f"cutlass_call: input {i} must be a JAX array, got {type(x).__name__}",
                                   user_location())
        for i, o in self.aliases.items():
            if not (isinstance(i, int) and 0 <= i < len(flat)):
                raise DSLValueError(f"cutlass_call: input_output_aliases names input {i}, but the call has "
                                    f"{len(flat)} inputs", user_location())
            x, y = flat[i], self.outputs[o]
            if tuple(x.shape) != tuple(y.shape) or np.dtype(x.dtype) != np.dtype(y.dtype):
                raise DSLValueError(f"cutlass_call: input {i} ({x.shape}, {x.dtype}) aliases output {o} "
                                    f"({y.shape}, {y.dtype}): they must agree", user_location())
        in_specs = specs_for(self.input_spec, len(flat), "input_spec")
        views_in = [ArrayView(x.shape, x.dtype, s, self.use_static, f"input {i}")
                    for i, (x, s) in enumerate(zip(flat, in_specs))]
        views_out = [ArrayView(o.shape, o.dtype, s, self.use_static, f"output {k}")
                     for k, (o, s) in enumerate(zip(self.outputs, self.output_spec))]
        session = compile_only.current()
        result_types = tuple(jax.ShapeDtypeStruct(o.shape, o.dtype) for o in self.outputs)
        # a run compiles the TVM FFI entry too (XLA's handler of a launching function); a compile-only one needs
        # neither it nor a C compiler
        entry = _compile(self.fn, views_in, views_out, in_tree, self.aliases, self.static, tvm_ffi=session is None,
                         cuda_graph=self.allow_cuda_graph)
        if entry.compiled.launches and session is not None:
            session.launch_reached(entry.compiled)  # ends the program, or (on_launch="skip") goes on without it
        if entry.target is None:
            outs = jax.pure_callback(_host_call(entry, self.aliases), result_types, *flat,
                                     vmap_method="sequential")
        else:
            outs = jax.ffi.ffi_call(entry.target, result_types, vmap_method="broadcast_all",
                                    input_output_aliases=self.aliases or None)(*flat)
        outs = tuple(outs)
        return outs[0] if self.single else outs


def cutlass_call(fn, *, output_shape_dtype, input_spec=None, output_spec=None, input_output_aliases=None,
                 use_static_tensors: bool = False, allow_cuda_graph: bool = False, **static):
    """A JAX operation calling `fn(stream, *inputs, *outputs, **static)` (a @cute.jit function, or any function
    that calls one) on JAX arrays: see the module's description. allow_cuda_graph lets XLA capture the call into
    its CUDA graphs; off by default, because the entry loads its kernels' module at its first call, which a
    capture under way may refuse (turn it on for a function already called once outside a capture)."""
    return CutlassCall(fn, output_shape_dtype, input_spec, output_spec, input_output_aliases, use_static_tensors,
                       allow_cuda_graph, static)


class _RegisteredTargets:
    """jax.export's disabled_checks for cutlass_call's targets: read when the export checks the computation, after
    tracing registered the targets it uses."""

    def __iter__(self):
        return iter([jax.export.DisabledSafetyCheck.custom_call(t) for t in _targets])

    def __len__(self):
        return len(_targets)

    def __repr__(self):
        return f"cutlass_call targets {list(_targets)}"


def get_export_disabled_safety_checks():
    """The disabled_checks that let jax.export keep cutlass_call's custom calls (the targets of this process)."""
    return _RegisteredTargets()
