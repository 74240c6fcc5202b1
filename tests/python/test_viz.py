"""Pictures of layouts, thread-value layouts, tiled copies and tiled MMAs (warpweave.viz).

Each SVG is parsed back (xml.etree) and read cell by cell: the cell count is the grid's, a layout cell shows the
layout's value at its 1-D index, a thread-value cell names a (thread, value) that the layout maps to that very
element, every (thread, value) of the layout is somewhere in the picture, and one thread has one colour. The MMA
pictures are checked against the PTX ISA's fragment formulas, the tiled copy against the arithmetic of its thread
and value layouts. Random layouts (nested shapes, ranks 1 to 4) and random thread-value layouts state the same
properties."""
import io
import random
import re
import xml.etree.ElementTree as ET

import pytest

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.viz as viz
from warpweave import utils
from warpweave._dsl.base.errors import DSLTypeError, DSLValueError
from warpweave.cute.nvgpu import warp
from warpweave.viz.palette import thread_color

SVG = "{http://www.w3.org/2000/svg}"
THIS_FILE = __file__


def parse(svg_text):
    root = ET.fromstring(svg_text)
    assert root.tag == SVG + "svg"
    float(root.get("width")), float(root.get("height"))
    return root


def panels(root):
    """[(title, rows, cols, {(r, c): cell element})] in document order."""
    out = []
    for g in root.iter(SVG + "g"):
        if g.get("class") != "panel":
            continue
        cells = {}
        for c in g.iter(SVG + "g"):
            if c.get("class") == "cell":
                key = (int(c.get("data-row")), int(c.get("data-col")))
                assert key not in cells, f"cell {key} drawn twice"
                cells[key] = c
        out.append((g.get("data-title"), int(g.get("data-rows")), int(g.get("data-cols")), cells))
    return out


def text_of(cell):
    t = cell.find(SVG + "text")
    return None if t is None else [ts.text for ts in t.findall(SVG + "tspan")]


def fill_of(cell):
    return cell.find(SVG + "rect").get("fill")


def holders_of(cell):
    """Every (thread, value) the cell says holds it: its tooltip, or its one shown holder."""
    title = cell.find(SVG + "title")
    if title is not None:
        return [(int(t), int(v)) for t, v in re.findall(r"T(\d+) V(\d+)", title.text)]
    if cell.get("data-thread") is None:
        return []
    return [(int(cell.get("data-thread")), int(cell.get("data-value")))]


def sizes_of(layout):
    shape = layout.outer.shape if isinstance(layout, cute.ComposedLayout) else layout.shape
    modes = shape if isinstance(shape, tuple) else (shape,)
    return [cute.size(m) for m in modes]


def check_layout_picture(layout):
    root = parse(viz.svg(layout))
    sizes = sizes_of(layout)
    M = sizes[0]
    N = sizes[1] if len(sizes) > 1 else 1
    K = cute.size(layout) // (M * N)
    ps = panels(root)
    assert len(ps) == K
    total = 0
    for k, (_, rows, cols, cells) in enumerate(ps):
        assert (rows, cols) == (M, N)
        assert len(cells) == M * N
        total += len(cells)
        for (m, n), cell in cells.items():
            i = m + M * n + M * N * k  # the cell's 1-D (colexicographic) index into the whole layout
            assert text_of(cell) == [cute.pretty_str(layout(i))], (layout, m, n, k)
    assert total == cute.size(layout)
    return root


def check_tv_panel(panel, layout_tv, M, N, transpose=False):
    """The panel of a (thread, value) -> column-major (M, N) index layout; returns its {(t, v): (m, n)}."""
    _, rows, cols, cells = panel
    assert (rows, cols) == ((N, M) if transpose else (M, N))
    assert len(cells) == M * N
    seen = {}
    colour = {}
    for (r, c), cell in cells.items():
        m, n = (c, r) if transpose else (r, c)
        hs = holders_of(cell)
        if not hs:
            assert text_of(cell) is None
            continue
        t, v = hs[0]
        assert text_of(cell) == [f"T{t}", f"V{v}"]
        assert fill_of(cell) == thread_color(t)
        assert colour.setdefault(t, fill_of(cell)) == fill_of(cell)
        for t2, v2 in hs:
            assert layout_tv((t2, v2)) == m + M * n, (t2, v2, m, n)
            assert (t2, v2) not in seen
            seen[(t2, v2)] = (m, n)
    threads, values = cute.size(layout_tv, mode=[0]), cute.size(layout_tv, mode=[1])
    assert set(seen) == {(t, v) for t in range(threads) for v in range(values)}
    return seen


# --- layouts ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", [
    cute.make_layout((4, 8)),
    cute.make_layout((4, 8), stride=(8, 1)),
    cute.make_layout(((2, 3), 4), stride=((1, 8), 2)),
    cute.make_layout((2, (2, 2)), stride=(4, (1, 2))),
    cute.make_layout(12),                                       # rank 1: a column
    cute.make_layout((4, 3, 2), stride=(1, 4, 12)),             # rank 3: a panel per coordinate of mode 2
    cute.make_layout((2, 2, (2, 3)), stride=(1, 0, (2, 8))),   # rank 3, nested rest mode, a broadcast mode
    cute.make_layout((2, 3, 2, 2)),                             # rank 4: the rest modes grouped
    cute.make_composed_layout(cute.make_swizzle(2, 0, 3), 0, cute.make_layout((8, 8), stride=(8, 1))),
])
def test_layout_cells_show_the_layout(layout):
    check_layout_picture(layout)


def test_identity_layout_cells_show_coordinates():
    root = check_layout_picture(cute.make_identity_layout((3, 4)))
    (_, _, _, cells), = panels(root)
    assert text_of(cells[(2, 1)]) == ["(2,1)"]


def test_coordinate_tensor_cells_show_its_coordinates():
    tile = cute.local_tile(cute.make_identity_tensor((8, 12)), (4, 4), (1, 2))
    (_, rows, cols, cells), = panels(parse(viz.svg(tile)))
    assert (rows, cols) == (4, 4)
    for (m, n), cell in cells.items():
        assert text_of(cell) == [cute.pretty_str(tile[m, n])] == [f"({4 + m},{8 + n})"]


def test_host_tensors_draw_their_layout():
    import numpy as np

    from warpweave.cute.runtime import from_dlpack, make_fake_tensor

    a = np.zeros((3, 5), dtype=np.float32)
    assert viz.svg(from_dlpack(a)) == viz.svg(cute.make_layout((3, 5), stride=(5, 1)))
    assert viz.svg(from_dlpack(a.T)) == viz.svg(cute.make_layout((5, 3), stride=(1, 5)))
    check_layout_picture(cute.make_layout((4, 6), stride=(1, 8)))
    assert viz.svg(make_fake_tensor(cutlass.Float16, (4, 6), (1, 8))) == viz.svg(cute.make_layout((4, 6), stride=(1, 8)))
    with pytest.raises(DSLValueError, match="mark_layout_dynamic") as e:
        line = _here() + 1
        viz.svg(from_dlpack(a).mark_layout_dynamic())
    assert e.value.location == (THIS_FILE, line)


def test_random_layouts():
    rng = random.Random(1234)

    def rand_mode(depth):
        if depth < 2 and rng.random() < 0.3:
            return tuple(rand_mode(depth + 1) for _ in range(rng.randint(2, 3)))
        return rng.randint(1, 4)

    def rand_stride(shape):
        if isinstance(shape, tuple):
            return tuple(rand_stride(s) for s in shape)
        return rng.choice([0, 1, 2, 3, 5, 8, 16, 17])

    for _ in range(60):
        shape = tuple(rand_mode(1) for _ in range(rng.randint(1, 3)))
        shape = shape[0] if len(shape) == 1 and rng.random() < 0.5 else shape
        layout = cute.make_layout(shape, stride=rand_stride(shape))
        check_layout_picture(layout)


def test_hierarchical_layout_rows_follow_the_nested_coordinate():
    # Row m of ((2,3),4):((1,8),2) is the coordinate (m % 2, m // 2) of the nested mode: offsets 0 1 8 9 16 17.
    layout = cute.make_layout(((2, 3), 4), stride=((1, 8), 2))
    (_, _, _, cells), = panels(parse(viz.svg(layout)))
    assert [text_of(cells[(m, 0)])[0] for m in range(6)] == ["0", "1", "8", "9", "16", "17"]
    assert [text_of(cells[(0, n)])[0] for n in range(4)] == ["0", "2", "4", "6"]


def test_nested_modes_draw_their_sub_mode_boundaries():
    # Rows of ((2,3),...) carry every 2 rows (lines after rows 1 and 3); columns of (...,(2,2)) after column 1; a
    # flat layout has none.
    def boundaries(layout):
        root = parse(viz.svg(layout))
        lines = [ln for ln in root.iter(SVG + "line") if ln.get("class") == "mode-boundary"]
        horizontal = sum(1 for ln in lines if ln.get("y1") == ln.get("y2"))
        return horizontal, len(lines) - horizontal

    assert boundaries(cute.make_layout(((2, 3), (2, 2)), stride=((1, 8), (2, 24)))) == (2, 1)
    assert boundaries(cute.make_layout(((2, (3, 2)), 2))) == (5 + 1, 0)   # every 2 rows, and after 6 again
    assert boundaries(cute.make_layout((6, 4))) == (0, 0)


# --- thread-value layouts ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("thr,val", [((4, 32), (4, 1)), ((4, 8), (2, 4)), ((2, 2), (1, 1)), ((8, 4), (1, 8))])
def test_tv_layout_picture(thr, val):
    thr_layout = cute.make_ordered_layout(thr, order=(1, 0))
    val_layout = cute.make_ordered_layout(val, order=(1, 0))
    tiler, tv = cute.make_layout_tv(thr_layout, val_layout)
    M, N = tiler
    (panel,) = panels(parse(viz.svg(tv, tiler)))
    seen = check_tv_panel(panel, tv, M, N)
    # make_layout_tv rakes the values of each thread into a block: thread t at (t // thrN, t % thrN) of the thread
    # grid (row-major), its value v at (v // valN, v % valN) within the block.
    for (t, v), (m, n) in seen.items():
        assert m == (t // thr[1]) * val[0] + v // val[1]
        assert n == (t % thr[1]) * val[1] + v % val[1]


def test_random_tv_layouts_hold_every_element_once():
    rng = random.Random(99)
    for _ in range(25):
        thr = (rng.choice([1, 2, 4, 8]), rng.choice([1, 2, 4, 8]))
        val = (rng.choice([1, 2, 4]), rng.choice([1, 2, 4]))
        thr_layout = cute.make_ordered_layout(thr, order=rng.choice([(0, 1), (1, 0)]))
        val_layout = cute.make_ordered_layout(val, order=rng.choice([(0, 1), (1, 0)]))
        tiler, tv = cute.make_layout_tv(thr_layout, val_layout)
        (panel,) = panels(parse(viz.svg(tv, tiler)))
        seen = check_tv_panel(panel, tv, *tiler)
        assert len(set(seen.values())) == tiler[0] * tiler[1]  # a bijection: no element empty or held twice


def test_thread_colours_are_distinct_and_stable():
    colours = [thread_color(t) for t in range(1024)]
    assert len(set(colours)) == 1024
    assert all(re.fullmatch(r"#[0-9a-f]{6}", c) for c in colours)
    assert colours == [thread_color(t) for t in range(1024)]


# --- tiled copies and MMAs ----------------------------------------------------------------------------------------

def test_tiled_copy_picture():
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32)
    tc = cute.make_tiled_copy_tv(atom, cute.make_ordered_layout((4, 8), order=(1, 0)),
                                 cute.make_ordered_layout((2, 4), order=(1, 0)))
    root = parse(tc._repr_svg_())
    (s_title, *s), (d_title, *d) = panels(root)
    assert s_title.startswith("S") and d_title.startswith("D")
    seen_s = check_tv_panel((s_title, *s), tc.get_layoutS_TV(), 8, 32)
    seen_d = check_tv_panel((d_title, *d), tc.get_layoutD_TV(), 8, 32)
    assert seen_s == seen_d  # a universal copy reads and writes the same elements
    for (t, v), (m, n) in seen_s.items():
        assert (m, n) == ((t // 8) * 2 + v // 4, (t % 8) * 4 + v % 4)


def ptx_a(lane, i):  # PTX ISA, mma.m16n8k16 fragments: (row, col) of A's a_i
    g, q = lane >> 2, lane % 4
    return g + 8 * ((i >> 1) & 1), 2 * q + (i & 1) + 8 * (i >> 2)


def ptx_b(lane, i):  # (n, k) of B's b_i
    g, q = lane >> 2, lane % 4
    return g, 2 * q + (i & 1) + 8 * (i >> 1)


def ptx_c(lane, i):
    g, q = lane >> 2, lane % 4
    return g + 8 * (i >> 1), 2 * q + (i & 1)


def test_mma_atom_picture_follows_the_ptx_fragments():
    op = warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16))
    tm = cute.make_tiled_mma(op, cute.make_layout((1, 1, 1)))
    a, b, c = panels(parse(tm._repr_svg_()))
    assert [p[0] for p in (a, b, c)] == ["A", "B", "C"]
    seen_a = check_tv_panel(a, tm.get_layoutA_TV(), 16, 16)
    seen_b = check_tv_panel(b, tm.get_layoutB_TV(), 8, 16, transpose=True)
    seen_c = check_tv_panel(c, tm.get_layoutC_TV(), 16, 8)
    assert seen_a == {(t, i): ptx_a(t, i) for t in range(32) for i in range(8)}
    assert seen_b == {(t, i): ptx_b(t, i) for t in range(32) for i in range(4)}
    assert seen_c == {(t, i): ptx_c(t, i) for t in range(32) for i in range(4)}
    # B is drawn K x N above C: its cell at row k, column n holds B's (n, k).
    cells_b = b[3]
    assert holders_of(cells_b[(9, 3)])[0] in [(t, i) for (t, i), nk in seen_b.items() if nk == (3, 9)]
    # An MMA atom draws as the tiled MMA of one atom.
    assert tm.atom._repr_svg_() == tm._repr_svg_()


def test_tiled_mma_picture_with_broadcast_operands():
    op = warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16))
    tm = cute.make_tiled_mma(op, cute.make_layout((2, 2, 1)))
    a, b, c = panels(parse(viz.svg(tm)))
    check_tv_panel(a, tm.get_layoutA_TV(), 32, 16)
    check_tv_panel(b, tm.get_layoutB_TV(), 16, 16, transpose=True)
    seen_c = check_tv_panel(c, tm.get_layoutC_TV(), 32, 16)
    # The two warps along N (warp w at m = w % 2, n = w // 2) share each A element: every A cell lists the same
    # value of two threads 64 apart.
    for cell in a[3].values():
        (t0, v0), (t1, v1) = holders_of(cell)
        assert (t1 - t0, v1) == (64, v0)
    assert len(set(seen_c.values())) == 32 * 16  # C is held once per element


def test_matrix_load_copy_picture_delivers_the_mma_fragments():
    # A shared-memory-to-register copy shaped by a tiled MMA (make_tiled_copy_A): its destination panel is the
    # MMA's A panel cell for cell, and on its source side each thread names one 8-element row segment (the row
    # address it supplies).
    op = warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16))
    tm = cute.make_tiled_mma(op, cute.make_layout((2, 2, 1)))
    atom = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), cutlass.Float16)
    tc = cute.make_tiled_copy_A(atom, tm)
    s, d = panels(parse(viz.svg(tc)))
    a = panels(parse(viz.svg(tm)))[0]
    assert {k: holders_of(c) for k, c in d[3].items()} == {k: holders_of(c) for k, c in a[3].items()}
    rows = {}
    for (m, k), cell in s[3].items():
        for t, _ in holders_of(cell):
            rows.setdefault(t, set()).add((m, k // 8))
    assert sorted(rows) == list(range(128)) and all(len(segments) == 1 for segments in rows.values())
    # The two warps along N load the same A: each of its 64 row segments is named by two threads 64 apart.
    assert all(rows[t] == rows[t + 64] for t in range(64))
    assert len(set().union(*rows.values())) == 64


def test_one_threads_slice_highlights_its_elements():
    op = warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16))
    tm = cute.make_tiled_mma(op, cute.make_layout((2, 2, 1)))
    whole = panels(parse(viz.svg(tm)))
    for t in (0, 5, 70):
        part = panels(parse(tm.get_slice(t)._repr_svg_()))
        for (_, _, _, cells), (_, _, _, all_cells) in zip(part, whole):
            assert cells.keys() == all_cells.keys()
            for rc, cell in cells.items():
                held = [h for h in holders_of(all_cells[rc]) if h[0] == t]
                if held:
                    assert text_of(cell) == [f"T{t}", f"V{held[0][1]}"] and fill_of(cell) == thread_color(t)
                else:
                    assert text_of(cell) is None and fill_of(cell) != thread_color(t)
        # C: thread t's 4 accumulators, at the PTX places of its lane within its warp's 16x8 block.
        c_cells = {rc for rc, cell in part[2][3].items() if text_of(cell)}
        w, lane = t // 32, t % 32
        assert c_cells == {(16 * (w % 2) + m, 8 * (w // 2) + n) for m, n in (ptx_c(lane, i) for i in range(4))}
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32)
    tc = cute.make_tiled_copy_tv(atom, cute.make_layout((4, 2)), cute.make_layout((2, 4)))
    s, d = panels(parse(tc.get_slice(5)._repr_svg_()))
    assert {rc for rc, cell in s[3].items() if text_of(cell)} == {(2 + a, 4 + b) for a in range(2) for b in range(4)}


def test_universal_tiled_mma_picture():
    tm = cute.make_tiled_mma(cute.nvgpu.MmaUniversalOp(cutlass.Float32), cute.make_layout((4, 8, 1)))
    a, b, c = panels(parse(viz.svg(tm)))
    seen_c = check_tv_panel(c, tm.get_layoutC_TV(), 4, 8)
    assert seen_c == {(t, 0): (t % 4, t // 4) for t in range(32)}


def _cells_by_thread(panel, transpose=False):
    out = {}
    for (r, c), cell in panel[3].items():
        for t, _ in holders_of(cell):
            out.setdefault(t, set()).add((c, r) if transpose else (r, c))
    return out


def _coords(t):
    # A coordinate tensor's element can come back shorter than its rank when its trailing components are 0
    # ((1,) for (1, 0), from a partition whose offset had no K part): padded back to (m, k).
    return {tuple(c) + (0,) * (2 - len(c)) for c in (t[i] for i in range(cute.size(t)))}


@pytest.mark.parametrize("atoms,perm", [((4, 8, 1), None), ((2, 2, 1), (8, 8, None)),
                                        ((4, 2, 1), (cute.make_layout((4, 2), stride=(2, 1)), None, None)),
                                        ((8, 4, 1), (cute.make_layout((8, 2), stride=(2, 1)),
                                                     cute.make_layout((4, 4), stride=(4, 1)), None))])
def test_tiled_mma_picture_agrees_with_its_partitions(atoms, perm):
    # Two roads to "which thread holds what": the picture (from the thread-value layouts) and each thread's
    # partition of coordinate tensors. They must give the same elements for every thread.
    tm = cute.make_tiled_mma(cute.nvgpu.MmaUniversalOp(cutlass.Float32), cute.make_layout(atoms),
                             permutation_mnk=perm)
    M, N, K = (tm.get_tile_size(i) for i in range(3))
    a, b, c = panels(parse(viz.svg(tm)))
    by_a, by_b, by_c = _cells_by_thread(a), _cells_by_thread(b, transpose=True), _cells_by_thread(c)
    cA, cB, cC = (cute.make_identity_tensor(s) for s in ((M, K), (N, K), (M, N)))
    for t in range(tm.size):
        thr = tm.get_slice(t)
        assert by_c[t] == _coords(thr.partition_C(cC)), t
        assert by_a[t] == _coords(thr.partition_A(cA)), t
        assert by_b[t] == _coords(thr.partition_B(cB)), t


def test_tiled_copy_picture_agrees_with_its_partitions():
    rng = random.Random(7)
    for _ in range(10):
        thr = cute.make_ordered_layout((rng.choice([2, 4, 8]), rng.choice([2, 4])), order=rng.choice([(0, 1), (1, 0)]))
        val = cute.make_ordered_layout((rng.choice([1, 2]), rng.choice([1, 2, 4])), order=rng.choice([(0, 1), (1, 0)]))
        atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16)
        tc = cute.make_tiled_copy_tv(atom, thr, val)
        s, d = panels(parse(viz.svg(tc)))
        ident = cute.make_identity_tensor(tuple(cute.size(m) for m in tc.tiler_mn))   # tiler_mn: a layout a mode
        by_s, by_d = _cells_by_thread(s), _cells_by_thread(d)
        for t in range(tc.size):
            thr_copy = tc.get_slice(t)
            assert by_s[t] == _coords(thr_copy.partition_S(ident)) == by_d[t] == _coords(thr_copy.partition_D(ident))


def ptx_wgmma_d(t, i):
    """PTX ISA, wgmma's accumulator D fragment for m64nNk16: (row, column) of thread t's value i."""
    warp_, lane = t // 32, t % 32
    return 16 * warp_ + 8 * ((i >> 1) & 1) + lane // 4, 8 * (i >> 2) + 2 * (lane % 4) + (i & 1)


def test_warpgroup_mma_picture_shared_operands_and_the_ptx_accumulator():
    from warpweave.cute.nvgpu import warpgroup
    from warpweave.utils import hopper_helpers
    from warpweave.viz.palette import SHARED

    k_major = warpgroup.OperandMajorMode.K
    tm = hopper_helpers.make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16, k_major, k_major, cutlass.Float32,
                                               (1, 1, 1), (64, 16))
    assert tm.shape_mnk == (64, 16, 16) and tm.size == 128
    a, b, c = panels(parse(viz.svg(tm)))
    # A and B come from shared memory through descriptors: every thread sees them whole, so no cell names one.
    for title, rows, cols, cells in (a, b):
        assert title.endswith("(all 128 threads)")
        assert len(cells) == rows * cols
        for cell in cells.values():
            assert fill_of(cell) == SHARED and len(text_of(cell)) == 1 and cell.get("data-holders") == "128"
    seen = check_tv_panel(c, tm.get_layoutC_TV(), 64, 16)
    assert seen == {(t, i): ptx_wgmma_d(t, i) for t in range(128) for i in range(8)}


# --- LaTeX, files, Jupyter ----------------------------------------------------------------------------------------

def test_print_latex_draws_every_cell():
    layout = cute.make_layout((3, 5), stride=(5, 1))
    buf = io.StringIO()
    utils.print_latex(layout, file=buf)
    tex = buf.getvalue()
    assert tex.startswith("% warpweave.viz") and r"\begin{tikzpicture}" in tex and tex.rstrip().endswith(
        r"\end{document}")
    assert tex.count(r"\filldraw") == 15
    assert tex.count("{") == tex.count("}")
    nodes = re.findall(r"\\node\[align=center\] at \([-0-9.]+,[-0-9.]+\) \{([^}]*)\};", tex)
    assert sorted(int(x) for x in nodes) == sorted(layout(i) for i in range(15))


def test_print_latex_tv():
    tiler, tv = cute.make_layout_tv(cute.make_layout((2, 4)), cute.make_layout((2, 1)))
    buf = io.StringIO()
    utils.print_latex_tv(tv, tiler, file=buf)
    nodes = re.findall(r"\\node\[align=center\] at \([-0-9.]+,[-0-9.]+\) \{T(\d+)\\\\V(\d+)\};", buf.getvalue())
    assert sorted((int(t), int(v)) for t, v in nodes) == [(t, v) for t in range(8) for v in range(2)]


@pytest.mark.skipif(__import__("shutil").which("pdflatex") is None,
                    reason="pdflatex is not installed (texlive-latex-base, -pictures, -latex-extra)")
def test_latex_documents_compile(tmp_path):
    import subprocess

    op = warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16))
    tiler, tv = cute.make_layout_tv(cute.make_layout((2, 4)), cute.make_layout((2, 1)))
    things = {"mma": (cute.make_tiled_mma(op), None), "tv": (tv, tiler),
              "swizzle": (cute.make_composed_layout(cute.make_swizzle(2, 0, 3), 0,
                                                    cute.make_layout(((2, 4), 8), stride=((8, 16), 1))), None)}
    for name, (obj, tile) in things.items():
        viz.save(obj, tmp_path / f"{name}.tex", tile)
        r = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", f"{name}.tex"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout[-3000:]
        assert (tmp_path / f"{name}.pdf").stat().st_size > 1000


def test_save(tmp_path):
    layout = cute.make_layout((4, 4))
    parse(open(viz.save(layout, tmp_path / "l.svg")).read())
    assert r"\begin{document}" in open(viz.save(layout, tmp_path / "l.tex")).read()
    with pytest.raises(DSLValueError, match="neither an .svg nor a .tex"):
        viz.save(layout, tmp_path / "l.png")


def test_jupyter_shows_small_static_layouts_only():
    assert parse(cute.make_layout((4, 4))._repr_svg_()) is not None
    assert cute.make_layout((128, 64))._repr_svg_() is None      # 8192 cells: the text form stays
    m = cute.SymInt.symbol(1, name="M")
    assert cute.make_layout((m, 4))._repr_svg_() is None          # dynamic: no picture
    assert viz.picture(cute.make_layout((4, 4)))._repr_svg_() == viz.svg(cute.make_layout((4, 4)))


# --- mistakes -----------------------------------------------------------------------------------------------------

def _here():
    import inspect

    return inspect.currentframe().f_back.f_lineno


def test_errors_name_the_users_line():
    m = cute.SymInt.symbol(1, name="M")
    with pytest.raises(DSLValueError, match="dynamic") as e:
        line = _here() + 1
        viz.svg(cute.make_layout((m, 4)))
    assert e.value.location == (THIS_FILE, line)
    with pytest.raises(DSLValueError, match="max_cells") as e:
        line = _here() + 1
        viz.picture(cute.make_layout((64, 64)), max_cells=1000)
    assert e.value.location == (THIS_FILE, line)
    with pytest.raises(DSLTypeError, match="warpweave.viz: cannot draw a str") as e:
        line = _here() + 1
        viz.svg("4:1")
    assert e.value.location == (THIS_FILE, line)


def test_tv_mistakes():
    tiler, tv = cute.make_layout_tv(cute.make_layout((2, 4)), cute.make_layout((2, 1)))
    with pytest.raises(DSLValueError, match="outside the 2x4 tile"):
        viz.svg(tv, (2, 4))
    with pytest.raises(DSLValueError, match="three modes|3 modes"):
        viz.svg(tv, (4, 4, 1))
    with pytest.raises(DSLValueError, match="two modes"):
        viz.svg(cute.make_layout((2, 2, 2)), (4, 2))
    with pytest.raises(DSLTypeError, match="needs the tile"):
        utils.print_latex_tv(tv, None)
    with pytest.raises(DSLTypeError, match="tiler_mn= is for thread-value layouts"):
        tm = cute.make_tiled_mma(cute.nvgpu.MmaUniversalOp(cutlass.Float32), cute.make_layout((2, 2, 1)))
        viz.svg(tm, (2, 2))


def test_print_latex_inside_a_jit_function(capsys, monkeypatch):
    monkeypatch.setenv("WARPWEAVE_ARCH", "sm_80")

    @cute.jit
    def show():
        thr = cute.make_ordered_layout((2, 4), order=(1, 0))
        tiler, tv = cute.make_layout_tv(thr, cute.make_layout((1, 2)))
        utils.print_latex_tv(tv, tiler)

    show()
    out = capsys.readouterr().out
    assert out.count(r"\filldraw") == 16


def test_a_dynamic_layout_inside_a_jit_function_names_the_users_line(monkeypatch):
    from warpweave.cute.runtime import make_fake_tensor

    monkeypatch.setenv("WARPWEAVE_ARCH", "sm_80")
    line = []

    @cute.jit
    def show(x: cute.Tensor):
        line.append(_here() + 1)
        utils.print_latex(x.layout)

    t = make_fake_tensor(cutlass.Float32, (8, 8)).mark_layout_dynamic()
    with pytest.raises(DSLValueError, match="dynamic") as e:
        show(t)
    assert e.value.location == (THIS_FILE, line[0])
