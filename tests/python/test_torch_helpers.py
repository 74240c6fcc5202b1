"""warpweave.torch (CuTe DSL's cutlass.torch) and cutlass.utils.tensor_helpers: test tensors with the asked
majorness and values, fp8 held in uint8 storage, on the host (device="cpu") where no GPU is present."""
import itertools

import pytest

torch = pytest.importorskip("torch")

import warpweave as cutlass  # noqa: E402
import warpweave.torch as cutlass_torch  # noqa: E402
from warpweave.utils.tensor_helpers import create_cute_tensor_for_fp8, is_fp8_dtype  # noqa: E402


def test_dtype_mapping():
    assert cutlass_torch.dtype(cutlass.Float16) is torch.float16
    assert cutlass_torch.dtype(cutlass.BFloat16) is torch.bfloat16
    assert cutlass_torch.dtype(cutlass.Float8E4M3FN) is torch.float8_e4m3fn
    with pytest.raises(TypeError, match="no dtype"):
        cutlass_torch.dtype(cutlass.Float6E2M3FN)


@pytest.mark.parametrize("mode0_major", [True, False])
def test_matrix_majorness_and_values(mode0_major):
    t = cutlass_torch.matrix(3, 8, 6, mode0_major, cutlass.Float16,
                             init_config=cutlass_torch.RandomInitConfig(min_val=-2, max_val=2))
    assert t.shape == (8, 6, 3) and t.dtype is torch.float32
    assert t.stride()[0 if mode0_major else 1] == 1 and cutlass_torch.get_leading_dim(t) == (0 if mode0_major else 1)
    assert t.min() >= -2 and t.max() <= 2 and torch.equal(t, t.round())  # integers: exact in every type


def test_create_and_permute_is_a_permuted_compact_tensor():
    # The result is torch.empty(shape).permute(order): mode i has extent shape[order[i]] and the stride that mode
    # had in the compact row-major tensor, so the mode that order maps to shape's last mode is contiguous.
    shape = (2, 3, 4)
    compact = (12, 4, 1)
    for order in itertools.permutations(range(3)):
        t = cutlass_torch.create_and_permute_torch_tensor(shape, torch.float32, permute_order=order,
                                                          init_type=cutlass_torch.TensorInitType.SCALAR,
                                                          init_config=cutlass_torch.ScalarInitConfig(value=1.5))
        assert t.shape == tuple(shape[o] for o in order)
        assert t.stride() == tuple(compact[o] for o in order)
        assert t.stride()[order.index(2)] == 1 and bool((t == 1.5).all())
    # CuTe DSL's GEMM idiom: (l, n, m) permuted by (2, 1, 0) is an M-major (m, n, l) matrix batch.
    t = cutlass_torch.create_and_permute_torch_tensor((5, 6, 7), torch.float16, permute_order=(2, 1, 0))
    assert t.shape == (7, 6, 5) and t.stride()[0] == 1 and cutlass_torch.get_leading_dim(t) == 0
    # a scalar as a (1, 1, 1) tensor (CuTe DSL's amax output): every mode has stride 1, the innermost leads
    assert cutlass_torch.get_leading_dim(torch.zeros(1, 1, 1)) == 2
    assert cutlass_torch.get_leading_dim(torch.zeros(2, 2).as_strided((2, 2), (1, 1))) is None
    with pytest.raises(ValueError, match="permutation"):
        cutlass_torch.create_and_permute_torch_tensor((2, 3), torch.float32, permute_order=(0, 0))


def test_cute_tensor_like_converts_to_the_element_type():
    ref = cutlass_torch.matrix(1, 16, 8, False, cutlass.Float8E4M3FN,
                               init_type=cutlass_torch.TensorInitType.GAUSSIAN)
    cute_t, storage = cutlass_torch.cute_tensor_like(ref, cutlass.Float8E4M3FN, is_dynamic_layout=True,
                                                     assumed_align=16, device="cpu")
    assert storage.dtype is torch.uint8 and cute_t.element_type is cutlass.Float8E4M3FN
    # The bytes are exactly torch's own fp8 rounding of the values.
    assert torch.equal(storage, ref.to(torch.float8_e4m3fn).view(torch.uint8))
    assert cute_t.dynamic_shape == [True, True, True] and not cute_t.dynamic_stride[1]
    back = storage.view(torch.float8_e4m3fn).float()
    assert torch.allclose(back, ref, rtol=0.07, atol=2 ** -9)


# Every e2m1 (fp4) magnitude by code; the sign is bit 3.
E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def _nibbles(storage):
    """The buffer's 4-bit values in memory order, low nibble of each byte first."""
    raw = torch.empty(0, dtype=torch.uint8).set_(storage.untyped_storage()).to(torch.int64)
    return torch.stack([raw & 15, raw >> 4], dim=1).reshape(-1)


@pytest.mark.parametrize("k_major", [True, False])
def test_cute_tensor_like_packs_fp4_without_torch_conversion_kernels(k_major):
    # torch has no CPU kernel converting to float4_e2m1fn_x2 (a compile-only run puts "cuda" tensors on the CPU):
    # the values are encoded here, round to nearest even and saturating, two to a byte in element-offset order.
    vals = [0.5, -1.0, 6.0, 7.0, 0.75, 0.25, -2.6, 5.0, 4.9, float("inf"), -0.0, 1.25, 3.4, -100.0, 2.5, 1.75]
    want = [1, 8 | 2, 7, 7, 2, 0, 8 | 5, 6, 6, 7, 8 | 0, 2, 5, 8 | 7, 4, 4]
    ref = cutlass_torch.matrix(1, 4, 4, not k_major, cutlass.Float32)
    ref.copy_(torch.tensor(vals).reshape(4, 4, 1))
    cute_t, storage = cutlass_torch.cute_tensor_like(ref, cutlass.Float4E2M1FN, is_dynamic_layout=True,
                                                     assumed_align=16, device="cpu")
    assert cute_t.element_type is cutlass.Float4E2M1FN and storage.dtype is torch.float4_e2m1fn_x2
    nib = _nibbles(storage)
    for i in range(4):
        for j in range(4):
            off = i * storage.stride(0) + j * storage.stride(1)
            assert nib[off] == want[4 * i + j], (i, j, vals[4 * i + j])
    # the codes decode to the nearest representable values (ties to the even code)
    assert [E2M1[c & 7] * (-1 if c & 8 else 1) for c in want[:9]] == [0.5, -1.0, 6.0, 6.0, 1.0, 0.0, -3.0, 4.0, 4.0]


def test_fp8_tensor_helper_and_convert():
    assert is_fp8_dtype(cutlass.Float8E5M2) and not is_fp8_dtype(cutlass.Float16)
    src = torch.randn(4, 16)
    storage = torch.empty(4, 16, dtype=torch.uint8)
    t = create_cute_tensor_for_fp8(storage, cutlass.Float8E5M2, leading_dim=1, source_f32_tensor=src)
    assert t.element_type is cutlass.Float8E5M2
    assert torch.equal(storage, src.to(torch.float8_e5m2).view(torch.uint8))
    h = torch.empty(4, 16, dtype=torch.float16)
    from warpweave.cute.runtime import from_dlpack

    out = cutlass_torch.convert_cute_tensor(src, from_dlpack(h), cutlass.Float16)
    assert out.element_type is cutlass.Float16 and torch.equal(h, src.half())
    with pytest.raises(ValueError, match="shapes differ"):
        cutlass_torch.convert_cute_tensor(torch.zeros(2, 2), from_dlpack(h), cutlass.Float16)


def _nearest_e2m1_code(x: float) -> int:
    """The reference encoding, one value at a time: the nearest e2m1 magnitude (the even code on a tie),
    saturating; NaN as 6."""
    a = 6.0 if x != x else min(abs(x), 6.0)
    best = min(range(8), key=lambda c: (abs(E2M1[c] - a), c % 2))
    return best | (8 if torch.signbit(torch.tensor(x)).item() else 0)


def test_e2m1_codes_are_the_nearest_magnitude_ties_to_even():
    # every midpoint, its float32 neighbours, the magnitudes themselves, saturation, signs, NaN and infinities
    mids = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]
    edge = [float(torch.nextafter(torch.tensor(m, dtype=torch.float32), torch.tensor(d, dtype=torch.float32)))
            for m in mids for d in (0.0, 100.0)]
    gen = torch.Generator().manual_seed(7)
    rand = (torch.rand(2000, generator=gen) * 16 - 8).tolist()
    vals = mids + edge + list(E2M1) + [6.5, 7.0, 1e9, float("inf"), float("nan"), -0.0] + rand
    vals += [-v for v in vals]
    codes = cutlass_torch._e2m1_codes(torch.tensor(vals, dtype=torch.float32))
    assert codes.dtype is torch.uint8
    assert codes.tolist() == [_nearest_e2m1_code(v) for v in torch.tensor(vals, dtype=torch.float32).tolist()]


@pytest.mark.parametrize("shape,perm,offset", [((6, 4, 2), (0, 1, 2), 0), ((6, 4, 2), (2, 0, 1), 0),
                                               ((3, 8, 1), (1, 0, 2), 0), ((5, 3, 2), (0, 1, 2), 1),
                                               ((4, 6), (1, 0), 2)])
def test_packed_fp4_store_puts_each_code_at_its_element_offset(shape, perm, offset):
    # dense tensors in any mode order (paired in memory order) and tensors that are not dense (scattered) alike:
    # nibble o of the storage holds the code of the element at offset o; nibbles no element covers keep theirs
    gen = torch.Generator().manual_seed(sum(shape) + offset)
    vals = torch.rand(shape, generator=gen) * 14 - 7
    base_shape = tuple(shape[p] for p in perm)
    n = 1
    for s in shape:
        n *= s
    store = torch.empty(n + offset + 3, dtype=torch.float4_e2m1fn_x2)
    torch.empty(0, dtype=torch.uint8).set_(store.untyped_storage()).fill_(0x99)
    dense = torch.empty(0, dtype=torch.float4_e2m1fn_x2).set_(store.untyped_storage(), offset, base_shape,
                                                              torch.empty(base_shape).stride())
    inv = [perm.index(i) for i in range(len(perm))]
    dst = dense.permute(*inv)
    assert tuple(dst.shape) == shape
    want = cutlass_torch._e2m1_codes(vals)
    cutlass_torch._store_nibbles(dst, want)
    nib = _nibbles(store).tolist()
    covered = set()
    for idx in torch.cartesian_prod(*[torch.arange(s) for s in shape]).reshape(-1, len(shape)).tolist():
        off = offset + sum(i * st for i, st in zip(idx, dst.stride()))
        covered.add(off)
        assert nib[off] == want[tuple(idx)].item(), idx
    assert all(nib[o] == 9 for o in range(len(nib)) if o not in covered)


@pytest.mark.parametrize("dtype,lo,hi", [(cutlass.Int4, -8, 7), (cutlass.Uint4, 0, 15)])
def test_cute_tensor_like_packs_4bit_integers_at_their_element_offsets(dtype, lo, hi):
    # torch has no 4-bit integers: the values go two to a byte (low nibble first) in the 4-bit container, nibble o
    # holding the two's-complement code of the element at offset o, which is how a kernel's Int4 tensor reads them
    ref = cutlass_torch.matrix(1, 6, 8, False, cutlass.Float32)
    vals = torch.randint(lo, hi + 1, tuple(ref.shape), generator=torch.Generator().manual_seed(7)).float()
    ref.copy_(vals)
    cute_t, storage = cutlass_torch.cute_tensor_like(ref, dtype, is_dynamic_layout=True, assumed_align=16,
                                                     device="cpu")
    assert cute_t.element_type is dtype
    nib = _nibbles(storage)
    for idx in itertools.product(*(range(s) for s in storage.shape)):
        off = sum(i * st for i, st in zip(idx, storage.stride()))
        assert nib[off] == int(vals[idx]) & 15, idx


def _fields(storage, width):
    """The buffer's `width`-bit fields in order, bit string low bits first (field o is bits [o*width, (o+1)*width))."""
    raw = torch.empty(0, dtype=torch.uint8).set_(storage.untyped_storage()).to(torch.int64)
    bits = ((raw.unsqueeze(1) >> torch.arange(8)) & 1).reshape(-1)
    bits = bits[:bits.numel() // width * width].reshape(-1, width)
    return (bits << torch.arange(width)).sum(dim=1)


@pytest.mark.parametrize("dtype", [cutlass.Float6E2M3FN, cutlass.Float6E3M2FN])
def test_fp6_codes_are_the_static_encoding(dtype):
    # nearest code, ties to even, saturating (the types have neither infinities nor NaN): fp8.encode_static's
    # rounding, value by value, at every magnitude, the midpoints between neighbours and their float neighbours
    from warpweave._dsl.values import fp8

    mags = sorted({abs(fp8.decode_static(dtype, c)) for c in range(64)})
    mids = [(a + b) / 2 for a, b in zip(mags, mags[1:])]
    edge = [float(torch.nextafter(torch.tensor(m, dtype=torch.float32), torch.tensor(d, dtype=torch.float32)))
            for m in mids for d in (0.0, 100.0)]
    rand = (torch.rand(2000, generator=torch.Generator().manual_seed(3)) * 64 - 32).tolist()
    vals = mags + mids + edge + rand + [mags[-1] * 1.5, 1e9, float("inf")]
    vals += [-v for v in vals]
    codes = cutlass_torch._float_codes(torch.tensor(vals, dtype=torch.float32), dtype).tolist()
    assert codes == [fp8.encode_static(dtype, v) for v in torch.tensor(vals, dtype=torch.float32).tolist()]
    assert cutlass_torch._float_codes(torch.tensor([float("nan")]), dtype).item() == 31   # the largest magnitude


@pytest.mark.parametrize("k_major", [True, False])
@pytest.mark.parametrize("dtype", [cutlass.Float6E2M3FN, cutlass.Float6E3M2FN])
def test_cute_tensor_like_packs_fp6_at_their_element_offsets(dtype, k_major):
    # as CuTe DSL's host helpers: a byte of uint8 storage per value, the tensor's strides in elements, the values
    # packed from the buffer's start at 6 bits each (four in three bytes), element offset o at bits [6o, 6o + 6)
    ref = cutlass_torch.matrix(2, 8, 12, not k_major, cutlass.Float32)
    vals = torch.randint(-6, 7, tuple(ref.shape), generator=torch.Generator().manual_seed(5)).float() * 0.5
    ref.copy_(vals)
    cute_t, storage = cutlass_torch.cute_tensor_like(ref, dtype, is_dynamic_layout=True, assumed_align=16,
                                                     device="cpu")
    assert cute_t.element_type is dtype and storage.dtype is torch.uint8
    assert tuple(storage.shape) == tuple(ref.shape) and storage.stride() == ref.stride()
    fields = _fields(storage, 6)
    want = cutlass_torch._float_codes(vals, dtype)
    for idx in itertools.product(*(range(s) for s in storage.shape)):
        off = sum(i * st for i, st in zip(idx, storage.stride()))
        assert fields[off] == want[idx], idx
    # convert_cute_tensor refills the same storage with new values
    cutlass_torch.convert_cute_tensor(-ref, cute_t, dtype)
    fields, want = _fields(storage, 6), cutlass_torch._float_codes(-vals, dtype)
    assert all(fields[sum(i * st for i, st in zip(idx, storage.stride()))] == want[idx]
               for idx in itertools.product(*(range(s) for s in storage.shape)))


def test_fp6_store_keeps_the_bits_no_element_covers():
    store = torch.full((20,), 0xFF, dtype=torch.uint8)
    dst = torch.as_strided(store, (3, 2), (5, 2), 1)           # element offsets 1, 3, 6, 8, 11, 13
    cutlass_torch._store_bits(dst, torch.zeros(3, 2, dtype=torch.int64), 6)
    fields = _fields(store, 6).tolist()
    covered = {1, 3, 6, 8, 11, 13}
    assert all(fields[o] == (0 if o in covered else 63) for o in range(len(fields)))
    with pytest.raises(ValueError, match="not sub-byte"):
        cutlass_torch._store_bits(dst, torch.zeros(3, 2, dtype=torch.int64), 12)


def _store_bits_bitwise(dst, codes, width):
    """The bit-by-bit definition of the packing (a bit string, element offset o at bits [o*width, (o+1)*width)),
    kept here as the reference the word-wise packer must match."""
    raw = torch.empty(0, dtype=torch.uint8).set_(dst.untyped_storage())
    bits = ((raw.to(torch.int64).unsqueeze(1) >> torch.arange(8)) & 1).reshape(-1)
    offsets = torch.as_strided(torch.arange(raw.numel()), tuple(dst.shape), tuple(dst.stride()),
                               dst.storage_offset()).reshape(-1)
    places = (offsets * width).unsqueeze(1) + torch.arange(width)
    bits[places.reshape(-1)] = ((codes.reshape(-1, 1).to(torch.int64) >> torch.arange(width)) & 1).reshape(-1)
    raw.copy_((bits.reshape(-1, 8) << torch.arange(8)).sum(dim=1).to(torch.uint8))


def _random_view(gen, store_bytes):
    """A random view of a fresh uint8 buffer: random rank, sizes (tails not a multiple of 4), mode order, storage
    offset, and sometimes a step that leaves gaps; with the buffer (filled with random bits)."""
    rank = int(torch.randint(1, 4, (), generator=gen))
    shape = [int(torch.randint(1, 8, (), generator=gen)) for _ in range(rank)]
    step = int(torch.randint(1, 3, (), generator=gen)) if torch.rand((), generator=gen) < 0.4 else 1
    perm = torch.randperm(rank, generator=gen).tolist()
    strides, run = [0] * rank, step
    for m in reversed(perm):
        strides[m], run = run, run * shape[m]
    offset = int(torch.randint(0, 6, (), generator=gen))
    extent = offset + sum((s - 1) * st for s, st in zip(shape, strides)) + 1
    store = torch.randint(0, 256, (max(store_bytes, extent) + int(torch.randint(0, 4, (), generator=gen)),),
                          dtype=torch.uint8, generator=gen)
    return store, torch.as_strided(store, shape, strides, offset)


@pytest.mark.parametrize("width", [6, 4, 3])
def test_word_wise_store_matches_the_bitwise_packing(width):
    # for random views (dense in any mode order, with gaps, at any offset, any tail), the storage after the store
    # is bit for bit what the bit-string definition makes: the elements' fields replaced, every other bit kept
    gen = torch.Generator().manual_seed(width)
    for _ in range(150):
        store, dst = _random_view(gen, 0)
        codes = torch.randint(0, 256, tuple(dst.shape), dtype=torch.int64, generator=gen)   # high bits ignored
        want = store.clone()
        _store_bits_bitwise(torch.as_strided(want, dst.shape, dst.stride(), dst.storage_offset()), codes, width)
        cutlass_torch._store_bits(dst, codes, width)
        assert torch.equal(store, want), (tuple(dst.shape), dst.stride(), dst.storage_offset())
        fields = cutlass_torch._unpack_fields(
            torch.cat((store, torch.zeros(-store.numel() % 3, dtype=torch.uint8))), width) if width == 6 else None
        if fields is not None:   # reading the fields back gives the codes at the elements' offsets
            got = fields[cutlass_torch._element_offsets(dst)]
            assert torch.equal(got, (codes.reshape(-1) & 63).to(torch.uint8))


_PEAK_SCRIPT = """
import resource, sys, torch
import warpweave.torch as ct
n, strided = int(sys.argv[1]), sys.argv[2] == "1"
store = torch.zeros(n, dtype=torch.uint8)
dst = torch.as_strided(store, (n // 64, 32), (64, 2)) if strided else store.view(n // 4096, 4096).t()
codes = torch.randint(0, 64, tuple(dst.shape), dtype=torch.uint8)
ct._STEP = 1 << 14                      # a step's temporaries small beside the tensor, so the bound is a ratio
ct._store_bits(dst[:1], codes[:1], 6)   # the first call's one-off allocations are not the packer's
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
ct._store_bits(dst, codes, 6)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)
"""


@pytest.mark.parametrize("strided", [False, True])
def test_fp6_store_uses_memory_near_the_storage_size(strided):
    # the packer's peak extra memory is a small multiple of the storage it spans (a 2048x2048 fp6 tensor: 4 MB),
    # not a word per bit, whether it packs a run or scatters; measured as growth of the peak resident size
    import os
    import subprocess
    import sys

    n = 1 << 22
    out = subprocess.run([sys.executable, "-c", _PEAK_SCRIPT, str(n), "1" if strided else "0"], env=os.environ,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.split()[-1]) <= 2 * n
