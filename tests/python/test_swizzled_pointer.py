"""cute.recast_ptr(ptr, swizzle_, dtype=): a swizzled shared-memory pointer; make_tensor over it is the tensor
whose element c lives at the swizzle of the byte address of (the pointer + layout(c)), as CuTe's swizzle pointers
and CuTe DSL's are: a swizzle from cute.make_swizzle given to a pointer counts bytes, whatever the element type.
Checked while tracing against that definition (allocations at offsets that are and are not multiples of the
swizzle's span, other element types), errors on the CPU, and the bytes in shared memory on a GPU."""
import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core, ext
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import line_in, requires_gpu, target

SEEN = {}
LAYOUT = cute.make_layout((16, 64), stride=(64, 1))
SW = cute.make_swizzle(3, 4, 3)          # 16-byte chunks of 128-byte rows (of 16-bit values here)


@cute.kernel
def trace_kernel(gOut: cute.Tensor):
    smem = cutlass.utils.SmemAllocator()
    pad = smem.allocate_array(cutlass.Float16, 136)          # 272 bytes: the next buffer is not span aligned
    raw = smem.allocate_tensor(cutlass.Float16, LAYOUT, 16)
    t = cute.make_tensor(cute.recast_ptr(raw.iterator, SW, dtype=cutlass.Float16), LAYOUT)
    SEEN["offset"] = raw.iterator.offset
    SEEN["tensor"] = t
    as_u32 = cute.make_tensor(cute.recast_ptr(raw.iterator, cute.make_swizzle(2, 4, 3), dtype=cutlass.Uint32),
                              cute.make_layout((16, 32), stride=(32, 1)))
    SEEN["u32"] = as_u32
    gOut[0] = cutlass.Float16(0.0)


@cute.jit
def trace_it(out):
    trace_kernel(out).launch(grid=[1, 1, 1], block=[32, 1, 1])


def absolute(t, c):
    """Element address (from the shared-memory base, in t's elements) of coordinate c of t."""
    lay = ext.full_layout(t)
    return t.iterator.offset + lay(c)


def swizzled(sw, element_address, element_bytes):
    """The element address that `sw`, swizzling byte addresses, gives element_address."""
    return sw(element_address * element_bytes) // element_bytes


def test_tensor_over_a_swizzled_pointer_swizzles_the_element_addresses():
    with target("sm_80"):
        cute.compile(trace_it, from_dlpack(np.zeros(4, dtype=np.float16)))
    base = SEEN["offset"]
    assert base % 512 != 0, "the test wants a buffer that is not aligned to the swizzle's span"
    t = SEEN["tensor"]
    for m in range(16):
        for k in range(64):
            assert absolute(t, (m, k)) == swizzled(SW, base + LAYOUT((m, k)), 2), (m, k)
    u = SEEN["u32"]
    sw32 = cute.make_swizzle(2, 4, 3)
    for m in range(16):
        for k in range(32):
            assert absolute(u, (m, k)) == swizzled(sw32, base // 2 + m * 32 + k, 4)


@cute.kernel
def gmem_kernel(gOut: cute.Tensor):
    p = cute.recast_ptr(gOut.iterator, SW, dtype=cutlass.Float16)
    gOut[0] = cutlass.Float16(0.0) if p is None else cutlass.Float16(1.0)


@cute.jit
def gmem_swizzle(out):
    gmem_kernel(out).launch(grid=[1, 1, 1], block=[1, 1, 1])


@cute.kernel
def double_kernel(gOut: cute.Tensor):
    smem = cutlass.utils.SmemAllocator()
    raw = smem.allocate_tensor(cutlass.Float16, LAYOUT, 1024)
    p = cute.recast_ptr(raw.iterator, SW, dtype=cutlass.Float16)
    cute.make_tensor(p, cute.make_composed_layout(SW, 0, LAYOUT))


@cute.jit
def double_swizzle(out):
    double_kernel(out).launch(grid=[1, 1, 1], block=[1, 1, 1])


WIDE = {}
WIDE_SW = cute.make_swizzle(3, 4, 4)     # 16-byte chunks XORed by address bits 8..10: a 2048-byte span


@cute.kernel
def wide_kernel(gOut: cute.Tensor):
    smem = cutlass.utils.SmemAllocator()
    raw = smem.allocate_tensor(cutlass.Float16, cute.make_layout(4096), 1024)
    t = cute.make_tensor(cute.recast_ptr(raw.iterator, WIDE_SW, dtype=cutlass.Float16), LAYOUT)
    WIDE["ptr"], WIDE["tensor"] = raw.iterator, t
    tidx, _, _ = cute.arch.thread_idx()
    for i in cutlass.range_constexpr(32):
        c = tidx * 32 + i
        t[c // 64, c % 64] = cutlass.Float16(c)
    cute.arch.sync_threads()
    for i in cutlass.range_constexpr(32):
        gOut[tidx * 32 + i] = raw[tidx * 32 + i]
    if tidx == 0:
        gOut[1024] = cutlass.Float16(raw.iterator.toint(cutlass.Uint32) // 1024 % 2)


@cute.jit
def wide_swizzle(out):
    wide_kernel(out).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_a_buffer_aligned_below_the_span_is_swizzled_where_it_lies():
    """A buffer whose known alignment (1024 bytes) is below the swizzle's span (2048) may lie at either half of a
    span when the kernel runs; CuTe's swizzle pointer permutes the absolute address, so each placement gives the
    same element the address sw(address + layout(c)). Checked for both placements by evaluating the traced
    offsets at each runtime address."""
    with target("sm_80"):
        cute.compile(wide_swizzle, from_dlpack(np.zeros(1025, dtype=np.float16)))
    t, ptr = WIDE["tensor"], WIDE["ptr"]
    dyn = [o for o in (t.iterator.offset, ext.full_layout(t).offset) if not isinstance(o, int)]
    assert dyn, "the placement in the span is a runtime value"
    syms = sorted({s for o in dyn for s in _core.symbols_of(o)})
    assert len(syms) == 1
    assert isinstance(ptr.offset, int)
    for address in (0, 1024, 2048 + 1024, 6 * 1024):        # bytes; the buffer's own address when the kernel runs
        env = {syms[0]: address}
        ev = lambda x: x if isinstance(x, int) else x.evaluate(env)
        base = address // 2 + ev(t.iterator.offset) - ptr.offset
        r = ev(ext.full_layout(t).offset)
        for m in range(16):
            for k in range(64):
                got = base + WIDE_SW_ELEMENT(r + LAYOUT((m, k)))
                assert got == swizzled(WIDE_SW, address // 2 + LAYOUT((m, k)), 2), (address, m, k)


def WIDE_SW_ELEMENT(x):
    """WIDE_SW on element offsets of 16-bit values (what the tensor's composed layout holds)."""
    return swizzled(WIDE_SW, x, 2)


@requires_gpu
def test_a_buffer_aligned_below_the_span_lands_at_the_swizzled_addresses():
    import torch

    out = torch.zeros(1025, dtype=torch.float16, device="cuda")
    wide_swizzle(from_dlpack(out))
    torch.cuda.synchronize()
    half = int(out[1024].item())                        # which half of a 2048-byte span the buffer starts in
    base = half * 512
    want = np.zeros(1024)
    for c in range(1024):
        m, k = divmod(c, 64)
        want[swizzled(WIDE_SW, base + LAYOUT((m, k)), 2) - base] = c
    assert np.array_equal(out[:1024].cpu().numpy().astype(np.float64), want)


@pytest.mark.parametrize("fn,kind,message", [
    (gmem_swizzle, ValueError, "only shared-memory pointers"),
    (double_swizzle, TypeError, "composed too"),
])
def test_swizzled_pointer_errors(fn, kind, message):
    with target("sm_80"), pytest.raises(kind, match=message):
        cute.compile(fn, from_dlpack(np.zeros(4, dtype=np.float16)))


def test_recast_ptr_takes_only_a_swizzle():
    @cute.kernel
    def k(gOut: cute.Tensor):
        cute.recast_ptr(gOut.iterator, LAYOUT, dtype=cutlass.Float16)

    @cute.jit
    def j(out):
        k(out).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_80"), pytest.raises(TypeError, match="must be a Swizzle"):
        cute.compile(j, from_dlpack(np.zeros(4, dtype=np.float16)))


@cute.kernel
def roundtrip_kernel(gOut: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    smem = cutlass.utils.SmemAllocator()
    smem.allocate_array(cutlass.Float16, 512)                 # one span: the buffer is a permutation of itself
    raw = smem.allocate_tensor(cutlass.Float16, cute.make_layout(16 * 64), 16)
    t = cute.make_tensor(cute.recast_ptr(raw.iterator, SW, dtype=cutlass.Float16), LAYOUT)
    for i in cutlass.range_constexpr(32):
        c = tidx * 32 + i
        t[c // 64, c % 64] = cutlass.Float16(c)
    cute.arch.sync_threads()
    for i in cutlass.range_constexpr(32):
        gOut[tidx * 32 + i] = raw[tidx * 32 + i]


@cute.jit
def roundtrip(out):
    roundtrip_kernel(out).launch(grid=[1, 1, 1], block=[32, 1, 1])


@requires_gpu
def test_swizzled_writes_land_at_the_swizzled_addresses():
    import torch

    out = torch.zeros(1024, dtype=torch.float16, device="cuda")
    roundtrip(from_dlpack(out))
    torch.cuda.synchronize()
    base = 512
    want = np.zeros(1024)
    for c in range(1024):
        m, k = divmod(c, 64)
        want[swizzled(SW, base + LAYOUT((m, k)), 2) - base] = c
    assert np.array_equal(out.cpu().numpy().astype(np.float64), want)


# --- a swizzle given to shared-memory storage: allocate_tensor(swizzle=) and MemRange.get_tensor(swizzle=) --------
STORAGE = {}


@cute.kernel
def storage_kernel(gOut: cute.Tensor):
    smem = cutlass.utils.SmemAllocator()

    @cute.struct
    class Buffers:
        a: cute.struct.Align[cute.struct.MemRange[cutlass.Float16, 1024], 1024]

    buffers = smem.allocate(Buffers)
    STORAGE["get_tensor"] = buffers.a.get_tensor(LAYOUT, swizzle=cute.make_swizzle(3, 4, 3))
    STORAGE["allocate_tensor"] = smem.allocate_tensor(cutlass.Float16, LAYOUT, 1024, swizzle=cute.make_swizzle(3, 4, 3))
    composed = cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, LAYOUT)
    STORAGE["inner"] = smem.allocate_tensor(cutlass.Float16, composed.outer, 1024, swizzle=composed.inner)
    STORAGE["composed"] = smem.allocate_tensor(cutlass.Float16, composed, 1024)
    STORAGE["f32"] = smem.allocate_tensor(cutlass.Float32, cute.make_layout((8, 32), stride=(32, 1)), 1024,
                                          swizzle=cute.make_swizzle(3, 4, 3))
    gOut[0] = cutlass.Float16(0.0)


@cute.jit
def storage(out):
    storage_kernel(out).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_a_made_swizzle_given_to_storage_swizzles_byte_addresses():
    """CuTe DSL's tensorop_gemm gives get_tensor make_swizzle(3, 4, 3) ("base_bits is in bytes"): for 16-bit values
    that is the element swizzle Sw<3,3,3>, which keeps ldmatrix's eight 16-byte rows in distinct banks. Read as an
    element swizzle it would permute 32-byte chunks of 256-byte rows: right values, conflicting banks."""
    with target("sm_80"):
        cute.compile(storage, from_dlpack(np.zeros(4, dtype=np.float16)))
    for name, ebytes, layout in (("get_tensor", 2, LAYOUT), ("allocate_tensor", 2, LAYOUT),
                                 ("f32", 4, cute.make_layout((8, 32), stride=(32, 1)))):
        t = STORAGE[name]
        shape = (8, 32) if name == "f32" else (16, 64)
        for m in range(shape[0]):
            for k in range(shape[1]):
                got = ext.full_layout(t)((m, k))
                assert got == swizzled(cute.make_swizzle(3, 4, 3), layout((m, k)), ebytes), (name, m, k)
    # 16-byte rows of ldmatrix: the eight rows of one 8x8 block of 16-bit values land in eight distinct 16-byte
    # bank groups (a 128-byte row is the 32 banks once).
    t = STORAGE["get_tensor"]
    groups = {(ext.full_layout(t)((m, 0)) * 2 % 128) // 16 for m in range(8)}
    assert len(groups) == 8


def test_a_swizzle_read_off_a_composed_layout_keeps_its_meaning():
    """The shared-memory layout helpers give composed layouts whose swizzle counts elements; their `.inner`, given
    back to allocate_tensor with the outer layout, is the composed layout itself."""
    with target("sm_80"):
        cute.compile(storage, from_dlpack(np.zeros(4, dtype=np.float16)))
    a, b = STORAGE["inner"], STORAGE["composed"]
    for m in range(16):
        for k in range(64):
            assert ext.full_layout(a)((m, k)) == ext.full_layout(b)((m, k))


@cute.kernel
def narrow_kernel(gOut: cute.Tensor):
    smem = cutlass.utils.SmemAllocator()
    smem.allocate_tensor(cutlass.Float32, LAYOUT, 1024, swizzle=cute.make_swizzle(2, 1, 3))


@cute.jit
def narrow_swizzle(out):
    narrow_kernel(out).launch(grid=[1, 1, 1], block=[1, 1, 1])


def test_a_byte_swizzle_inside_an_element_is_refused_at_the_users_line():
    with target("sm_80"), pytest.raises(ValueError, match="counts bytes") as e:
        cute.compile(narrow_swizzle, from_dlpack(np.zeros(4, dtype=np.float16)))
    assert "test_swizzled_pointer.py" in str(e.value)


def test_a_swizzled_tensor_has_the_stride_of_its_layout():
    # The swizzle permutes addresses; the tensor's stride is its layout's (CuTe DSL's get_tensor(layout, swizzle=)
    # keeps the swizzle in the pointer), for a tensor over a swizzled pointer and its slices. A tensor composed with a
    # layout (not a swizzle) has no single stride, at the user's line.
    got = {}

    @cute.kernel
    def k(g: cute.Tensor):
        smem = cutlass.utils.SmemAllocator()
        raw = smem.allocate_tensor(cutlass.Float16, cute.make_layout((16, 64, 2), stride=(64, 1, 1024)), 1024)
        swz = cute.make_tensor(cute.recast_ptr(raw.iterator, SW, dtype=cutlass.Float16), raw.layout)
        got["sliced"] = swz[None, None, 1].stride
        got["whole"] = swz.stride
        got["error"] = None
        try:
            cute.make_tensor(raw.iterator, cute.make_composed_layout(
                cute.make_layout(8, stride=2), 0, cute.make_layout(4))).stride  # composed
        except Exception as e:   # noqa: BLE001 - the error is what is checked
            got["error"] = e
        g[0] = cutlass.Float16(0.0)

    @cute.jit
    def host(out):
        k(out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_90a"):
        cute.compile(host, from_dlpack(np.zeros(4, np.float16)))
    assert got["whole"] == (64, 1, 1024) and got["sliced"] == (64, 1)
    assert "has no single stride" in str(got["error"])
    assert f"test_swizzled_pointer.py:{line_in(__file__, '# composed')}" in str(got["error"])


# --- the pointer's type: CuTe DSL code swizzles a raw address itself from ptr.type.swizzle_type ------------------

TYPES = {}


@cute.kernel
def type_kernel(gOut: cute.Tensor):
    smem = cutlass.utils.SmemAllocator()
    raw = smem.allocate_tensor(cutlass.Float16, LAYOUT, 16)
    p = cute.recast_ptr(raw.iterator, SW, dtype=cutlass.Float16)
    TYPES["swizzled"], TYPES["plain"], TYPES["element"] = p.type, raw.iterator.type, p.swizzle
    sw = p.type.swizzle_type
    # QuACK's swizzle_ptr: the swizzle applied to the pointer's integer address, as a plain pointer again
    addr = p.toint()
    mask = ((1 << sw.num_bits) - 1) << (sw.num_base + sw.num_shift)
    q = cute.make_ptr(p.dtype, addr ^ ((addr & mask) >> sw.num_shift), p.memspace, assumed_align=p.alignment)
    TYPES["swizzled_by_hand"] = q.type
    gOut[0] = q.load()


@cute.jit
def type_it(out):
    type_kernel(out).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_a_pointers_type_carries_its_element_type_memory_space_and_swizzle():
    with target("sm_80"):
        c = cute.compile(type_it, from_dlpack(np.zeros(4, dtype=np.float16)))
    assert c.cubin
    sw, plain, by_hand = TYPES["swizzled"], TYPES["plain"], TYPES["swizzled_by_hand"]
    assert (sw.swizzle_type.num_bits, sw.swizzle_type.num_base, sw.swizzle_type.num_shift) == (3, 4, 3)
    assert sw.value_type is cutlass.Float16 and sw.memspace == plain.memspace
    # the type's swizzle moves the bytes of the element the pointer's own swizzle moves
    assert all(sw.swizzle_type(2 * e) == 2 * TYPES["element"](e) for e in range(4096))
    # a plain pointer's swizzle is the identity: of no bits, it changes no address
    for t in (plain, by_hand):
        assert t.swizzle_type.num_bits == 0 and all(t.swizzle_type(a) == a for a in range(0, 4096, 2))


def test_recast_of_a_swizzled_layout_moves_its_swizzle_to_the_new_unit():
    """QuACK's position-independent swizzle: a pointer's byte swizzle composed over the tile's layout in bytes,
    recast to 16-bit elements, is the element swizzle (3, 3, 3) over the tile's layout; recast back, the byte one."""
    outer = cute.make_layout((16, 64), stride=(64, 1))
    in_bytes = cute.make_composed_layout(SW, 0, cute.recast_layout(8, 16, outer))
    elems = cute.recast_layout(16, 8, in_bytes)
    want = cute.make_composed_layout(_core.Swizzle(3, 3, 3), 0, outer)
    assert all(elems((m, k)) == want((m, k)) for m in range(16) for k in range(64))
    back = cute.recast_layout(8, 16, elems)
    assert all(back((m, k)) == in_bytes((m, k)) for m in range(16) for k in range(128))
    with pytest.raises(ValueError, match="smaller than a 64-bit value"):
        cute.recast_layout(64, 8, cute.make_composed_layout(_core.Swizzle(3, 2, 3), 0, cute.make_layout(64)))
