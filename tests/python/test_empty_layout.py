"""CuTe's rank-0 layout ():() (cute.make_layout(())): no modes, one element at offset 0. Programs build a layout
mode by mode onto it, as CuTe DSL's Hopper FMHA separates an accumulator's value modes:
append(append(make_layout(()), L0), L1) is the layout of modes L0 and L1."""
import pytest

import warpweave.cute as cute


def test_the_empty_layout_has_no_modes_and_one_element():
    e = cute.make_layout(())
    assert cute.rank(e) == 0 and cute.size(e) == 1 and e(()) == 0
    assert str(e) == "():()" and e == cute.make_layout((), stride=())


@pytest.mark.parametrize("modes", [
    [cute.make_layout(4)],
    [cute.make_layout((2, 3), stride=(1, 2)), cute.make_layout(4, stride=8)],
    [cute.make_layout(2, stride=64), cute.make_layout((2, 16), stride=(8, 512)), cute.make_layout(3, stride=0)],
])
def test_appending_modes_to_the_empty_layout_builds_the_layout_of_those_modes(modes):
    built = cute.make_layout(())
    for m in modes:
        built = cute.append(built, m)
    assert cute.rank(built) == len(modes)
    assert built == cute.make_layout(*modes)
    for i, m in enumerate(modes):
        assert cute.get(built, mode=[i]) == m


def test_prepend_onto_the_empty_layout_and_modes_with_no_modes_refused():
    m = cute.make_layout((2, 3), stride=(3, 1))
    assert cute.rank(cute.prepend(cute.make_layout(()), m)) == 1
    with pytest.raises(TypeError, match="no modes"):
        cute.append(cute.make_layout(4), cute.make_layout(()))
