"""Compile-only runs: the factory functions that make a CUDA tensor (torch.empty, zeros, ones, full, rand, randn
with a CUDA device) make its host stand-in directly in CUDA-aligned storage, and a large random one holds a block
of its generator's values, repeated.

Why: a GPU makes a program's operands in microseconds; the host standing in for it pays for every element. A GEMM
test's operands (varlen grouped GEMMs: 300-700 million bf16 elements) took torch's CPU generator 1-3 s each
(~5 ns an element), and then one more pass each when the tensor was moved into CUDA-aligned storage
(compile_only._cuda_aligned copies it when torch's allocator gave 64-byte alignment). A compile-only run of such a
test file spent most of its time there, not compiling: a thousand tests sharing a few dozen kernels. Nothing compiled
depends on the values, and the launch that would read them is not made. So:
- the tensor is allocated once, aligned (its storage begins at a multiple of CUDA_ALLOCATION_ALIGNMENT), and filled
  in place: no copy;
- up to EXACT_RANDOM elements, rand/randn draw every element from the program's generator (torch's CPU stream);
  beyond, the first RANDOM_BLOCK elements are drawn, and the rest repeats them. Seeds still decide the values, and
  host code that looks at them before a launch (an amax, a scale) sees values of the distribution asked for.

A call this does not understand (out=, a layout other than strided, a size the meta kernel refuses) is made as
before; errors are torch's own.
"""
from __future__ import annotations

CUDA_ALLOCATION_ALIGNMENT = 256  # cudaMalloc's: programs promise it (from_dlpack(t, assumed_align=128))
EXACT_RANDOM = 1 << 22           # ~20 ms of torch's CPU generator: below, a random tensor is torch's own stream
RANDOM_BLOCK = 1 << 16           # drawn once for a larger one, then repeated

_FILLS = ("empty", "zeros", "ones", "full", "rand", "randn")
# keywords the meta call cannot take (they name host things: a CPU generator, pinned memory) or that are set after
_HOST_KEYWORDS = ("generator", "pin_memory", "requires_grad", "device")


def aligned_home(torch, nbytes: int):
    """A uint8 tensor of nbytes whose storage begins at a CUDA-aligned address (frombuffer keeps the larger
    allocation it is cut from alive)."""
    if nbytes == 0:
        return torch.empty(0, dtype=torch.uint8)
    raw = torch.empty(nbytes + CUDA_ALLOCATION_ALIGNMENT, dtype=torch.uint8)
    off = -raw.data_ptr() % CUDA_ALLOCATION_ALIGNMENT
    return torch.frombuffer(memoryview(raw[off:off + nbytes].numpy()), dtype=torch.uint8)


def _span_bytes(t) -> int:
    if t.numel() == 0:
        return 0
    return (sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1) * t.element_size()


def fill_kind(torch, func):
    """The name of the fill func makes ("empty", ..., "randn"), or None for a function this does not make."""
    for name in _FILLS:
        if func is getattr(torch, name, None):
            return name
    return None


def make_on_host(torch, kind, args, kwargs):
    """The host stand-in of torch.<kind>(*args, **kwargs) for a CUDA device (kwargs already without it), in aligned
    storage; None where the call is not one this makes (the caller then makes it as torch would)."""
    if kwargs.get("out") is not None or kwargs.get("names") is not None:
        return None
    try:
        shape_only = {k: v for k, v in kwargs.items() if k not in _HOST_KEYWORDS}
        meta = getattr(torch, kind)(*args, device="meta", **shape_only)
    except Exception:  # noqa: BLE001 - torch's own call says what is wrong with it
        return None
    if type(meta) is not torch.Tensor or meta.layout != torch.strided:
        return None
    home = aligned_home(torch, _span_bytes(meta))
    t = torch.empty(0, dtype=meta.dtype).set_(home.untyped_storage(), 0, meta.shape, meta.stride())
    if kind == "zeros":
        t.zero_()
    elif kind == "ones":
        t.fill_(1)
    elif kind == "full":
        t.fill_(args[1] if len(args) > 1 else kwargs["fill_value"])
    elif kind in ("rand", "randn"):
        _random_fill(torch, kind, t, kwargs.get("generator"))
    if kwargs.get("requires_grad"):
        t.requires_grad_(True)
    return t


def _random_fill(torch, kind, t, generator):
    """t (contiguous, as rand/randn make it) filled from generator: every element up to EXACT_RANDOM, else a block
    of RANDOM_BLOCK drawn values repeated."""
    n = t.numel()
    flat = t.view(-1)
    draw = getattr(torch, kind)
    if n <= EXACT_RANDOM:
        flat.copy_(draw(n, generator=generator, dtype=t.dtype))
        return
    block = draw(RANDOM_BLOCK, generator=generator, dtype=t.dtype)
    whole = n // RANDOM_BLOCK
    flat[:whole * RANDOM_BLOCK].view(whole, RANDOM_BLOCK).copy_(block.expand(whole, RANDOM_BLOCK))
    flat[whole * RANDOM_BLOCK:].copy_(block[:n - whole * RANDOM_BLOCK])
