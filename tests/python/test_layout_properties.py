"""Properties of the algebra through the Python API, over random layouts (the C++ suite runs many more)."""
import pytest

import warpweave.cute as cute


def random_shape(rng, depth=2):
    if depth == 0 or rng.random() < 0.3:
        return rng.choice([1, 2, 2, 3, 4, 4, 6, 8])
    return tuple(random_shape(rng, depth - 1) if rng.random() < 0.3 else rng.choice([1, 2, 3, 4, 8])
                 for _ in range(rng.randint(1, 3)))


def flat(t):
    return [x for c in t for x in flat(c)] if isinstance(t, tuple) else [t]


def unflat(leaves, profile):
    it = iter(leaves)

    def go(p):
        return tuple(go(c) for c in p) if isinstance(p, tuple) else next(it)

    return go(profile)


def random_injective(rng, depth=2):
    shape = random_shape(rng, depth)
    leaves = flat(shape)
    order = list(range(len(leaves)))
    rng.shuffle(order)
    strides, cur = [0] * len(leaves), 1
    for i in order:
        if rng.random() < 0.25:
            cur *= rng.choice([2, 3])
        strides[i] = cur
        cur *= leaves[i]
    return cute.make_layout(shape, stride=unflat(strides, shape))


def random_any(rng):
    if rng.random() < 0.5:
        return random_injective(rng)
    shape = random_shape(rng)
    return cute.make_layout(shape, stride=unflat([rng.choice([0, 1, 2, 4, 6, 8]) for _ in flat(shape)], shape))


def test_composition_is_function_composition(rng):
    ok = 0
    for _ in range(400):
        a, b = random_any(rng), random_any(rng)
        try:
            r = cute.composition(a, b)
        except ValueError:
            continue
        ok += 1
        for i in range(cute.size(b)):
            assert r(i) == a(b(i)), f"{a} o {b} = {r} at {i}"
    assert ok > 100


def test_complement_disjoint_ordered_bounded(rng):
    for _ in range(400):
        a = random_injective(rng)
        cotarget = cute.cosize(a) * rng.choice([1, 2, 3])
        try:
            c = cute.complement(a, cotarget)
        except ValueError:
            continue
        image = {a(i) for i in range(cute.size(a))}
        values = [c(i) for i in range(cute.size(c))]
        assert values == sorted(values)
        assert not image.intersection(values[1:])
        both = cute.make_layout(a, c)
        assert cute.cosize(both) >= cotarget
        assert len({both(i) for i in range(cute.size(both))}) == cute.size(both)


def test_inverses_invert(rng):
    for _ in range(400):
        a = random_any(rng)
        r = cute.right_inverse(a)
        for i in range(cute.size(r)):
            assert a(r(i)) == i
        try:
            left = cute.left_inverse(a)
        except ValueError:
            continue  # overlapping modes, or its inverse is no layout
        injective = len({a(i) for i in range(cute.size(a))}) == cute.size(a)
        for i in range(cute.size(a)):
            if injective:
                assert left(a(i)) == i
            else:  # stride-0 modes: inverted on the image
                assert a(left(a(i))) == a(i)


def test_coalesce_keeps_function(rng):
    for _ in range(400):
        a = random_any(rng)
        c = cute.coalesce(a)
        assert cute.size(c) == cute.size(a) and cute.depth(c) <= 1
        assert [c(i) for i in range(cute.size(a))] == [a(i) for i in range(cute.size(a))]


@pytest.mark.parametrize("op", ["zipped_divide", "logical_divide"])
def test_divide_tile_mode_is_composition(rng, op):
    for _ in range(200):
        a = random_injective(rng)
        b = random_injective(rng, depth=1)
        try:
            d = getattr(cute, op)(a, b)
            comp = cute.composition(a, b)
        except ValueError:
            continue
        tile = cute.get(d, mode=[0])
        assert [tile(i) for i in range(cute.size(b))] == [comp(i) for i in range(cute.size(b))]
