"""Offsets back to coordinates (CuTe's Layout.get_hier_coord / get_flat_coord / get_1d_coord), over random compact
layouts: a compact layout maps its coordinates onto [0, size) one to one, so each offset has one coordinate."""
import pytest

import warpweave.cute as cute
from warpweave._core import SymInt, evaluate


def random_shape(rng, depth=2):
    if depth == 0 or rng.random() < 0.3:
        return rng.choice([1, 2, 3, 4, 5, 8])
    return tuple(random_shape(rng, depth - 1) for _ in range(rng.randint(1, 3)))


def leaves(t):
    return [x for c in t for x in leaves(c)] if isinstance(t, tuple) else [t]


def unflat(values, profile):
    it = iter(values)

    def go(p):
        return tuple(go(c) for c in p) if isinstance(p, tuple) else next(it)

    return go(profile)


def random_compact(rng):
    """A layout whose image is exactly [0, size): its leaves' strides are the running products of their extents in
    a random order."""
    shape = random_shape(rng)
    while cute.size(shape) > 256:
        shape = random_shape(rng)
    ext = leaves(shape)
    order = list(range(len(ext)))
    rng.shuffle(order)
    strides, cur = [0] * len(ext), 1
    for i in order:
        strides[i] = cur if ext[i] > 1 else rng.choice([0, cur])   # extent-1 leaves: any stride
        cur *= ext[i]
    return cute.make_layout(shape, stride=unflat(strides, shape))


def colex(coord, shape):
    """Colexicographic 1-D coordinate of a hierarchical coordinate."""
    if not isinstance(shape, tuple):
        return coord
    r, scale = 0, 1
    for c, s in zip(coord, shape):
        r += colex(c, s) * scale
        scale *= cute.size(s)
    return r


def congruent(a, b):
    if isinstance(b, tuple):
        return isinstance(a, tuple) and len(a) == len(b) and all(congruent(x, y) for x, y in zip(a, b))
    return not isinstance(a, tuple)


def test_hier_coord_inverts_a_compact_layout(rng):
    for _ in range(300):
        lay = random_compact(rng)
        seen = set()
        for idx in range(cute.size(lay)):
            c = lay.get_hier_coord(idx)
            assert congruent(c, lay.shape), f"{lay}: {c} not congruent with the shape"
            assert lay(c) == idx, f"{lay}({c}) = {lay(c)}, expected {idx}"
            seen.add(repr(c))
        assert len(seen) == cute.size(lay)


def test_flat_coord_is_one_colex_coordinate_per_mode(rng):
    for _ in range(300):
        lay = random_compact(rng)
        shape = lay.shape
        for idx in range(cute.size(lay)):
            hier = lay.get_hier_coord(idx)
            flat = lay.get_flat_coord(idx)
            if isinstance(shape, tuple) and len(shape) > 1:
                assert isinstance(flat, tuple) and len(flat) == len(shape)
                assert all(isinstance(x, int) for x in flat)
                assert flat == tuple(colex(h, s) for h, s in zip(hier, shape))
                # Each mode's 1-D coordinate evaluates that mode: the modes' offsets add up to idx.
                assert sum(lay[i](flat[i]) for i in range(len(shape))) == idx
            else:  # rank 1: CuTe gives the integer itself
                assert flat == colex(hier, shape) and lay(flat) == idx
            assert lay.get_1d_coord(idx) == colex(hier, shape)
            assert lay(lay.get_1d_coord(idx)) == idx


def test_cute_dsl_cluster_swizzle_idiom():
    # CuTe DSL's Hopper GEMM raster: ((8, n), m):((1, 8m), 8) walks 8 clusters down M before moving along N.
    m, n = 3, 2
    lay = cute.make_layout(((8, n), m), stride=((1, 8 * m), 8))
    got = [lay.get_flat_coord(i) for i in range(cute.size(lay))]
    assert got[:9] == [(0, 0), (1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (6, 0), (7, 0), (0, 1)]
    assert sorted(got) == sorted((a, b) for a in range(8 * n) for b in range(m))
    # A cluster's CTA rank back to its (m, n, k) place.
    assert cute.make_layout((2, 2, 1)).get_flat_coord(3) == (1, 1, 0)


def test_dynamic_index_and_shape_give_the_same_coordinates(rng):
    idx, ext = SymInt.symbol(901), SymInt.symbol(902)
    lay = cute.make_layout(((4, ext), 3), stride=((1, 12), 4))
    for n in (1, 2, 5):
        static = cute.make_layout(((4, n), 3), stride=((1, 12), 4))
        for i in range(cute.size(static)):
            env = {901: i, 902: n}
            dyn = lay.get_flat_coord(idx)
            assert tuple(x.evaluate(env) if isinstance(x, SymInt) else x for x in dyn) == static.get_flat_coord(i)
            hier = lay.get_hier_coord(idx)
            assert evaluate(hier, env) == static.get_hier_coord(i)


def test_non_compact_modes_are_refused():
    with pytest.raises(ValueError, match="compact"):
        cute.make_layout((4, 2), stride=(0, 4)).get_flat_coord(3)
    with pytest.raises(ValueError, match="compact"):
        cute.make_layout(4, stride=-1).get_hier_coord(1)
    with pytest.raises(TypeError):
        cute.make_layout(4).get_hier_coord((1, 2))


def test_cute_dsl_source_location_keywords_are_accepted(rng):
    # CuTe DSL programs pass loc= and ip= along (a tile scheduler's `layout.get_hier_coord(idx, loc=loc, ip=ip)`);
    # they change nothing.
    for _ in range(20):
        lay = cute.make_layout(random_shape(rng))
        for idx in range(cute.size(lay)):
            assert lay.get_hier_coord(idx, loc=None, ip=None) == lay.get_hier_coord(idx)
            assert lay.get_flat_coord(idx, loc=None, ip=None) == lay.get_flat_coord(idx)
            assert lay.get_1d_coord(idx, loc=None, ip=None) == lay.get_1d_coord(idx)
            assert lay(lay.get_hier_coord(idx, loc=None)) == idx
    with pytest.raises(TypeError):
        cute.make_layout((2, 3)).get_hier_coord(1, None)   # the keywords are keywords only
