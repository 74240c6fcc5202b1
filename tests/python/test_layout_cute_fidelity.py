"""The layout algebra from Python agrees with CuTe: nesting of results, complement of CuTe's test inputs, left
inverses with stride-0 modes, negative strides, coalesce by profile; bad integers give clear exceptions; CuTe
DSL's slice_, round_up, pretty_str and make_layout(shape=, stride=)."""
import random

import pytest

import warpweave.cute as cute


def L(text):
    return cute.parse_layout(text)


def values(layout):
    return [layout(i) for i in range(cute.size(layout))]


# --- nesting ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, expected", [
    (lambda: cute.blocked_product(L("3:1"), L("(4):(1)")), "((3,(4))):((1,(3)))"),
    (lambda: cute.blocked_product(L("2:6"), L("3:1")), "((2,3)):((6,1))"),
    (lambda: cute.raked_product(L("(2):(1)"), L("8:3")), "((8,(2))):((6,(1)))"),
    (lambda: cute.tiled_divide(L("(6):(1)"), (2,)), "((2),(3)):((1),(2))"),
    (lambda: cute.flat_divide(L("(3,(2,1)):(6,(1,18))"), L("(3):(1)")), "((3),2):((6),1)"),
    (lambda: cute.flat_divide(L("((1,6)):((1,1))"), (L("(1):(0)"),)), "(((1)),(6)):(((0)),(1))"),
    (lambda: cute.tiled_product(L("(4):(2)"), L("(4):(1)")), "((4),((2,2))):((2),((1,8)))"),
    (lambda: cute.tiled_product(L("2:1"), L("(8):(1)")), "(2,(8)):(1,(2))"),
    (lambda: cute.composition(L("((4,2)):((1,4))"), (1,)), "(1):(1)"),
    (lambda: cute.flat_divide(L("(9,(4,8)):(59,(13,1))"), tiler=(L("3:3"), L("(2,4):(1,8)"))),
     "(3,(2,4),3,(2,2)):(177,(13,2),59,(26,1))"),
    (lambda: cute.zipped_product(L("(2,5):(5,1)"), tiler=L("(3,4):(1,3)")), "((2,5),(3,4)):((5,1),(10,30))"),
    (lambda: cute.flat_product(L("(2,5):(5,1)"), tiler=L("(3,4):(1,3)")), "(2,5,3,4):(5,1,10,30)"),
])
def test_nesting_follows_cute(call, expected):
    assert str(call()) == expected


def test_tiled_and_flat_only_regroup(rng=random.Random(5)):
    checked = 0
    for _ in range(300):
        shape = tuple(rng.choice([1, 2, 3, 4]) for _ in range(rng.randint(1, 3)))
        a = cute.make_layout(shape if rng.random() < 0.7 else (shape,))
        t = cute.make_layout(tuple(rng.choice([1, 2]) for _ in range(rng.randint(1, 2))))
        if rng.random() < 0.5:
            t = cute.make_layout((cute.size(t),))
        for z_op, t_op, f_op in [("zipped_divide", "tiled_divide", "flat_divide"),
                                 ("zipped_product", "tiled_product", "flat_product")]:
            try:
                z = getattr(cute, z_op)(a, t)
            except ValueError:
                continue
            td, fd = getattr(cute, t_op)(a, t), getattr(cute, f_op)(a, t)
            assert values(td) == values(z) == values(fd)

            def unpacked(m):
                return len(m) if isinstance(m, tuple) and len(m) > 1 else 1
            assert cute.rank(td) == 1 + unpacked(cute.shape(z, mode=[1]))
            assert cute.rank(fd) == unpacked(cute.shape(z, mode=[0])) + unpacked(cute.shape(z, mode=[1]))
            checked += 1
    assert checked > 200


# --- complement -------------------------------------------------------------------------------------------------

CUTE_COMPLEMENT_INPUTS = [
    ("1:0", [None, 2, 5, (2, 2)]), ("1:1", [None, 2, 5, (2, 2)]), ("1:2", [1, 2, 8, 5, (2, 2)]),
    ("4:0", [1, 2, 8]), ("4:1", [1, 2, 8]), ("4:2", [1, None, 16, 19, (2, 2)]), ("4:4", [1, None, 17, (2, 2)]),
    ("(2,4)", [None]), ("(2,3)", [None]), ("(2,4):(1,4)", [None]), ("(2,4):(1,6)", [None]),
    ("(2,4,8):(8,1,64)", [None]), ("(2,4,8):(8,1,0)", [None, 460]), ("((2,2),(2,2)):((1,4),(8,32))", [None]),
    ("((2,2),(2,2)):((1,32),(8,4))", [None]), ("(4,6):(1,6)", [None]), ("(4,2):(1,10)", [None]),
    ("(4,2):(1,16)", [None]), ("12", [1, None, 53, 128]), ("12:2", [1, None, 53, 128]), ("(3,6):(1,3)", [None]),
    ("(3,6):(1,9)", [None]), ("(3,6):(1,10)", [None]), ("64", [(32, 4, 4)]),
]


@pytest.mark.parametrize("text, cotargets", CUTE_COMPLEMENT_INPUTS)
def test_complement_of_cute_test_inputs(text, cotargets):
    a = L(text)
    for cot in cotargets:
        cot = cute.cosize(a) if cot is None else cot
        r = cute.complement(a, cot)
        n = cute.size(cot)
        both = cute.make_layout(a, r)
        rv = values(r)
        assert rv == sorted(set(rv))                               # ordered
        assert not set(values(a)).intersection(rv[1:])             # disjoint
        assert cute.cosize(both) >= n                              # covers the cotarget
        assert cute.cosize(r) <= cute.round_up(n, cute.cosize(a))  # and not much more
        assert cute.size(r) >= n // cute.size(cute.filter(a))
        assert cute.size(cute.complement(both)) == 1
        assert cute.complement(cute.complement(r, cute.cosize(a)), cot) == r


# Gaps between a's modes that are no whole number of copies of the modes below: CuTe rounds them down and gives a
# complement shorter than size(cotarget) / size(a) (CuTe DSL 4.8.1's answers).
@pytest.mark.parametrize("text, cotarget, expected", [
    ("((4,6)):((1,6))", 72, "2:36"), ("(4,6):(1,6)", 36, "1:0"), ("(4,4):(6,1)", 96, "4:24"),
    ("(4,4):(6,1)", 44, "2:24"), ("(2,2):(1,5)", 30, "(2,3):(2,10)"), ("(3,2):(1,5)", 30, "3:10"),
    ("3:2", 12, "(2,2):(1,6)"), ("5:3", 7, "3:1"),
])
def test_complement_rounds_gaps_down_as_cute_does(text, cotarget, expected):
    assert str(cute.complement(L(text), cotarget)) == expected


def _gapped_layout(rng):
    """An injective layout of 1 to 3 modes in a random order whose sorted strides leave gaps, whole or not."""
    shapes, strides, span = [], [], 1
    for _ in range(rng.randint(1, 3)):
        n = rng.randint(1, 5)
        d = span * rng.randint(1, 3) + rng.choice([0, 0, rng.randint(1, span)]) if span > 1 else rng.randint(1, 3)
        shapes.append(n)
        strides.append(d)
        span = d * n
    order = list(range(len(shapes)))
    rng.shuffle(order)
    return cute.make_layout(tuple(shapes[i] for i in order), stride=tuple(strides[i] for i in order))


def _flat(t):
    return cute.flatten(t) if isinstance(t, tuple) else (t,)


def test_complement_properties_where_gaps_round_down():
    rng = random.Random(36)
    rounded = 0
    for _ in range(300):
        a = _gapped_layout(rng)
        n = rng.choice([1, 2, 7, 24, 72, 100, 256])
        r = cute.complement(a, n)
        rv, av = values(r), set(values(a))
        assert rv == sorted(set(rv)), (a, n, r)                   # ordered
        assert not av.intersection(rv[1:]), (a, n, r)             # disjoint
        both = cute.make_layout(a, r)
        assert len(set(values(both))) == cute.size(both)          # a beside its complement stays injective
        assert cute.size(cute.complement(both)) == 1              # and leaves nothing below its cosize
        # Modes of extent 1 reach nothing: in stride order, the others span B, the extent of a's copy that the
        # complement repeats.
        modes = [(d, k) for d, k in zip(_flat(a.stride), _flat(a.shape)) if k > 1]
        span, whole = 1, True
        for d, k in sorted(modes):
            whole = whole and d % span == 0
            span = d * k
        # what lies in the gaps below B, repeated at multiples of B as many times as reach n, no more
        gaps = [v for v in rv if v < span]
        assert rv == sorted(g + k * span for k in range(max(1, -(-n // span))) for g in gaps), (a, n, r)
        if whole:  # gaps of whole copies: CuTe's bound size(r) >= size(cotarget) / size(a) holds
            assert cute.size(r) >= n // cute.size(a), (a, n, r)
        else:
            rounded += 1
    assert rounded > 30  # the generator does make gaps that round down


def test_a_divide_refuses_a_complement_that_misses_part_of_its_target():
    with pytest.raises(ValueError, match="misses part of the cotarget"):
        cute.logical_divide(L("96:1"), L("(4,4):(6,1)"))
    with pytest.raises(ValueError, match="not injective"):
        cute.complement(L("(2,2):(1,1)"), 8)  # CuTe's answer (0,4):(2,2) is no layout of what it misses


@pytest.mark.parametrize("cotarget", [-8, 0, (2, -2), (4, 0)])
def test_complement_refuses_cotarget_below_one(cotarget):
    with pytest.raises(ValueError, match="positive"):
        cute.complement(L("4:2"), cotarget)


@pytest.mark.parametrize("cotarget", [(), ((),), (4, ())])
def test_complement_refuses_empty_tuple_cotarget(cotarget):
    with pytest.raises(ValueError, match="empty tuple"):
        cute.complement(L("(4,4):(4,1)"), cotarget)


# --- inverses and composition -----------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["(4,2):(1,0)", "(2,4):(0,2)", "(2,2,2):(4,0,1)", "((3,7)):((0,0))", "4:0",
                                  "(2,4,4,6):(4,1,0,8)", "(2,2):(1,1)", "((8,2)):((2,4))", "((3),(8,2)):((0),(1,1))"])
def test_left_inverse_inverts_on_the_image(text):
    a = L(text)
    r = cute.left_inverse(a)
    assert [a(r(a(i))) for i in range(cute.size(a))] == values(a)


def test_left_inverse_still_refuses_overlaps_and_negative_strides():
    with pytest.raises(ValueError, match="left_inverse"):
        cute.left_inverse(L("(8,2,3):(16,16,2)"))  # CuTe's construction gives no quasi-inverse here
    with pytest.raises(ValueError, match="negative stride"):
        cute.left_inverse(L("4:-1"))


@pytest.mark.parametrize("a, b", [("4:-1", "4:1"), ("4:1", "4:-1"), ("4:-1", "4:-1"), ("4:1", "4:-2"),
                                  ("(4,4):(-1,1)", "(2,4,2)"), ("(4,4):(-1,1)", "(2,4,2):(1,4,2)"),
                                  ("(1,(2,4)):(0,(-1,512))", "2:-1"), ("(1,(2,4)):(0,(-1,512))", "4:-1")])
def test_composition_with_negative_strides(a, b):
    la, lb = L(a), L(b)
    r = cute.composition(la, lb)
    assert values(r) == [la(lb(i)) for i in range(cute.size(lb))]


def test_composition_refuses_mixed_signs_over_several_modes():
    with pytest.raises(ValueError, match="both signs"):
        cute.composition(L("(3,4,2):(1,36,6)"), L("(3,3):(-3,1)"))


# --- coalesce by profile ----------------------------------------------------------------------------------------

def test_coalesce_by_profile_positional_keyword_and_composed():
    a = L("(2,(1,6)):(1,(6,2))")
    assert str(cute.coalesce(a, (1, 1))) == str(cute.coalesce(a, target_profile=(1, 1))) == "(2,6):(1,2)"
    sw = cute.make_composed_layout(cute.make_swizzle(1, 0, 2), 0, L("((2,2),(2,(1,2))):((1,2),(4,(8,8)))"))
    c = cute.coalesce(sw, target_profile=(1, 1))
    assert str(c.outer) == "(4,4):(1,4)"
    assert [c(i) for i in range(16)] == [sw(i) for i in range(16)]


# --- integers from Python ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, exc", [
    (lambda: cute.get(L("(4,2):(1,4)"), mode=[2 ** 40]), ValueError),
    (lambda: cute.get(L("(4,2):(1,4)"), mode=2 ** 70), ValueError),
    (lambda: cute.get(L("(4,2):(1,4)"), mode=[-1]), ValueError),
    (lambda: cute.get(L("(4,2):(1,4)"), mode=["a"]), TypeError),
    (lambda: cute.get(L("(4,2):(1,4)"), mode=1.5), TypeError),
    (lambda: cute.select(L("(4,2):(1,4)"), mode=[0, 2 ** 40]), ValueError),
    (lambda: cute.size(L("(4,2):(1,4)"), mode=[2 ** 40]), ValueError),
    (lambda: cute.group_modes(L("(4,2):(1,4)"), 0, 2 ** 40), ValueError),
    (lambda: cute.append(L("(4,2):(1,4)"), L("1:0"), up_to_rank=2 ** 40), ValueError),
    (lambda: cute.append(L("(4,2):(1,4)"), L("1:0"), up_to_rank=10 ** 7), ValueError),
    (lambda: cute.prepend(L("(4,2):(1,4)"), L("1:0"), up_to_rank=-1), ValueError),
    (lambda: cute.recast_layout(2 ** 40, 16, L("4:1")), ValueError),
    (lambda: cute.make_swizzle(2 ** 40, 1, 1), ValueError),
    (lambda: cute.ScaledBasis(1, [2 ** 40]), ValueError),
])
def test_bad_integers_raise_clear_errors(call, exc):
    with pytest.raises(exc) as info:
        call()
    assert "bad_cast" not in str(info.value) and "incompatible function arguments" not in str(info.value)


# --- CuTe DSL names ---------------------------------------------------------------------------------------------

def test_make_layout_keywords():
    assert cute.make_layout(shape=(4, 2), stride=(2, 1)) == cute.make_layout((4, 2), stride=(2, 1))
    assert str(cute.make_layout(shape=(4, 2))) == "(4,2):(1,4)"
    with pytest.raises(TypeError):
        cute.make_layout((4, 2), shape=(4, 2))


def test_slice_():
    a = L("((2,3),4):((1,2),6)")
    assert str(cute.slice_(a, (None, 1))) == "((2,3)):((1,2))"
    assert str(cute.slice_(a, ((None, 0), None))) == "(2,4):(1,6)"
    assert cute.slice_(a, None) == a
    assert cute.slice_(((2, 3), 4), ((0, None), None)) == (3, 4)
    # Property: slicing keeps the function of the free coordinates, offset by the fixed ones.
    s = cute.slice_(a, ((None, 2), None))
    for i in range(2):
        for j in range(4):
            assert s((i, j)) + 0 == a(((i, 2), j)) - a(((0, 2), 0))
    with pytest.raises(ValueError):
        cute.slice_(a, (None, None, None))


def test_round_up():
    assert cute.round_up(10, 4) == 12 and cute.round_up(12, 4) == 12 and cute.round_up(1, 1) == 1
    assert cute.round_up((10, 7, 5), (4, 8)) == (12, 8, 5)
    for a in range(1, 50):
        for b in range(1, 9):
            r = cute.round_up(a, b)
            assert r % b == 0 and a <= r < a + b
    with pytest.raises(ValueError):
        cute.round_up(3, 0)
    with pytest.raises(ValueError):
        cute.round_up((3,), (1, 2))


def test_pretty_str():
    assert cute.pretty_str(L("(4,2):(1,4)")) == "(4,2):(1,4)"
    assert cute.pretty_str((4, (2, 3))) == "(4,(2,3))"
    assert cute.pretty_str(7) == "7"


def test_a_basis_stride_scaled_by_an_integer_steps_as_far_along_the_same_mode():
    # a TMA coordinate tensor's strides rescaled by a program (FlashAttention's packed GQA: heads per KV head)
    b = cute.ScaledBasis(2, (0, 1))
    assert b * 3 == cute.ScaledBasis(6, (0, 1)) and 3 * b == b * 3
    L = cute.make_layout((4, 8), stride=(b * 4, cute.ScaledBasis(1, 1)))
    assert str(L) == "(4,8):(8@0@1,1@1)"
    with pytest.raises(TypeError):
        b * "x"
