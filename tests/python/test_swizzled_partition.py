"""A pointer-swizzled shared-memory tensor's partitions, offsets and recasts, as in CuTe DSL (whose behaviour these
properties were read from, compiling the same programs with CuTe DSL 4.8.1 for sm_90a):
- a tiled copy's thread slice (partition_S/D), a tiled MMA's (partition_A/B/C), local_partition, local_tile and the
  divides keep the swizzle in the pointer: the result's iterator is a swizzled pointer at the part's logical
  (unswizzled) origin and its layout the plain layout's part, so the same partition of the same layout over the
  unswizzled pointer gives the same layout and origin, and every element of the swizzled part lies at the swizzle
  of the byte address the unswizzled part gives it; further slices and make_tensor(part.iterator, part.layout) too;
- ptr + k of such a pointer keeps the swizzle and moves the logical address (the swizzle applies after);
- recast_tensor of such a tensor recasts its address and layout and not its swizzle (CuTe DSL's result is
  unswizzled); of a tensor whose swizzle is in its composed layout, the swizzle counts the new elements and
  permutes the same bytes, and a swizzle that would split a new element is refused at the user's line.
Random swizzles, tiles and thread layouts, traced for sm_80 (addresses are read off the traced tensors)."""
import random
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core, ext
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target

TYPES = [(cutlass.Float16, 2), (cutlass.Float32, 4), (cutlass.Uint8, 1)]


def _random_cases(seed, n):
    rng = random.Random(seed)
    cases = []
    for _ in range(n):
        dtype, eb = rng.choice(TYPES)
        b = rng.randint(1, 3)
        m = rng.randint(eb.bit_length() - 1, 4)                # a swizzle of bytes that keeps elements whole
        s = rng.randint(b, 10 - b - m) if 10 - b - m >= b else b
        v = rng.choice([1, 2, 4, 8, 16]) // eb or 1            # values per copy: at most 16 bytes
        tr, tc = rng.choice([(8, 4), (4, 8), (16, 2), (2, 16)])
        rows, cols = tr * rng.choice([1, 2]), tc * v * rng.choice([1, 2])
        while rows * cols * eb < 1 << (b + m + s):             # the tile spans the swizzle at least once
            rows *= 2
        cases.append(dict(dtype=dtype, eb=eb, sw=(b, m, s), v=v, thr=(tr, tc), tile=(rows, cols),
                          tid=rng.randrange(tr * tc), k=rng.randrange(-64, 64) // eb * eb or eb))
    return cases


CASES = _random_cases(7, 10)
SEEN = []


def _trace_case(smem, c):
    dtype, (b, m, s) = c["dtype"], c["sw"]
    rows, cols = c["tile"]
    outer = cute.make_layout((rows, cols), stride=(cols, 1))
    sw = cute.make_swizzle(b, m, s)
    t = smem.allocate_tensor(dtype, outer, 1024, sw)
    plain = cute.make_tensor(cute.recast_ptr(t.iterator, dtype=dtype), outer)   # the origin, unswizzled
    tr, tc = c["thr"]
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtype, num_bits_per_copy=c["v"] * c["eb"] * 8)
    tiled = cute.make_tiled_copy_tv(atom, cute.make_layout((tr, tc), stride=(tc, 1)), cute.make_layout((1, c["v"])))
    thr = tiled.get_slice(c["tid"])
    parts = {"S": (thr.partition_S(t), thr.partition_S(plain)), "D": (thr.partition_D(t), thr.partition_D(plain)),
             "local": (cute.local_partition(t, cute.make_layout((tr, tc)), c["tid"]),
                       cute.local_partition(plain, cute.make_layout((tr, tc)), c["tid"])),
             "tile": (cute.local_tile(t, (tr, tc), (1, 0)), cute.local_tile(plain, (tr, tc), (1, 0))),
             "zipped": (cute.zipped_divide(t, (tr, tc)), cute.zipped_divide(plain, (tr, tc)))}
    S = parts["S"]
    parts["S sliced"] = (S[0][None, 0, None], S[1][None, 0, None])
    parts["S remade"] = (cute.make_tensor(S[0].iterator, S[0].layout), S[1])
    k = c["k"]
    parts["offset"] = (cute.make_tensor(t.iterator + k, outer), cute.make_tensor(plain.iterator + k, outer))
    parts["slice offset"] = (cute.make_tensor(S[0].iterator + k, S[0].layout),
                             cute.make_tensor(S[1].iterator + k, S[1].layout))
    SEEN.append(dict(case=c, t=t, parts=parts, recast=cute.recast_tensor(t, cutlass.Uint8),
                     recast_slice=cute.recast_tensor(S[0], cutlass.Uint8), plain=plain, slice_plain=S[1]))


def _trace_mma(smem):
    """A tiled MMA's thread slices of a swizzled A (M x K) and C (M x N) tile."""
    sw = cute.make_swizzle(2, 4, 3)                              # 64-byte rows of 16-bit values
    mma = cute.make_tiled_mma(cute.make_mma_atom(cute.nvgpu.warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32,
                                                                              (16, 8, 16))), (2, 2, 1))
    a_layout, c_layout = cute.make_layout((64, 32), stride=(32, 1)), cute.make_layout((64, 32), stride=(32, 1))
    a = smem.allocate_tensor(cutlass.Float16, a_layout, 1024, sw)
    c = smem.allocate_tensor(cutlass.Float16, c_layout, 1024, sw)
    parts = {}
    for tid in (0, 37, 101):
        thr = mma.get_slice(tid)
        pa, pc = cute.make_tensor(cute.recast_ptr(a.iterator, dtype=cutlass.Float16), a_layout), \
            cute.make_tensor(cute.recast_ptr(c.iterator, dtype=cutlass.Float16), c_layout)
        parts[f"A {tid}"] = (thr.partition_A(a), thr.partition_A(pa))
        parts[f"C {tid}"] = (thr.partition_C(c), thr.partition_C(pc))
        parts[f"A {tid} k-slice"] = (thr.partition_A(a)[None, None, 1], thr.partition_A(pa)[None, None, 1])
    SEEN.append(dict(case=dict(sw=(2, 4, 3), eb=2), parts=parts))


def trace_kernel(body, arch="sm_80", threads=32):
    """Traces a kernel of `threads` threads whose body is body(shared-memory allocator), for arch."""
    @cute.kernel
    def kernel(gOut: cute.Tensor):
        body(cutlass.utils.SmemAllocator())
        gOut[0] = cutlass.Float16(0.0)

    @cute.jit
    def launch(out):
        kernel(out).launch(grid=[1, 1, 1], block=[threads, 1, 1])

    with target(arch), pytest.MonkeyPatch.context() as mp:
        mp.setenv("WARPWEAVE_DISABLE_CACHE", "1")   # what the test reads is made by the trace, not a cached compile
        return cute.compile(launch, from_dlpack(np.zeros(4, dtype=np.float16)))


def _trace_partitions(smem):
    for c in CASES:
        _trace_case(smem, c)
    _trace_mma(smem)


@pytest.fixture(scope="module")
def traced():
    SEEN.clear()
    trace_kernel(_trace_partitions)
    return list(SEEN)


def _address(t, c):
    """t's element address of coordinate c, in elements from shared memory's base (what the kernel computes)."""
    return t.iterator.offset + ext.full_layout(t)(c)


def _swizzled(sw, element, eb):
    b, m, s = sw
    x = element * eb
    return (x ^ ((x >> s) & (((1 << b) - 1) << m))) // eb


def test_a_part_is_the_swizzle_of_the_same_part_unswizzled(traced):
    checked = 0
    for seen in traced:
        c = seen["case"]
        for name, (sw_part, plain_part) in seen["parts"].items():
            assert sw_part.layout == plain_part.layout, (name, c)
            face = sw_part.iterator.type
            assert (face.swizzle_type.num_bits, face.swizzle_type.num_base, face.swizzle_type.num_shift) == \
                c["sw"], (name, c, face)
            for i in range(cute.size(plain_part.layout)):
                want = _swizzled(c["sw"], _address(plain_part, i), c["eb"])
                assert _address(sw_part, i) == want, (name, c, i)
                checked += 1
    assert checked > 1000


def test_the_iterator_is_the_swizzled_pointer_at_the_parts_logical_origin(traced):
    assert any(name.startswith("A ") for seen in traced for name in seen["parts"])
    for seen in traced:
        c = seen["case"]
        for name, (sw_part, plain_part) in seen["parts"].items():
            if name in ("offset", "slice offset"):
                continue
            # what the program reads of the pointer: the unswizzled part's address, the swizzle apart
            got, want = repr(sw_part.iterator), repr(plain_part.iterator)
            assert got.startswith(want[:-1]) and got.endswith(f", S<{c['sw'][0]},{c['sw'][1]},{c['sw'][2]}>>"), \
                (name, got, want)


def test_recast_keeps_the_address_not_the_swizzle(traced):
    for seen in traced:
        if "recast" not in seen:
            continue
        c = seen["case"]
        for got, plain in ((seen["recast"], seen["plain"]), (seen["recast_slice"], seen["slice_plain"])):
            want = cute.recast_tensor(plain, cutlass.Uint8)
            assert got.layout == want.layout and "S<" not in repr(got.iterator)
            for i in range(cute.size(want.layout)):
                assert _address(got, i) == _address(want, i), (c, i)


def tile_and_slice(smem, thr_layout, val_layout, bits_per_copy=128):
    """A 64x64 Float16 row-major tile allocated with make_swizzle(3, 4, 3), and this thread's source slice of it by a
    tiled copy of thr_layout threads by val_layout values, bits_per_copy a copy."""
    t = smem.allocate_tensor(cutlass.Float16, cute.make_layout((64, 64), stride=(64, 1)), 1024,
                             cute.make_swizzle(3, 4, 3))
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16, num_bits_per_copy=bits_per_copy)
    tc = cute.make_tiled_copy_tv(atom, thr_layout, val_layout)
    return t, tc.get_slice(cute.arch.thread_idx()[0]).partition_S(t)


def test_printed_as_cutedsl_prints_them():
    """CuTe DSL 4.8.1 prints, for a 64x64 Float16 row-major tile allocated with make_swizzle(3, 4, 3) and a tiled
    copy of 16x8 threads by 8 values: the slice `ptr<f16, smem, align<16>, S<3,4,3>> o ((8,1),4,1):((1,0),1024,0)`,
    the tile's iterator + 5 `ptr<f16, smem, S<3,4,3>>`, the recast to Int32 `ptr<i32, smem, align<1024>> o
    (64,32):(32,1)`."""
    seen = {}

    def body(smem):
        t, s = tile_and_slice(smem, cute.make_layout((16, 8), stride=(8, 1)), cute.make_layout((1, 8)))
        seen.update(slice=s, moved=t.iterator + 5, recast=cute.recast_tensor(t, cutlass.Int32), sliced=s[None, 1, None])

    trace_kernel(body, "sm_90a", 128)
    assert repr(seen["slice"].iterator) == "ptr<Float16, smem, align 16, S<3,4,3>>"
    assert str(seen["slice"].layout) == "((8,1),4,1):((1,0),1024,0)"
    assert str(seen["sliced"].layout) == "((8,1),1):((1,0),0)" and "S<3,4,3>" in repr(seen["sliced"].iterator)
    assert str(seen["moved"].type.swizzle_type) == "S<3,4,3>"
    assert str(seen["recast"].layout) == "(64,32):(32,1)" and "S<" not in repr(seen["recast"])
    assert repr(seen["slice"]) == "tensor<Float16, smem, align 16, S<3,4,3>, ((8,1),4,1):((1,0),1024,0)>"


def test_stores_land_on_the_bytes_cutedsl_stores_to():
    """The same stores compiled by CuTe DSL 4.8.1 for sm_90a write bytes 128 and 388 (the Int32 recast: unswizzled),
    416 (= (256 + 128 + 16) ^ 48, the Float16 tensor over iterator + 128, swizzled after the move) and 144 (the
    Float8 recast) of the tile."""
    def body(smem):
        t = smem.allocate_tensor(cutlass.Float16, cute.make_layout((64, 64), stride=(64, 1)), 1024,
                                 cute.make_swizzle(3, 4, 3))
        r = cute.recast_tensor(t, cutlass.Int32)
        r[1, 0] = cutlass.Int32(7)
        r[3, 1] = cutlass.Int32(9)
        u = cute.make_tensor(t.iterator + 64 * 2, cute.make_layout((8, 64), stride=(64, 1)))
        u[1, 8] = cutlass.Float16(3.0)
        cute.recast_tensor(t, cutlass.Float8E4M3FN)[1, 16] = cutlass.Float8E4M3FN(1.0)

    ptx = trace_kernel(body, "sm_90a").info["ptx"]
    stores = re.findall(r"st\.shared\.b(\d+)\s+\[[^\]+]*\+?(\d*)\],\s*([^;]+);", ptx)
    assert [(int(w), int(off or 0)) for w, off, _ in stores] == [(32, 128), (32, 388), (16, 416), (8, 144)], stores


def _composed_cases(seed, n):
    rng = random.Random(seed)
    pairs = [(cutlass.Float16, cutlass.Int32), (cutlass.Float32, cutlass.Float16), (cutlass.Uint8, cutlass.Float16),
             (cutlass.Float16, cutlass.Uint8), (cutlass.Uint8, cutlass.Float32)]
    out = []
    for _ in range(n):
        b, m = rng.randint(1, 3), rng.randint(0, 3)
        out.append(dict(sw=(b, m, rng.randint(b, 4)), offset=rng.choice([0, 2, 64, 128]),
                        tile=(1 << rng.randint(1, 4), 1 << rng.randint(3, 6)), types=rng.choice(pairs)))
    return out


COMPOSED = _composed_cases(3, 40)
RECASTS = []


def _trace_recasts(smem):
    raw = smem.allocate_tensor(cutlass.Uint8, cute.make_layout(16384), 1024)
    for c in COMPOSED:
        (b, m, s), (old, new) = c["sw"], c["types"]
        rows, cols = c["tile"]
        L = cute.make_composed_layout(cute.make_swizzle(b, m, s), c["offset"],
                                      cute.make_layout((rows, cols), stride=(cols, 1)))
        src = cute.make_tensor(cute.recast_ptr(raw.iterator, dtype=old), L)
        try:
            RECASTS.append((c, src, cute.recast_tensor(src, new)))
        except ext.DSLValueError as e:
            RECASTS.append((c, src, e))


def test_recast_of_a_composed_layout_permutes_the_same_bytes():
    """The swizzle of a composed layout counts elements: recast, the new layout's element c' lies at the byte the
    old layout's swizzle, of bytes, gives c''s logical byte; refused (at the user's line) exactly where a swizzled
    bit would fall inside a new element or the offset is no whole number of new elements."""
    RECASTS.clear()
    trace_kernel(_trace_recasts)
    done = refused = 0
    for c, src, got in RECASTS:
        (b, m, s), (old, new) = c["sw"], c["types"]
        ob, nb = old.width // 8, new.width // 8
        splits = (m + ob.bit_length() - 1 < nb.bit_length() - 1) or (c["offset"] * ob) % nb
        if isinstance(got, Exception):
            assert splits, (c, got)
            assert "test_swizzled_partition.py" in str(got) and "recast_tensor" in str(got), got
            refused += 1
            continue
        assert not splits, c
        byte_sw = (b, m + ob.bit_length() - 1, s)
        gl, outer = ext.full_layout(got), got.layout
        outer = outer.outer if hasattr(outer, "outer") else outer
        for i in range(cute.size(gl)):
            want = _swizzled(byte_sw, c["offset"] * ob + outer(i) * nb, 1)
            assert gl(i) * nb == want, (c, i)
        done += 1
    assert done > 10 and refused > 3


def test_a_swizzled_pointers_own_accesses_go_to_the_swizzled_address():
    """ptr.load()/.store() and ptr[i] of a swizzled pointer (t.iterator + k) reach the element its tensor would: the
    store of test_stores_land_on_the_bytes_cutedsl_stores_to's Float16 tensor element, through the pointer, lands on
    byte 416 too; reads and a 4-wide vector go to the swizzled bytes of their row (3: bytes 384..511, XOR 48)."""
    def body(smem):
        t = smem.allocate_tensor(cutlass.Float16, cute.make_layout((64, 64), stride=(64, 1)), 1024,
                                 cute.make_swizzle(3, 4, 3))
        p = t.iterator + 64 * 2
        (p + 64 + 8).store(cutlass.Float16(3.0))
        p[64 + 9] = p[64 + 24]
        (p + 64).store((p + 64 + 40).load(count=4))

    ptx = trace_kernel(body, "sm_90a").info["ptx"]
    stores = re.findall(r"st\.shared(?:\.v(\d))?\.b(\d+)\s+\[[^\]+]*\+?(\d*)\]", ptx)
    loads = re.findall(r"ld\.shared(?:\.v\d)?\.b\d+\s+(?:\{[^}]*\}|[^,]+),\s*\[[^\]+]*\+?(\d*)\]", ptx)
    # row 3 of the tile (bytes 384..511), swizzled by (row & 7) << 4 = 48
    written = sorted(b for v, w, off in stores for b in range(int(off or 0), int(off or 0) + int(v or 1) * int(w) // 8))
    assert written == [416, 417, 418, 419] + list(range(432, 440)), stores
    assert sorted(set(int(o or 0) for o in loads)) == [384, 480], loads
