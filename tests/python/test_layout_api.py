"""The layout algebra from Python: CuTe DSL's names and conventions, CuTe's notation, errors as exceptions."""
import pytest

import warpweave.cute as cute


def L(text):
    return cute.parse_layout(text)


def test_make_layout_and_notation():
    a = cute.make_layout((4, (2, 3)))
    assert str(a) == "(4,(2,3)):(1,(4,8))"
    assert a.shape == (4, (2, 3)) and a.stride == (1, (4, 8))
    b = cute.make_layout((2, 2), stride=(24, 2))
    assert str(b) == "(2,2):(24,2)"
    assert cute.parse_layout(str(a)) == a
    assert str(cute.make_layout(cute.make_layout(4, stride=2), cute.make_layout(3, stride=8))) == "(4,3):(2,8)"


def test_queries_with_mode():
    a = L("((2,2),3):((24,2),8)")
    assert cute.size(a) == 12
    assert cute.size(a, mode=[0]) == 4
    assert cute.size(a, mode=[0, 1]) == 2
    assert cute.cosize(a) == 24 + 2 + 16 + 1
    assert cute.rank(a) == 2 and cute.depth(a) == 2
    assert cute.shape(a, mode=[0]) == (2, 2)
    assert cute.stride(a, mode=[1]) == 8
    assert str(cute.get(a, mode=[0])) == "(2,2):(24,2)"
    assert str(cute.select(a, mode=[1, 0])) == "(3,(2,2)):(8,(24,2))"
    assert cute.size((4, (2, 3))) == 24
    assert cute.rank((4, (2, 3))) == 2


def test_evaluation():
    a = L("(4,(2,3)):(1,(4,8))")
    assert a(5) == 5
    assert a((1, (1, 2))) == 21
    assert cute.crd2idx((1, (1, 2)), a) == 21
    assert cute.idx2crd(13, (4, (2, 3))) == (1, (1, 1))


def test_documented_algebra():
    assert str(cute.composition(L("(6,2):(8,2)"), L("(4,3):(3,1)"))) == "((2,2),3):((24,2),8)"
    a = L("(12,(4,8)):(59,(13,1))")
    assert str(cute.composition(a, (L("3:4"), L("8:2")))) == "(3,(2,4)):(236,(26,1))"
    assert str(cute.composition(a, (3, 8))) == "(3,(4,2)):(59,(13,1))"
    assert str(cute.complement(L("(2,2):(1,6)"), 24)) == "(3,2):(2,12)"
    assert str(cute.coalesce(L("(2,(1,6)):(1,(6,2))"))) == "12:1"
    assert str(cute.coalesce(L("(2,(1,6)):(1,(6,2))"), target_profile=(1, 1))) == "(2,6):(1,2)"
    assert str(cute.logical_divide(L("(4,2,3):(2,1,8)"), L("4:2"))) == "((2,2),(2,3)):((4,1),(2,8))"
    m = L("(16,64):(64,1)")
    assert str(cute.zipped_divide(m, (4, 8))) == "((4,8),(4,8)):((64,1),(256,8))"
    assert str(cute.tiled_divide(m, (4, 8))) == "((4,8),4,8):((64,1),256,8)"
    assert str(cute.flat_divide(m, (4, 8))) == "(4,8,4,8):(64,1,256,8)"
    assert str(cute.logical_product(L("(2,2):(4,1)"), L("6:1"))) == "((2,2),(2,3)):((4,1),(2,8))"
    # A block with a gap between its modes: the complement's rounded rest is short (2:36 for three copies), and the
    # product composes past it, as CuTe does; complement gives CuTe's 2:36, and a divide, which would silently miss
    # part of its target with it, refuses it.
    p, cute_answer = cute.logical_product(L("((4,6)):((1,6))"), L("3:1")), L("(((4,6)),(3)):(((1,6)),(36))")
    assert str(p) in ("(((4,6)),3):(((1,6)),36)", str(cute_answer))
    assert [p(i) for i in range(cute.size(p))] == [cute_answer(i) for i in range(cute.size(cute_answer))]
    assert str(cute.complement(L("((4,6)):((1,6))"), 72)) == "2:36"
    with pytest.raises(ValueError, match="misses part of the cotarget"):
        cute.logical_divide(L("72:1"), L("(4,6):(1,6)"))
    assert str(cute.blocked_product(L("(2,5):(5,1)"), L("(3,4):(1,3)"))) == "((2,3),(5,4)):((5,10),(1,30))"
    assert str(cute.raked_product(L("(2,5):(5,1)"), L("(3,4):(1,3)"))) == "((3,2),(4,5)):((10,5),(30,1))"
    assert str(cute.right_inverse(L("(4,8):(8,1)"))) == "(8,4):(4,1)"
    assert str(cute.left_inverse(L("4:2"))) == "(2,4):(0,1)"
    assert cute.max_common_vector(L("(8,4):(1,16)"), L("(8,4):(1,8)")) == 8
    assert str(cute.recast_layout(32, 16, L("(8,4):(1,8)"))) == "(4,4):(1,4)"
    assert str(cute.tile_to_shape(L("(8,8):(8,1)"), (32, 16))) == "((8,4),(8,2)):((8,64),(1,256))"
    assert cute.ceil_div((1000, 1003), (4, 128)) == (250, 8)
    assert str(cute.make_ordered_layout((4, 8), order=(1, 0))) == "(4,8):(8,1)"
    assert str(cute.filter(L("(4,2,3):(1,0,4)"))) == "12:1"
    assert str(cute.flatten(L("((2,3),(4,5)):((1,2),(6,24))"))) == "(2,3,4,5):(1,2,6,24)"
    assert str(cute.group_modes(L("(2,3,4):(1,2,6)"), 0, 2)) == "((2,3),4):((1,2),6)"
    assert str(cute.append(L("4:1"), L("2:4"))) == "(4,2):(1,4)"
    assert str(cute.prepend(L("4:1"), L("2:4"))) == "(2,4):(4,1)"


def test_layout_tv_and_identity():
    tiler, tv = cute.make_layout_tv(cute.make_layout((4, 32), stride=(32, 1)), cute.make_layout((1, 4), stride=(4, 1)))
    assert tiler == (4, 128)
    for t in range(128):
        for v in range(4):
            assert tv((t, v)) == (t // 32) + 4 * (4 * (t % 32) + v)
    ident = cute.make_identity_layout((4, 8))
    assert str(ident) == "(4,8):(1@0,1@1)"
    assert ident((3, 5)) == (3, 5)
    assert ident(13) == (1, 3)


def test_swizzle_and_composed():
    sw = cute.make_swizzle(3, 4, 3)
    assert str(sw) == "S<3,4,3>"   # as CuTe DSL prints it
    assert sw(0b1110000000) == 0b1110000000 ^ 0b0001110000
    c = cute.make_composed_layout(sw, 0, cute.make_layout((8, 64), stride=(64, 1)))
    assert str(c) == "S<3,4,3> o 0 o (8,64):(64,1)"
    assert cute.parse_layout(str(c)) == c
    assert c((1, 0)) == sw(64)
    t = cute.tile_to_shape(c, (64, 64))
    assert isinstance(t, cute.ComposedLayout) and cute.size(t) == 64 * 64
    assert cute.composition(sw, cute.make_layout(8)) == cute.make_composed_layout(sw, 0, cute.make_layout(8))


def test_hashable_and_comparable():
    a, b = L("(4,8):(1,4)"), cute.make_layout((4, 8))
    assert a == b and hash(a) == hash(b)
    assert a != L("(4,8):(8,1)")
    assert len({a, b, L("8:1")}) == 2
    d = {a: "x"}
    assert d[b] == "x"
    assert a != "(4,8):(1,4)"


@pytest.mark.parametrize(
    "call, exc, words",
    [
        (lambda: cute.make_layout((4, 2), stride=(1, 2, 3)), ValueError, "not congruent"),
        (lambda: cute.make_layout((4, 0)), ValueError, "positive"),
        (lambda: cute.make_layout((4, -1)), ValueError, "positive"),
        (lambda: cute.composition(L("(3,4):(1,10)"), L("4:2")), ValueError, "composition((3,4):(1,10), 4:2)"),
        (lambda: cute.complement(L("(2,2):(1,1)"), 8), ValueError, "not injective"),
        (lambda: cute.left_inverse(L("(8,2,3):(16,16,2)")), ValueError, "left_inverse((8,2,3):(16,16,2))"),
        (lambda: cute.tile_to_shape(L("(3,3):(1,3)"), (8, 8)), ValueError, "does not divide"),
        (lambda: cute.parse_layout("(4,2):(1,2"), ValueError, "column"),
        (lambda: cute.parse_layout("(a,2)"), ValueError, "parse_layout"),
        (lambda: cute.make_swizzle(3, 4, 2), ValueError, "make_swizzle"),
        (lambda: cute.make_layout(("a", 2)), TypeError, "expected an integer"),
        (lambda: cute.make_layout((4.0, 2)), TypeError, "float"),
        (lambda: cute.make_layout((True, 2)), TypeError, "bool"),
        (lambda: cute.parse_layout(42), TypeError, "str"),
        (lambda: cute.size("x"), TypeError, "size"),
        (lambda: cute.composition(L("(4,8):(1,4)"), (2, 2, 2)), ValueError, "more modes"),
        (lambda: cute.complement(cute.make_identity_layout((2, 2)), 8), TypeError, "integer strides"),
        (lambda: cute.recast_layout(0, 16, L("4:1")), ValueError, "positive"),
        (lambda: cute.make_layout((1 << 40, 1 << 40)).size(), ValueError, "overflow"),
    ],
)
def test_bad_input_raises(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    assert words in str(info.value)


def test_tensor_like_objects_pass_through():
    class FakeTensor:
        def __init__(self, layout):
            self.layout = layout

        def _ww_with_layout(self, layout):
            return FakeTensor(layout)

    t = FakeTensor(L("(16,64):(64,1)"))
    z = cute.zipped_divide(t, (4, 8))
    assert isinstance(z, FakeTensor) and str(z.layout) == "((4,8),(4,8)):((64,1),(256,8))"
    assert cute.size(t) == 1024


def test_dynamic_integers():
    m = cute.SymInt.symbol(1, name="M")
    n = cute.SymInt.symbol(2, divisibility=8, name="N")
    row = cute.make_layout((m, n), stride=(n, 1))
    assert str(row) == "(?,?):(?,1)"
    z = cute.zipped_divide(row, (4, 128))
    assert str(z) == "((4,128),(?,?)):((?,1),(?,128))"
    rest = cute.shape(z, mode=[1])
    assert rest[0].evaluate({1: 1000, 2: 1024}) == 250
    assert rest[1].evaluate({1: 1000, 2: 1024}) == 8
    col = cute.make_layout((m, n))
    c = cute.coalesce(col)
    assert c.stride == 1 and c.shape.same(m * n)
    assert (m * 4 // 4).same(m)
    assert ((n * 2) % 16).evaluate({2: 24}) == 48 % 16


def test_layouts_index_by_mode_and_know_their_contiguous_alignment():
    # CuTe DSL programs read mode i as layout[i] and widen copies by layout[i].max_alignment.
    col = cute.make_layout((256, 64), stride=(1, 256))
    assert col[0] == cute.make_layout(256, stride=1) and col[1] == cute.make_layout(64, stride=256)
    nested = cute.make_layout(((2, 4), 3), stride=((1, 2), 8))
    assert nested[0, 1] == cute.get(nested, mode=[0, 1])
    assert col[0].max_alignment == 256 and col.max_alignment == 256
    assert cute.make_layout((1000, 4), stride=(1, 1000))[0].max_alignment == 1000  # 1000 % 16 != 0: not widened
    assert cute.make_layout((8, 4), stride=(4, 1)).max_alignment == 1               # mode 0 is not contiguous
    from warpweave import _core

    m = _core.SymInt.symbol(7, divisibility=16)  # a dynamic extent known to be a multiple of 16
    assert cute.make_layout((m, 8), stride=(1, m)).max_alignment == 16
    with pytest.raises((IndexError, ValueError)):
        col[2]


def test_append_and_prepend_on_a_composed_layout_act_on_its_outer_layout():
    # CuTe DSL's programs stage a swizzled shared-memory layout by appending a stage mode to it.
    sw = cute.make_swizzle(3, 4, 3)
    c = cute.make_composed_layout(sw, 0, cute.make_layout((8, 64), stride=(64, 1)))
    staged = cute.append(c, cute.make_layout(4, stride=512))
    assert isinstance(staged, cute.ComposedLayout) and staged.inner == c.inner and staged.offset == c.offset
    assert staged.outer == cute.make_layout((8, 64, 4), stride=(64, 1, 512))
    assert cute.prepend(c, cute.make_layout(4, stride=512)).outer == cute.make_layout((4, 8, 64), stride=(512, 64, 1))
    assert cute.append(c, cute.make_layout(1, stride=0), up_to_rank=3).outer.shape == (8, 64, 1)
    # the staged layout maps stage s's coordinates as the unstaged one does, offset by s * 512 before the swizzle
    for s in range(4):
        for i in range(0, 8 * 64, 37):
            m, k = i % 8, i // 8
            assert staged((m, k, s)) == c.inner(c.outer((m, k)) + 512 * s)


def test_rank_and_depth_of_int_tuples_with_run_time_leaves():
    # A run-time extent (a fake tensor's symbolic one, a traced integer) is a leaf like a Python int: libraries ask
    # cute.rank(t.shape[0]) of a dynamic mode before deciding how to index it.
    import warpweave as cutlass

    s = cute.sym_int()
    for leaf in (s, cutlass.Int32(7), 7):
        assert cute.rank(leaf) == 1 and cute.depth(leaf) == 0
        assert cute.rank((leaf, (2, leaf))) == 2 and cute.depth((leaf, (2, leaf))) == 2
        assert cute.rank((leaf, (2, leaf)), mode=[1]) == 2


def _profiles(depth, rng):
    """Random IntTuples and a second one of the same hierarchy (different values)."""
    if depth == 0 or rng.random() < 0.3:
        return rng.randint(1, 9), rng.randint(1, 9)
    pairs = [_profiles(depth - 1, rng) for _ in range(rng.randint(1, 3))]
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def test_congruence_is_equality_of_hierarchies_and_weak_congruence_coarsens():
    import random

    rng = random.Random(5)
    for _ in range(300):
        a, b = _profiles(3, rng)
        assert cute.is_congruent(a, b) and cute.is_congruent(b, a)
        assert cute.is_weakly_congruent(a, b) and cute.is_weakly_congruent(1, b)
        assert cute.is_congruent(cute.make_layout(a), b)
        wrapped = (b, 1)
        assert not cute.is_congruent(a, wrapped) or a == ()
        if isinstance(b, tuple):
            # a leaf in place of a mode: weakly congruent one way only
            coarse = (1,) + b[1:]
            assert cute.is_weakly_congruent(coarse, b)
            if isinstance(b[0], tuple):
                assert not cute.is_weakly_congruent(b, coarse) and not cute.is_congruent(b, coarse)
    assert cute.is_congruent(((1, 1), (1, 1)), ((4, 2), (8, 1)))
    assert not cute.is_congruent(((1, 1), (1, 1)), ((4, 2), 8))
    assert not cute.is_weakly_congruent((1, 2), (1, 2, 3))


def test_a_mode_of_a_composed_layout_keeps_its_swizzle_and_offset():
    # get(composed, mode) and composed[i]: the outer layout's mode under the same swizzle and offset, so that each
    # element of the mode maps where the whole layout maps it
    sw = cute.make_swizzle(3, 4, 3)
    c = cute.make_composed_layout(sw, 5, cute.make_layout(((8, 2), 4, 3), stride=((1, 8), 16, 64)))
    first = cute.get(c, mode=[0])
    assert str(first) == "S<3,4,3> o 5 o (8,2):(1,8)" and str(c[0]) == str(first)
    assert str(cute.get(c, mode=[0, 1])) == str(c[0][1]) == "S<3,4,3> o 5 o 2:8"
    for i in range(cute.size(first)):
        assert first(i) == c((i, 0, 0))
    with pytest.raises(ValueError, match="out of range"):
        c[3]
