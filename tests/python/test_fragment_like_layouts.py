"""The layouts of register tensors made like a layout or tensor, against CuTe DSL 4.8.1's for the same calls
(recorded from its runs on sm_100a): make_rmem_tensor_like orders the fragment by the source's strides and keeps
its stride-0 leaves (and size-1 leaves) at stride 0, so that a broadcast mode takes no registers; make_fragment_like
lays mode 0 out compact and column-major (stride-0 leaves kept) and the other modes after it in the order of their
strides. Leaves of equal stride share a stride in both, as CuTe's compact order gives them."""
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core
from warpweave._dsl.base import trace

# (source, make_rmem_tensor_like's layout, make_fragment_like's layout)
CUTE_DSL = [
    ("(((4,(2,2)),4),2,1,1,(1,4)):(((0,(8,0)),0),16,0,0,(0,0))", "(((4,(2,2)),4),2,1,1,(1,4)):(((0,(1,0)),0),2,0,0,(0,0))", "(((4,(2,2)),4),2,1,1,(1,4)):(((0,(1,0)),0),8,0,0,(0,2))"),
    ("(((4,(2,2)),4),2,1,1,(4,1)):(((1,(0,16)),32),0,0,0,(0,0))", "(((4,(2,2)),4),2,1,1,(4,1)):(((1,(0,4)),8),0,0,0,(0,0))", "(((4,(2,2)),4),2,1,1,(4,1)):(((1,(0,4)),8),32,0,0,(32,0))"),
    ("(8,(2,4),3):(1,(0,64),8)", "(8,(2,4),3):(1,(0,24),8)", "(8,(2,4),3):(1,(8,48),16)"),
    ("(8,(2,4),3):(1,(64,0),8)", "(8,(2,4),3):(1,(24,0),8)", "(8,(2,4),3):(1,(96,8),32)"),
    ("(8,4,3):(0,0,16)", "(8,4,3):(0,0,1)", "(8,4,3):(0,1,4)"),
    ("(8,4,3):(1,0,-16)", "(8,4,3):(3,0,1)", "(8,4,3):(1,24,8)"),
    ("(8,(4,2)):(2,(0,32))", "(8,(4,2)):(1,(0,8))", "(8,(4,2)):(1,(8,32))"),
    ("(8,4):(0,0)", "(8,4):(0,0)", "(8,4):(0,1)"),
    ("((2,4),4,2):((0,1),16,0)", "((2,4),4,2):((0,1),4,0)", "((2,4),4,2):((0,1),8,4)"),
    ("(4,8):(8,1)", "(4,8):(8,1)", "(4,8):(1,4)"),
    ("(4,(2,8)):(16,(1,2))", "(4,(2,8)):(16,(1,2))", "(4,(2,8)):(1,(4,8))"),
    ("((2,2),8):((32,1),2)", "((2,2),8):((16,1),2)", "((2,2),8):((1,2),4)"),
    ("(4,8,2):(8,1,0)", "(4,8,2):(8,1,0)", "(4,8,2):(1,8,4)"),
    ("(4,8,2):(-8,1,32)", "(4,8,2):(1,4,32)", "(4,8,2):(1,4,32)"),
    ("(4,8):(1,-4)", "(4,8):(8,1)", "(4,8):(1,4)"),
    ("(4,(8,2)):(0,(2,0))", "(4,(8,2)):(0,(1,0))", "(4,(8,2)):(0,(2,1))"),
    ("(4,8):(3,7)", "(4,8):(1,4)", "(4,8):(1,4)"),
    ("((4,2),8):((2,0),8)", "((4,2),8):((1,0),4)", "((4,2),8):((1,0),4)"),
    ("(4,1,8):(1,5,4)", "(4,1,8):(1,0,4)", "(4,1,8):(1,0,4)"),
    ("(4,1,8):(1,0,4)", "(4,1,8):(1,0,4)", "(4,1,8):(1,0,4)"),
    ("(1,4,8):(7,1,4)", "(1,4,8):(0,1,4)", "(1,4,8):(0,1,4)"),
    ("(4,8):(1,1)", "(4,8):(1,1)", "(4,8):(1,4)"),
    ("(4,8,2):(2,2,1)", "(4,8,2):(2,2,1)", "(4,8,2):(1,8,4)"),
    ("(4,(1,8)):(16,(3,1))", "(4,(1,8)):(8,(0,1))", "(4,(1,8)):(1,(0,4))"),
    ("16:2", "16:1", "16:1"),
    ("16:0", "16:0", "16:1"),
    ("(2,2,2,2):(8,0,1,0)", "(2,2,2,2):(2,0,1,0)", "(2,2,2,2):(1,2,8,2)"),
    ("((2,2),(2,2)):((0,4),(1,0))", "((2,2),(2,2)):((0,2),(1,0))", "((2,2),(2,2)):((0,1),(4,2))"),
]


def _layout(text):
    return _core.parse_layout(text)


@pytest.mark.parametrize("src, like, frag", CUTE_DSL)
def test_fragment_layouts_match_cute_dsl(src, like, frag):
    with trace.tracing(trace.TraceState(target={"name": "sm_100a"})):
        layout = _layout(src)
        assert str(cute.make_rmem_tensor_like(layout, cutlass.Float32).layout) == like
        assert str(cute.make_fragment_like(layout, cutlass.Float32).layout) == frag


@pytest.mark.parametrize("src, like, frag", CUTE_DSL)
def test_like_layouts_are_compact_over_the_strided_leaves(src, like, frag):
    """Properties of make_rmem_tensor_like's layout: the source's shape; a zero stride where the source's is zero or
    the extent is 1; the other leaves ordered as the source's strides; its image no larger than the product of
    their extents (the values the source addresses apart)."""
    with trace.tracing(trace.TraceState(target={"name": "sm_100a"})):
        s = _layout(src)
        r = cute.make_rmem_tensor_like(s, cutlass.Float32).layout
    assert str(r.shape) == str(s.shape)

    def leaves(t):
        return [x for e in t for x in leaves(e)] if isinstance(t, tuple) else [t]

    ext, ss, rs = leaves(s.shape), leaves(s.stride), leaves(r.stride)
    live = [i for i, (e, d) in enumerate(zip(ext, ss)) if e != 1 and d != 0]
    assert all(rs[i] == 0 for i in range(len(ext)) if i not in live)
    for i in live:
        for j in live:
            if ss[i] < ss[j]:
                assert rs[i] < rs[j], (i, j)
    span = 1
    for i in live:
        span *= ext[i]
    assert r.cosize() <= span


def test_rmem_tensor_like_of_a_broadcast_tensor_holds_only_its_distinct_values():
    """The scales of a tile broadcast along two modes: a fragment like them holds one register a distinct value."""
    with trace.tracing(trace.TraceState(target={"name": "sm_100a"})):
        layout = _layout("(((4,(2,2)),4),2,1,1,(4,1)):(((1,(0,16)),32),0,0,0,(0,0))")
        assert cute.make_rmem_tensor_like(layout, cutlass.BFloat16).layout.cosize() == 32
        assert cute.make_fragment_like(layout, cutlass.BFloat16).layout.cosize() == 160


def test_bad_sources_name_the_users_line():
    from warpweave._dsl.base.errors import DSLTypeError

    with trace.tracing(trace.TraceState(target={"name": "sm_100a"})):
        with pytest.raises(DSLTypeError, match=r"test_fragment_like_layouts\.py:\d+: make_rmem_tensor_like of a "
                                               r"layout needs dtype="):
            cute.make_rmem_tensor_like(_layout("(4,8):(8,1)"))
        with pytest.raises(DSLTypeError, match=r"test_fragment_like_layouts\.py:\d+: make_rmem_tensor_like expects "
                                               r"a Tensor, Layout or TensorSSA, got int"):
            cute.make_rmem_tensor_like(3)
