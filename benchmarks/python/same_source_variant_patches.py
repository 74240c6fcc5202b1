"""Named variants of warpweave's code generation and launch, made from outside: each replaces, in the running
process, a piece of warpweave's Python (a module attribute, or one function's source with one expression changed)
or sets the environment a compile reads, so that one build can be timed against itself with one change undone or
tried (same_source_variants.py applies them in the program's process before the program runs). Nothing here is a
setting of warpweave: the patches reach into its internals and fail loudly (VariantError) when the code they
change is no longer there.

`applied(names)` is a context manager that applies the variants and undoes them on exit; `apply(names)` applies
them for good (a process that runs one program). `hits(name)` counts the times a variant's patched code was
reached since it was applied (0 after a run: the variant changed nothing in that program).

The variants undoing a change since commit 10af8d9 (a Hopper GEMM's speed next to CuTe DSL's fell after it):
  l2_promotion_none            540066c: tiled tensor maps promote L2 fetches to 128-byte lines (back to none)
  cluster_1x1_declared         cc415d8: a cluster of one block is not compiled into the kernel (back to declared)
  barrier_loops_unannotated    025795d: runtime loops that wait at a block barrier keep no-unroll (back to none)
  lane_idx_from_tid            2a51afb: lane_idx reads the lane register (back to the x index modulo 32)
  mbarrier_wait_divergent      4d4daed: the mbarrier wait loop's back-edge is uniform (back to a plain branch)
  before_10af8d9_python        all five above
Not reachable from Python (C++ passes of core/compiler, run for every optimised compile, no switch):
shared_constant_addresses.cpp, role_values_kept.cpp, sunk_vector_extracts.cpp.
The host side of a call:
  python_call_path             no native fast path: every call of a compiled function the general Python way (the
                               persistent GEMMs' calls went so until the native path computed shifts and bit counts)
Variants trying what CuTe DSL does differently:
  cutedsl_random_fill          the programs' random test data drawn in [min_val, max_val) as CuTe DSL's cutlass.torch
                               draws it (ours includes max_val: -2..2 where CuTe DSL's are -2..1)
  l2_promotion_64B, l2_promotion_256B  other L2 promotions of the tiled tensor maps
  tma_cache_hint_zero          TMA loads and stores carry an L2 cache policy of 0 (.L2::cache_hint), as CuTe DSL's
  runtime_loops_unroll_2/_4    runtime loops that the program leaves to the compiler are traced 2 or 4 trips to a
                               loop trip (CuTe DSL's compiler unrolled the persistent GEMMs' producer loop 4 times and
                               the mainloop 2; ours keeps them rolled)
  cubin_ptxas                  the cubin made by the machine's ptxas instead of the PTX compiler library
  cubin_ptxas@DIR              ... by the ptxas in folder DIR (e.g. CUDA 12.9's, the assembler of CuTe DSL 4.8.1)
"""
from __future__ import annotations

import __future__
import contextlib
import importlib
import inspect
import os
import re
import site
import sys
import textwrap


class VariantError(RuntimeError):
    """A variant's name is unknown, or the code it patches has changed."""


_HITS: dict[str, int] = {}
_UNDO: list = []


def hits(name: str) -> int:
    return _HITS.get(name, 0)


def _hit(name: str) -> None:
    _HITS[name] = _HITS.get(name, 0) + 1


def _module(name: str):
    if name.startswith("warpweave.backends."):
        from warpweave._dsl.registry.plugins import registry
        registry.load()  # mounts the backends' Python packages under warpweave.backends
    return importlib.import_module(name)


def _set(obj, attr: str, value) -> None:
    if not hasattr(obj, attr):
        raise VariantError(f"{getattr(obj, '__name__', obj)} has no attribute {attr} any more")
    _UNDO.append((obj, attr, getattr(obj, attr)))
    setattr(obj, attr, value)


def _set_env(key: str, value: str) -> None:
    _UNDO.append((os.environ, key, os.environ.get(key)))
    os.environ[key] = value


def _rewrite(module, name: str, old: str, new: str, variant: str) -> None:
    """Replaces function `name` of `module` by its source with `old` (which must occur once) replaced by `new`,
    compiled in the module's namespace. `new` may call `_variant_hit()` to count the times it is reached."""
    fn = getattr(module, name)
    src = textwrap.dedent(inspect.getsource(fn))
    if src.count(old) != 1:
        raise VariantError(f"{variant}: {module.__name__}.{name} no longer contains {old!r} once")
    # the counter as a name of the module (removed on undo), so that the new function's globals are the module's
    _UNDO.append((module, "_variant_hit", None))
    module._variant_hit = lambda: _hit(variant)
    made: dict = {}
    # at the function's own lines of its file (a traceback through it reads right), annotations left unevaluated
    code = compile("\n" * (fn.__code__.co_firstlineno - 1) + src.replace(old, new),
                   inspect.getsourcefile(fn) or "<variant>", "exec", flags=__future__.annotations.compiler_flag,
                   dont_inherit=True)
    exec(code, vars(module), made)
    _set(module, name, made[name])


# --- the variants ----------------------------------------------------------------------------------------------

def _l2_promotion(value):
    def apply(variant):
        tma = _module("warpweave.backends.hopper.tma")
        if tma.L2_PROMOTION not in ("none", "64B", "128B", "256B"):
            raise VariantError(f"{variant}: tma.L2_PROMOTION is {tma.L2_PROMOTION!r}, not a promotion name")
        _set(tma, "L2_PROMOTION", value)
        host_argument = tma.ext.host_argument

        def counted(*a, **k):  # a tensor map's host argument made with the promotion
            if k.get("l2_promotion") == value:
                _hit(variant)
            return host_argument(*a, **k)
        _set(tma.ext, "host_argument", counted)
    return apply


def _cluster_1x1_declared(variant):
    kt = _module("warpweave._dsl.host.kernel_trace")
    _rewrite(kt, "trace_kernel", "and cluster[0] * cluster[1] * cluster[2] > 1:",
             "and (cluster[0] * cluster[1] * cluster[2] > 1 or _variant_hit() or True):", variant)


def _barrier_loops_unannotated(variant):
    loops = _module("warpweave._dsl.tracing.loops")
    original = loops.rolled_if_synchronised

    def unannotated(attributes, waits_before):
        if original(attributes, waits_before) != attributes:
            _hit(variant)
        return attributes
    _set(loops, "rolled_if_synchronised", unannotated)


def _runtime_loops_unrolled(n):
    """Runtime loops (`for i in range(...)` with bounds known only at run time, a positive static step, no
    unroll= of the program's) of a kernel traced as a loop whose body holds n trips, then a loop of the trips left.
    An unroll annotation would not do: the compiler does not unroll a loop of runtime trip count whose body holds
    inline assembly (convergent calls) - the annotation was tried and left the PTX unchanged."""
    def apply(variant):
        loops = _module("warpweave._dsl.tracing.loops")
        cf = _module("warpweave._dsl.tracing.control_flow")  # the helper module rewritten programs call
        trace = _module("warpweave._dsl.base.trace")
        original = cf.for_range

        def for_range(body, range_args, names, values, lineno, unroll=None, unroll_full=False, **kw):
            start, stop, step = loops._range_bounds(range_args)
            if (unroll is not None or unroll_full or trace.current().kernel is None
                    or all(loops.is_static(x) for x in (start, stop, step)) or not loops.is_static(step)
                    or loops.static_value(step) <= 0 or any(isinstance(x, loops.Int64) for x in (start, stop))):
                return original(body, range_args, names, values, lineno, unroll=unroll, unroll_full=unroll_full,
                                **kw)
            _hit(variant)
            k = loops.static_value(step)
            start, stop = loops.Int32(start), loops.Int32(stop)
            trips = (stop - start + (k - 1)) // k
            trips = loops.select(trips > 0, trips, loops.Int32(0))
            middle = start + (trips // n) * (n * k)

            def unrolled(iv, *vals):
                for j in range(n):
                    vals = body(iv + j * k, *vals)
                return vals
            vals = original(unrolled, (start, middle, n * k), names, values, lineno, **kw)
            return original(body, (middle, stop, k), names, vals, lineno, **kw)
        _set(cf, "for_range", for_range)
    return apply


def _lane_idx_from_tid(variant):
    arch = _module("warpweave._dsl.device.arch")

    def lane_idx():
        _hit(variant)
        return arch.thread_idx()[0] % 32
    # every name it is reached by: the device module, cute.arch (cutlass.cute.arch under the alias), and the
    # wrappers that re-export it
    for name in ("warpweave._dsl.device.arch", "warpweave.cute.arch", "warpweave.cute.arch.nvvm_wrappers"):
        _set(_module(name), "lane_idx", lane_idx)


def _template_rewrite(variant, change):
    """Wraps the instruction emitter's template substitution: `change(text)` returns the text to emit, or None to
    keep it."""
    ins = _module("warpweave._dsl.atoms.instructions")
    substitute = ins._substitute

    def rewritten(template, entry, attrs):
        text = substitute(template, entry, attrs)
        new = change(text)
        if new is None:
            return text
        _hit(variant)
        return new
    _set(ins, "_substitute", rewritten)


def _mbarrier_wait_divergent(variant):
    _template_rewrite(variant, lambda t: t.replace("@!ww_done bra.uni ww_wait;", "@!ww_done bra ww_wait;")
                      if "mbarrier.try_wait" in t and "bra.uni ww_wait" in t else None)


_TMA = re.compile(r"(cp\.async\.bulk\.tensor\.\d+d\.\S+)(\s[^;]*);")
_POLICY = ".reg .b64 ww_policy; "


def _with_cache_hint(text: str):
    """A TMA load's or store's text (alone, or in a { } block: the multicast loads') with an L2 cache policy of 0
    (.L2::cache_hint and its operand), as CuTe DSL's PTX has it; None for other text. The policy's register is
    declared first in the block, before the block's other declarations and instructions."""
    m = _TMA.search(text)
    if m is None or "cache_hint" in m.group(1):
        return None
    body = (text[:m.start()] + f"mov.b64 ww_policy, 0; {m.group(1)}.L2::cache_hint{m.group(2)}, ww_policy;"
            + text[m.end():]).strip()
    return "{ " + _POLICY + body[1:].lstrip() if body.startswith("{") else "{ " + _POLICY + body + " }"


def _tma_cache_hint_zero(variant):
    _template_rewrite(variant, _with_cache_hint)


def _cutedsl_random_fill(variant):
    """The programs' random test data as CuTe DSL's cutlass.torch draws it: integers in [min_val, max_val), the
    upper bound left out (observed: its default RandomInitConfig(-2, 2) gives -2, -1, 0 and 1; ours also 2). The
    data a GEMM multiplies sets the power it draws, and with it the clock a power-limited GPU runs at."""
    wt = _module("warpweave.torch")
    fill = wt._fill

    def cutedsl_fill(t, init_type, init_config):
        if init_type is wt.TensorInitType.RANDOM:
            cfg = init_config or wt.RandomInitConfig()
            if cfg.max_val > cfg.min_val:
                _hit(variant)
                init_config = wt.RandomInitConfig(min_val=cfg.min_val, max_val=cfg.max_val - 1)
        return fill(t, init_type, init_config)
    _set(wt, "_fill", cutedsl_fill)


def _python_call_path(variant):
    """Every call of a compiled function the general Python way: the native fast path never built (as before the
    native path computed shifts and bit counts, which the persistent GEMMs' tile schedulers' divisors need at each
    call; those calls then took 85 to 140 us of the host each on a 2-core host)."""
    nc = _module("warpweave._dsl.call.native_call")

    def no_native(*a, **k):
        _hit(variant)
        return None
    _set(nc, "build", no_native)


def _cubin_ptxas(directory=None):
    def apply(variant):
        _set_env("WARPWEAVE_CUBIN_TOOL", "ptxas")
        _hit(variant)
        if directory is None:
            return
        if not os.path.isfile(os.path.join(directory, "ptxas")):
            raise VariantError(f"{variant}: no ptxas in {directory}")
        _set_env("PATH", directory + os.pathsep + os.environ.get("PATH", ""))
        from warpweave import _core
        # The core's search folders (warpweave/__init__.py sets them from this interpreter's prefix and
        # site-packages) come before PATH: the folder goes first.
        dirs = [os.path.join(sys.prefix, "bin")] + list(site.getsitepackages()) + [site.getusersitepackages()]
        _core.set_search_dirs([directory] + [d for d in dirs if os.path.isdir(d)])
        _UNDO.append((_core, None, dirs))
    return apply


BEFORE_10AF8D9 = ("l2_promotion_none", "cluster_1x1_declared", "barrier_loops_unannotated", "lane_idx_from_tid",
                  "mbarrier_wait_divergent")

VARIANTS = {
    "baseline": ("the build as it is", lambda v: None),
    "l2_promotion_none": ("tiled tensor maps without L2 promotion (before 540066c)", _l2_promotion("none")),
    "l2_promotion_64B": ("tiled tensor maps promoting L2 fetches to 64 bytes", _l2_promotion("64B")),
    "l2_promotion_256B": ("tiled tensor maps promoting L2 fetches to 256 bytes", _l2_promotion("256B")),
    "cluster_1x1_declared": ("a one-block cluster compiled into the kernel (before cc415d8)", _cluster_1x1_declared),
    "barrier_loops_unannotated": ("runtime loops waiting at a block barrier left to the compiler's unrolling "
                                  "(before 025795d)", _barrier_loops_unannotated),
    "lane_idx_from_tid": ("lane_idx as the x index modulo 32 (before 2a51afb)", _lane_idx_from_tid),
    "mbarrier_wait_divergent": ("the mbarrier wait loop's back-edge a plain branch (before 4d4daed)",
                                _mbarrier_wait_divergent),
    "before_10af8d9_python": ("the five variants above together", None),
    "python_call_path": ("every call the general Python way (no native fast path)", _python_call_path),
    "cutedsl_random_fill": ("the programs' random data drawn as CuTe DSL's cutlass.torch draws it (upper bound left "
                            "out)", _cutedsl_random_fill),
    "tma_cache_hint_zero": ("TMA loads and stores with an L2 cache policy of 0, as CuTe DSL's",
                            _tma_cache_hint_zero),
    "runtime_loops_unroll_2": ("runtime loops left to the compiler unrolled 2 times", _runtime_loops_unrolled(2)),
    "runtime_loops_unroll_4": ("runtime loops left to the compiler unrolled 4 times", _runtime_loops_unrolled(4)),
    "cubin_ptxas": ("the cubin by the machine's ptxas (WARPWEAVE_CUBIN_TOOL=ptxas)", _cubin_ptxas()),
}


def parse(spec: str) -> list[str]:
    """The variant names of a comma-separated list ('all': every variant of VARIANTS; cubin_ptxas@DIR names a
    folder), checked."""
    names = []
    for name in (s.strip() for s in spec.split(",")):
        if not name:
            continue
        if name == "all":
            names += [n for n in VARIANTS if n not in names]
            continue
        base = name.split("@", 1)[0]
        if base not in VARIANTS or ("@" in name and base != "cubin_ptxas"):
            raise VariantError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}, cubin_ptxas@DIR")
        if name not in names:
            names.append(name)
    return names


def _expand(names) -> list[str]:
    out = []
    for name in names:
        for n in (BEFORE_10AF8D9 if name == "before_10af8d9_python" else (name,)):
            if n not in out:
                out.append(n)
    return out


def apply(names) -> None:
    """Applies the variants (a list of names, or one name; combinations patch in the order given)."""
    for name in _expand([names] if isinstance(names, str) else list(names)):
        if "@" in name:
            _cubin_ptxas(name.split("@", 1)[1])(name)
            continue
        if name not in VARIANTS:
            raise VariantError(f"unknown variant {name!r}")
        VARIANTS[name][1](name)


def undo() -> None:
    while _UNDO:
        obj, attr, old = _UNDO.pop()
        if obj is os.environ:
            if old is None:
                os.environ.pop(attr, None)
            else:
                os.environ[attr] = old
        elif attr is None:  # the core's search folders
            obj.set_search_dirs([d for d in old if os.path.isdir(d)])
        elif old is None and attr == "_variant_hit":
            delattr(obj, attr)
        else:
            setattr(obj, attr, old)


@contextlib.contextmanager
def applied(names):
    """The variants applied for the block, undone after it (hit counts reset on entry)."""
    _HITS.clear()
    try:
        apply(names)
        yield
    finally:
        undo()
