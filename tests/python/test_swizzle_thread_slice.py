"""A thread's slice of a swizzled tensor as a plain layout with the thread's strides (CuTe DSL's partition of a
swizzled shared-memory tile; QuACK's paired f32 epilogue store reads the slice's modes): it addresses exactly
what the swizzled slice does, and keeps the swizzle where it cannot."""
import random

import pytest

from warpweave import _core
from warpweave._dsl.atoms.swizzle_slice import unswizzled_slice


def _swizzle(b, m, s, x):
    return x ^ ((x >> s) & (((1 << b) - 1) << m))


def _random_case(rng):
    """A swizzle, and a (thread, values, stages) layout over disjoint power-of-two runs of address bits."""
    b, m = rng.randint(1, 3), rng.randint(0, 4)
    s = rng.randint(b, 4)
    nbits = m + s + b + rng.randint(0, 3)
    bits = list(range(nbits))
    rng.shuffle(bits)
    cut = rng.randint(1, nbits - 1)
    thread_bits, value_bits = bits[:cut], bits[cut:]

    def modes(bs):
        # runs of consecutive bits become one mode (n = 2^run at stride 2^first), the rest single bits
        bs, out, i = sorted(bs), [], 0
        while i < len(bs):
            j = i
            while j + 1 < len(bs) and bs[j + 1] == bs[j] + 1 and rng.random() < 0.6:
                j += 1
            out.append((1 << (j - i + 1), 1 << bs[i]))
            i = j + 1
        rng.shuffle(out)
        return out

    t, v = modes(thread_bits), modes(value_bits)
    stages = rng.choice([1, 2, 3])
    shape = (tuple(n for n, _ in t), tuple(n for n, _ in v) + (1,), stages)
    stride = (tuple(d for _, d in t), tuple(d for _, d in v) + (0,), 1 << nbits)
    return (b, m, s), _core.make_layout(shape, stride)


def test_a_thread_slice_addresses_what_the_swizzled_one_does():
    rng = random.Random(24)
    given = 0
    for _ in range(300):
        (b, m, s), thr = _random_case(rng)
        offset = rng.choice([0, 1 << (m + s + b + 4)])
        composed = _core.ComposedLayout(_core.Swizzle(b, m, s), offset, thr)
        nthreads = _core.make_layout(thr.shape[0], thr.stride[0]).size()
        for t in rng.sample(range(nthreads), min(nthreads, 4)):
            coord = (t, None, None)
            found = unswizzled_slice(composed, thr, coord)
            if found is None:
                continue
            given += 1
            base, plain = found
            sliced = _core.make_layout((thr.shape[1], thr.shape[2]), (thr.stride[1], thr.stride[2]))
            thread_part = _core.crd2idx(t, _core.make_layout(thr.shape[0], thr.stride[0]))
            assert plain.size() == sliced.size()
            for i in range(sliced.size()):
                want = _swizzle(b, m, s, offset + thread_part + _core.crd2idx(i, sliced))
                assert base + _core.crd2idx(i, plain) == want, (b, m, s, thr, t, i, plain)
    # the images of single bits overlap for some (a bit the swizzle reads and the bit it writes, both values'):
    # those keep the swizzle; most are given
    assert given > 400, given


def test_the_split_follows_the_swizzled_bits():
    # Sw<2,4,3> over f32 (64,64):(64,1): a thread's 16 rows at stride 256 (bits 8-11) split into the bit the
    # swizzle reads (8, with a stride that depends on the thread) and the bits above it, which stay one mode
    thr = _core.make_layout(((32, 4), (2, 1), (16, 1, 2)), ((2, 64), (1, 0), (256, 0, 4096)))
    composed = _core.ComposedLayout(_core.Swizzle(2, 4, 3), 0, thr)
    for t in (0, 5, 77):
        base, plain = unswizzled_slice(composed, thr, (t, None, (None, None, None)))
        assert plain.shape == ((2, 1), (2, 8), 1, 2)
        assert plain.stride[1][1] == 512 and plain.stride[3] == 4096
        assert plain.stride[1][0] in (256 - 32, 256 + 32)  # bit 8 is XORed into bit 5


@pytest.mark.parametrize("thr,why", [
    (((4, 8), (2,), (3,)), "a thread mode of 3"),
    (((4, 8), (2,), (3,)), "overlapping bits"),
])
def test_slices_it_cannot_unswizzle_keep_the_swizzle(thr, why):
    if why == "a thread mode of 3":
        layout = _core.make_layout(((3, 8), 2, 4), ((2, 8), 1, 64))
    else:
        layout = _core.make_layout(((4, 8), 2, 4), ((2, 4), 1, 64))  # 4x2 and 8x4 share bit 2
    composed = _core.ComposedLayout(_core.Swizzle(2, 2, 3), 0, layout)
    assert unswizzled_slice(composed, layout, (1, None, None)) is None
