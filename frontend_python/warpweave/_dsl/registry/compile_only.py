"""Compile-only runs: a program's kernels are compiled (for WARPWEAVE_ARCH, no GPU needed), and the calls that
would launch them are not made.

What changes inside `compile_only()`:
- A call of a compiled function that launches kernels is not made. With on_launch="stop" the program ends there
  (LaunchSkipped, a BaseException so that a program's `except Exception` does not swallow it); with "skip" the
  call returns None and the program goes on (what it computes from the kernels' results is then meaningless,
  so this is for notebooks and drivers that only compile). warpweave's own functions that launch (the element
  conversion of cute.testing.convert and cutlass.torch.convert_cute_tensor, which prepare a program's data)
  only skip their launches: the program goes on to its own kernels. Compiled functions that launch no kernel (host-only
  @cute.jit functions, e.g. printing layouts) run as usual.
- PyTorch, when installed, makes "cuda" tensors in host memory: factory functions and `.to()`/`.cuda()` given a
  CUDA device get the CPU instead, `torch.cuda.is_available()` is True, `current_stream()` is a stream whose
  handle is 0 (so is that of a new `torch.cuda.Stream()`), `synchronize()` does nothing, pinned host memory
  (`pin_memory=True`, `.pin_memory()`) is ordinary host memory, and
  `get_device_capability()` / `get_device_properties()` describe the stand-in device of the target (below), so
  that programs choosing their kernels by the device choose those of the target compiled for. Multi-GPU programs
  (torchrun's) run as one rank of a world of ranks (compile_only_world.py: torch.distributed, symmetric memory). CUDA graphs capture
  and replay nothing (the launches in them are not made), and events measure nothing (elapsed_time is NaN). Such tensors have real addresses, shapes, strides and dtypes,
  which is all that compiling needs; their storage begins CUDA-aligned, and a large random one repeats a block of
  its generator's values (host_factories.py: drawing every element cost GEMM tests seconds each).
- Where cuda-bindings is installed but no CUDA driver can be loaded, `cuda.bindings.driver.cuInit` succeeds and
  `cuDeviceGetCount` reports one device (the stand-in below), as programs check both before compiling anything;
  `cuda.bindings.runtime`'s cudaMalloc gives host memory (cudaMemset, cudaMemcpy and cudaFree work on it), as
  torch's CUDA tensors are made in host memory.
- Where jax-tvm-ffi is installed but no CUDA driver can be loaded, JAX cannot run a target registered for the GPU
  (`jax_tvm_ffi.register_ffi_target(..., platform="gpu")`): `jax.ffi.ffi_call` of one is the call of the function
  registered, which goes to the session (its launches are not made) at the user's line.
- A PyTorch operation with no CPU kernel (a CUDA-only one: the grouped GEMM of a program's reference result) is
  answered from its meta kernel: results of the right shapes, strides and dtypes, filled with NaN, so that no check
  of them can pass; the run prints where, and its summary counts them as host results not computed
  (host_ops_on_meta.py).
- `cutlass.cuda.initialize_cuda_context()` does nothing, and `testing.benchmark` measures nothing (NaN).
- Where no GPU is present, `utils.HardwareInfo()` describes a stand-in device of the target (stand_in_device):
  its compute capability and shared memory per block from the target's manifest entry, cluster launch where the
  target has clusters, and WARPWEAVE_COMPILE_ONLY_SMS multiprocessors (default 132, as the H100 SXM and H200
  have) with WARPWEAVE_COMPILE_ONLY_L2_BYTES of L2 (default 50 MiB). Programs size persistent grids by it; the
  kernels' code does not depend on it.

Nothing of this is active outside the context, and warpweave never enters it by itself.
"""
from __future__ import annotations

import contextlib
import importlib.util
import itertools
import os
import sys

from ... import _core
from ..base.entry_name import function_name
from ..base.errors import user_location
from . import host_ops_on_meta
from .host_factories import CUDA_ALLOCATION_ALIGNMENT, aligned_home, fill_kind, make_on_host
from .compile_only_world import emulated_world, env_positive_int
from .plugins import registry
from .target import select_target


class LaunchSkipped(BaseException):
    """A compile-only run reached a call that would launch kernels (on_launch="stop")."""


class Session:
    def __init__(self, on_launch: str):
        if on_launch not in ("stop", "skip"):
            raise ValueError(f"on_launch must be 'stop' or 'skip', got {on_launch!r}")
        self.on_launch = on_launch
        self.compiled = []   # JitCompiledFunction, in compilation order
        self.skipped = []    # (function name, "file:line") of each call not made
        self.not_computed = []  # (operation, [(shape, dtype)], "file:line") answered without values

    def note_compiled(self, compiled) -> None:
        self.compiled.append(compiled)

    def launch_reached(self, compiled):
        fn = compiled.jit_function.fn
        if (getattr(fn, "__module__", "") or "").split(".")[0] == "warpweave":
            # A launch of warpweave's own (the element conversion behind cute.testing.convert and
            # cutlass.torch.convert_cute_tensor) prepares the program's data, it is not one of the program's kernels:
            # it is not made (nor counted among the program's calls), and the program goes on to compile its own.
            return None
        return self.call_reached(compiled.jit_function.fn.__name__, [l.kernel for l in compiled.launches], "compiled",
                                 user_location(3))

    def call_reached(self, name: str, kernels, what: str = "compiled", loc=None):
        """A call of `name` (a compiled function, or an exported one loaded back) that would launch kernels."""
        loc = loc or user_location(3)
        where = f"{loc[0]}:{loc[1]}" if loc else "?"
        self.skipped.append((name, where))
        kernels = [function_name(k) for k in kernels]
        msg = (f"compile-only: the call of the {what} {name} at {where} would launch "
               f"{', '.join(kernels) if kernels else 'its kernels'}; not made")
        if self.on_launch == "stop":
            raise LaunchSkipped(msg + " (the program ends here)")
        print(f"[warpweave run] {msg}")
        return None

    def note_not_computed(self, op: str, results, loc) -> None:
        """A host operation answered by shapes alone (host_ops_on_meta.py): its results are NaN."""
        where = f"{loc[0]}:{loc[1]}" if loc else "?"
        self.not_computed.append((op, results, where))
        shapes = ", ".join(f"{d}{list(s)}" for s, d in results)
        print(f"[warpweave run] compile-only: {op} at {where} has no CPU kernel; its result ({shapes}) has the "
              "right shape and dtype but is NaN: not computed")

    def summary(self) -> str:
        lines = [f"[warpweave run] compile-only: {len(self.compiled)} compiled function(s), "
                 f"{len(self.skipped)} launching call(s) not made"
                 + (f", {len(self.not_computed)} host result(s) not computed (NaN)" if self.not_computed else "")]
        for c in self.compiled:
            # dynamic shared memory where the launch fixes it when compiled (what a resource comparison needs)
            kernels = ", ".join(function_name(l.kernel)
                                + (f" ({l.smem} bytes dynamic shared memory)" if isinstance(l.smem, int) else "")
                                for l in c.launches) or "no kernel (host only)"
            size = f", cubin {len(c.cubin)} bytes" if c.cubin else ""
            lines.append(f"  {c.jit_function.fn.__name__} for {c.target['name']}: {kernels}{size}")
        for op, _, where in self.not_computed:
            lines.append(f"  not computed (no CPU kernel; NaN of the right shape): {op} at {where}")
        return "\n".join(lines)


_session: Session | None = None

STAND_IN_SMS = 132
STAND_IN_L2_BYTES = 50 * 1024 * 1024


def stand_in_device() -> dict:
    """What HardwareInfo reports in a compile-only run without a GPU: a device of the target being compiled for
    (the keys of the driver's device_info)."""
    t = select_target()
    registry.load()
    entry = next((x for b in registry.backends.values() for x in b.manifest.get("targets", [])
                  if x.get("name") == t.name), {})

    env_int = env_positive_int

    return {"name": f"compile-only stand-in for {t.name}",
            "compute_capability": (t.compute_capability // 10, t.compute_capability % 10),
            "multiprocessor_count": env_int("WARPWEAVE_COMPILE_ONLY_SMS", STAND_IN_SMS),
            "l2_cache_size": env_int("WARPWEAVE_COMPILE_ONLY_L2_BYTES", STAND_IN_L2_BYTES),
            "max_shared_memory_per_block_optin": int(entry.get("smem_capacity_bytes", 0) or 0),
            "cluster_launch": int(entry.get("max_cluster_size", 1) or 1) > 1}


def current() -> Session | None:
    """The compile-only session in force, or None."""
    return _session


@contextlib.contextmanager
def compile_only(on_launch: str = "stop"):
    global _session
    if _session is not None:
        raise RuntimeError("compile_only() is already active")
    session = Session(on_launch)
    _session = session
    with contextlib.ExitStack() as stack:
        if importlib.util.find_spec("torch") is not None:
            stack.enter_context(_torch_on_host(session))
            stack.enter_context(emulated_world())
        if _driver_bindings_without_driver():
            stack.enter_context(_driver_stand_ins())
        if _jax_tvm_ffi_without_driver():
            _when_imported(("jax", "jax_tvm_ffi"), stack,
                           lambda: stack.enter_context(_jax_gpu_targets(session)))
        try:
            yield session
        finally:
            _session = None


# --- PyTorch's CUDA device made of host memory -----------------------------------------------------------------

class _HostEvent:
    """torch.cuda.Event in a compile-only run: nothing ran, so nothing is timed. Its handle (cuda_event) is one
    no driver gave: it only travels to launch attributes of launches that are not made."""
    _handles = itertools.count(0x1000)

    def __init__(self, *args, **kwargs):
        self.cuda_event = next(self._handles)

    def record(self, stream=None):
        pass

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass

    def query(self):
        return True

    def elapsed_time(self, end):
        return float("nan")


class _HostGraph:
    """torch.cuda.CUDAGraph in a compile-only run: the launches captured are not made, so there is nothing to
    replay."""

    def __init__(self, *args, **kwargs):
        pass

    def capture_begin(self, *args, **kwargs):
        pass

    def capture_end(self):
        pass

    def replay(self):
        pass

    def reset(self):
        pass


@contextlib.contextmanager
def _host_graph_capture(graph, *args, **kwargs):
    yield graph


class _HostDeviceProperties:
    """torch.cuda.get_device_properties() in a compile-only run: the stand-in device of the target (programs pick
    code paths by its compute capability and size grids by its multiprocessors)."""

    def __init__(self, info: dict):
        self.name = info["name"]
        self.major, self.minor = info["compute_capability"]
        self.multi_processor_count = info["multiprocessor_count"]
        self.L2_cache_size = info["l2_cache_size"]
        self.shared_memory_per_block_optin = info["max_shared_memory_per_block_optin"]
        self.total_memory = 0

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"multi_processor_count={self.multi_processor_count})")


class _HostStream:
    """torch.cuda.current_stream() in a compile-only run: the default stream's handle, 0."""
    cuda_stream = 0
    device = "cuda:0"

    def synchronize(self):
        pass

    def wait_stream(self, other):
        pass


def _is_cuda(d) -> bool:
    import torch

    if isinstance(d, torch.device):
        return d.type == "cuda"
    if isinstance(d, str):
        return d == "cuda" or d.startswith("cuda:")
    return False


def _cuda_aligned(torch, t):
    """t itself when its storage starts CUDA-aligned, else the same tensor (shape, strides, offset, bytes) in a
    storage that does. Bytes are copied, not values: any dtype, packed fp4 included."""
    if not isinstance(t, torch.Tensor) or t.device.type != "cpu":
        return t
    storage, esize = t.untyped_storage(), t.element_size()
    if (t.data_ptr() - t.storage_offset() * esize) % CUDA_ALLOCATION_ALIGNMENT == 0:
        return t
    # a storage that begins at the aligned address, so that the tensor's storage offset stays what it was
    home = aligned_home(torch, storage.nbytes())
    home.copy_(torch.empty(0, dtype=torch.uint8).set_(storage))
    moved = torch.empty(0, dtype=t.dtype).set_(home.untyped_storage(), t.storage_offset(), t.shape, t.stride())
    # a leaf made with requires_grad=True (torch.tensor(..., requires_grad=True, device="cuda")) still requires it
    return moved.requires_grad_(True) if t.requires_grad else moved


@contextlib.contextmanager
def _torch_on_host(session):
    import torch
    from torch.overrides import TorchFunctionMode

    class HostForCuda(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if func is torch.Tensor.cuda:
                return _cuda_aligned(torch, args[0])
            # Page-locked host memory is the driver's to give: without one, host memory is what there is (the
            # staging buffers programs pin for copies to the device hold host tensors as any other).
            if func is torch.Tensor.pin_memory:
                return args[0]
            if kwargs.get("pin_memory"):
                kwargs["pin_memory"] = False
            was_cuda = "device" in kwargs and _is_cuda(kwargs["device"])
            if was_cuda:
                kwargs["device"] = "cpu"
                kind = fill_kind(torch, func)
                if kind is not None:  # made in aligned storage, large random ones cheaply (host_factories.py)
                    made = make_on_host(torch, kind, args, kwargs)
                    if made is not None:
                        return made
            if func is torch.Tensor.to:
                was_cuda = was_cuda or any(_is_cuda(a) for a in args)
                args = tuple("cpu" if _is_cuda(a) else a for a in args)
            try:
                out = func(*args, **kwargs)  # the mode is not active inside its own handler
            except NotImplementedError as e:
                if not host_ops_on_meta.lacks_cpu_kernel(e):
                    raise
                return host_ops_on_meta.answer_on_meta(torch, func, args, kwargs, e, session, _cuda_aligned)
            return _cuda_aligned(torch, out) if was_cuda else out

    patches = {"is_available": lambda: True, "device_count": lambda: 1, "current_device": lambda: 0,
               "get_device_properties": lambda device=None: _HostDeviceProperties(stand_in_device()),
               "get_device_capability": lambda device=None: stand_in_device()["compute_capability"],
               "get_device_name": lambda device=None: stand_in_device()["name"],
               "current_stream": lambda device=None: _HostStream(),
               "default_stream": lambda device=None: _HostStream(),
               "synchronize": lambda device=None: None, "init": lambda: None,
               "Stream": lambda *args, **kwargs: _HostStream(), "Event": _HostEvent, "CUDAGraph": _HostGraph,
               "graph": _host_graph_capture,
               # `with torch.cuda.stream(s):` runs its body on the one stream there is
               "stream": lambda stream=None: contextlib.nullcontext(stream), "set_stream": lambda stream: None}
    saved = {k: getattr(torch.cuda, k) for k in patches}
    for k, v in patches.items():
        setattr(torch.cuda, k, v)
    profile = _host_profiler(torch)
    try:
        with HostForCuda():
            yield
    finally:
        for k, v in saved.items():
            setattr(torch.cuda, k, v)
        torch.profiler.profile = profile


def _host_profiler(torch):
    """torch.profiler.profile without its CUDA activity (a program timing its kernels under the profiler, whose
    launches a compile-only run does not make; the device is the host's stand-in): what it profiles is the host's.
    Returns the class it stands in for."""
    tp = torch.profiler

    original = tp.profile

    class HostProfile(original):
        def __init__(self, *args, activities=None, **kwargs):
            if activities is not None:
                activities = [a for a in activities if a != tp.ProfilerActivity.CUDA] or [tp.ProfilerActivity.CPU]
            super().__init__(*args, activities=activities, **kwargs)

    tp.profile = HostProfile
    return original


# --- the driver API of cuda-bindings without a driver ------------------------------------------------------------

def _driver_bindings_without_driver() -> bool:
    try:
        if importlib.util.find_spec("cuda.bindings") is None:
            return False
    except (ImportError, ValueError):   # no "cuda" package, or one that is not a package
        return False
    return not _core.driver_available()


class _HostAllocations:
    """cudaMalloc's memory in a compile-only run: host memory (CUDA-aligned, as torch's stand-in tensors are), so
    that what a program writes there before its first launch (a barrier's zeroed word) and the pointers it makes of
    it are real. Buffers live until cudaFree."""

    def __init__(self):
        import ctypes

        self.ctypes = ctypes
        self.buffers: dict = {}

    def malloc(self, size):
        raw = self.ctypes.create_string_buffer(max(int(size), 1) + CUDA_ALLOCATION_ALIGNMENT)
        base = self.ctypes.addressof(raw)
        address = base + (-base % CUDA_ALLOCATION_ALIGNMENT)
        self.buffers[address] = raw
        return address

    def free(self, address) -> bool:
        return self.buffers.pop(int(address), None) is not None or int(address) == 0


@contextlib.contextmanager
def _driver_stand_ins():
    """cuInit and cuDeviceGetCount of cuda.bindings.driver answer as with one device; the real functions would
    raise (libcuda cannot be opened). cuda.bindings.runtime's cudaMalloc, cudaFree, cudaMemset, cudaMemcpy and
    cudaDeviceSynchronize work on host memory (_HostAllocations). Nothing else of the modules changes: a call that
    needs a device still fails."""
    import ctypes

    from cuda.bindings import driver, runtime

    ok, rok = driver.CUresult.CUDA_SUCCESS, runtime.cudaError_t.cudaSuccess
    invalid = runtime.cudaError_t.cudaErrorInvalidValue
    heap = _HostAllocations()

    def memset(ptr, value, count):
        ctypes.memset(int(ptr), int(value), int(count))
        return (rok,)

    def memcpy(dst, src, count, kind=None):
        ctypes.memmove(int(dst), int(src), int(count))
        return (rok,)

    patches = {driver: {"cuInit": lambda flags=0: (ok,), "cuDeviceGetCount": lambda: (ok, 1)},
               runtime: {"cudaMalloc": lambda size: (rok, heap.malloc(size)),
                         "cudaFree": lambda ptr: (rok if heap.free(ptr) else invalid,),
                         "cudaMemset": memset, "cudaMemcpy": memcpy,
                         "cudaDeviceSynchronize": lambda: (rok,)}}
    saved = {(m, k): getattr(m, k) for m, table in patches.items() for k in table}
    for m, table in patches.items():
        for k, v in table.items():
            setattr(m, k, v)
    try:
        yield
    finally:
        for (m, k), v in saved.items():
            setattr(m, k, v)


# --- JAX's FFI targets for the GPU without a GPU -------------------------------------------------------------------

def _jax_tvm_ffi_without_driver() -> bool:
    return importlib.util.find_spec("jax_tvm_ffi") is not None and not _core.driver_available()


class _AfterImport:
    """A finder that runs `then` once, when the first of `names` has been imported (its module executed). It finds
    nothing itself: the module's own loader loads it, its exec_module wrapped for that one call. Protocol methods
    only, as backend_python's finder: importlib.abc would bring importlib.resources into every process."""

    def __init__(self, names, then):
        self.names, self.then, self.busy, self.done = frozenset(names), then, False, False

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.names or self.busy or self.done:
            return None
        self.busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self.busy = False
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module):
            del loader.exec_module   # the loader's own method again
            run(module)
            if not self.done:
                self.done = True
                self.then()

        loader.exec_module = exec_module
        return spec


def _when_imported(names, stack: contextlib.ExitStack, then) -> None:
    """then() now if one of `names` is imported, else once the program imports one, while `stack` is open. A
    program that imports none of them does not pay for importing them (JAX takes ~1.5 s, and installs an audit
    hook and a collector callback that then slow every trace of the run)."""
    if any(n in sys.modules for n in names):
        then()
        return
    finder = _AfterImport(names, then)
    sys.meta_path.insert(0, finder)
    stack.callback(lambda: finder in sys.meta_path and sys.meta_path.remove(finder))


@contextlib.contextmanager
def _jax_gpu_targets(session):
    """jax_tvm_ffi.register_ffi_target records the targets registered for the GPU (and registers them as usual);
    jax.ffi.ffi_call of one returns a call that goes to the session, named after the function registered: an
    exported function loaded in this run (its stand-in says so), or a compiled one (with its kernels)."""
    import jax
    import jax_tvm_ffi

    targets = {}
    register, ffi_call = jax_tvm_ffi.register_ffi_target, jax.ffi.ffi_call

    def register_ffi_target(name, function, *args, platform="cpu", **kwargs):
        if platform in ("gpu", "cuda"):
            targets[name] = function
        return register(name, function, *args, platform=platform, **kwargs)

    def stand_in_ffi_call(target_name, *args, **kwargs):
        function = targets.get(target_name)
        if function is None:
            return ffi_call(target_name, *args, **kwargs)
        exported = getattr(function, "exported_function", None)
        launches = getattr(function, "launches", None) or []
        if exported:
            name, kernels, what = exported, (), "exported function"
        else:
            name, kernels, what = target_name, [l.kernel for l in launches], "compiled function"
        return lambda *a, **k: session.call_reached(name, kernels, what, user_location(2))

    jax_tvm_ffi.register_ffi_target, jax.ffi.ffi_call = register_ffi_target, stand_in_ffi_call
    try:
        yield
    finally:
        jax_tvm_ffi.register_ffi_target, jax.ffi.ffi_call = register, ffi_call
