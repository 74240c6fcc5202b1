"""The GEMM examples (frontend_python/examples/tensorop_gemm.py and sgemm.py).

Without a GPU: both compile for sm_80 and sm_90a; tensorop_gemm's SASS holds HMMA, LDSM and LDGSTS, and ptxas
reports no local memory (no stack frame, no spills), its main loop advances one global pointer per operand
(not an index per copy) and is no longer than CuTe DSL's for K-major A and B; sgemm's holds FFMA, 128-bit
shared loads and LDGSTS.
On the GPU: both are checked against a float64/float32 PyTorch reference on fresh random data (outputs poisoned
with NaN first), over sizes that are not multiples of the tile, every operand major, both 16-bit types, and a
batch L > 1.
"""
import os
import re
import sys

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core

from dsl_helpers import requires_gpu, sass_opcodes, target

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "frontend_python", "examples"))
import sgemm  # noqa: E402
import tensorop_gemm  # noqa: E402

SASS = pytest.mark.skipif(not _core.sass_tool_available(), reason="no SASS disassembler (nvdisasm) installed")


_OP = re.compile(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Za-z0-9_.]*)")


def loop_bodies(cubin):
    """The instruction lines of each loop of a kernel's SASS: from a label to the branch back to it."""
    labels, body = {}, []
    for line in _core.disassemble_sass(cubin).splitlines():
        m = re.match(r"^(\.L_x_\d+):", line)
        if m:
            labels[m.group(1)] = len(body)
        elif _OP.match(line):
            body.append(line)
            back = re.search(r"BRA `\((\.L_x_\d+)\)", line)
            if back and back.group(1) in labels:
                yield body[labels[back.group(1)]:]


def ptxas_report(compiled):
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", compiled.info["jit_log"])
    regs = re.search(r"Used (\d+) registers", compiled.info["jit_log"])
    assert m and regs, compiled.info["jit_log"]
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), int(regs.group(1))


def fake_tensorop_args(a_major, b_major, c_major, ab, c, mnkl=(128, 128, 64, 1)):
    M, N, K, L = mnkl

    def fake(m0, m1, mode0_major, dtype):
        from warpweave.cute.runtime import make_fake_tensor

        stride = (1, m0, m0 * m1) if mode0_major else (m1, 1, m0 * m1)
        t = make_fake_tensor(dtype, (m0, m1, L), stride)
        return t.mark_layout_dynamic(leading_dim=0 if mode0_major else 1).mark_compact_shape_dynamic(
            mode=0 if mode0_major else 1, stride_order=(2, 1, 0) if mode0_major else (2, 0, 1),
            divisibility=128 // dtype.width)

    return fake(M, K, a_major == "m", ab), fake(N, K, b_major == "n", ab), fake(M, N, c_major == "m", c)


@SASS
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("majors", ["mnn", "kkn", "mkm"])
def test_tensorop_gemm_sass(arch, majors):
    gemm = tensorop_gemm.TensorOpGemm(cutlass.Float16, cutlass.Float16, cutlass.Float32, (2, 2, 1))
    with target(arch):
        compiled = cute.compile(gemm, *fake_tensorop_args(*majors, cutlass.Float16, cutlass.Float16), options="-v")
    ops = sass_opcodes(compiled.cubin)
    count = lambda prefix: sum(1 for o in ops if o.startswith(prefix))  # noqa: E731
    # One 64x64 warp tile per k-tile of 32: 2 k-blocks x 4 x 8 atoms; 4 ldmatrix.x4 for A and 4 for B per k-block.
    assert count("HMMA.16816.F32") == 64
    assert count("LDSM.16.") == 24
    # 16-byte copies: 4 of A and 4 of B per thread and k-tile, in the prologue (stages - 1 k-tiles) and the loop.
    assert count("LDGSTS.E.BYPASS") == 8 * gemm.num_stages
    assert count("STG.E.128") == 16
    # The main loop carries the next k-block's ldmatrix results as whole 32-bit registers: no PRMT repacks 16-bit
    # halves before the HMMA that read them.
    main = [[_OP.match(x).group(1) for x in b] for b in loop_bodies(compiled.cubin)]
    main = [b for b in main if sum(o.startswith("HMMA") for o in b) == 64]
    assert len(main) == 1 and not any(o.startswith("PRMT") for o in main[0]), main
    # Its 16 ldmatrix (4 of A and 4 of B per k-block) address the swizzled tiles from one base register per operand
    # and k-block when both are K-major, 16-row steps as immediate offsets (they commute with the swizzle); an
    # M-major A's transposed loads step along M inside the swizzle's span, and need a few more.
    loop = next(b for b in loop_bodies(compiled.cubin) if sum("HMMA" in x for x in b) == 64)
    bases = [re.search(r"LDSM\S* R\d+, \[(R\d+)", x).group(1) for x in loop if "LDSM" in x]
    assert len(bases) == 16 and len(set(bases)) <= (4 if majors[:2] == "kk" else 8), bases
    # Its 8 cp.async (4 of A and 4 of B) address a k-tile from one pointer per operand that advances by a k-tile a
    # trip, each copy that pointer plus a loop-invariant offset: the loop carries an integer addition per operand,
    # not one per copy (8 then, one index each, widened to a 64-bit address per copy).
    carried = loop_carried_additions(loop)
    assert sum("LDGSTS" in x for x in loop) == 8
    assert len(carried) <= 3, carried
    stack, spill_st, spill_ld, regs = ptxas_report(compiled)
    assert (stack, spill_st, spill_ld) == (0, 0, 0), compiled.info["jit_log"]
    assert regs <= 255
    if majors[:2] == "kk":
        # CuTe DSL's tensorop_gemm for this tile, K-major A and B (4.8.1, sm_90a): 142 instructions a k-tile in the
        # main loop, 250 registers.
        assert len(loop) <= 142 and regs <= 250, (len(loop), regs)


def loop_carried_additions(loop):
    """The integer additions of a loop body whose destination is also an operand (x += y: an induction)."""
    out = []
    for line in loop:
        m = re.match(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?(?:IADD3|VIADD|IMAD\.IADD|IADD)(?:\.\w+)*\s+(R\d+),(.*);",
                     line)
        if m and re.search(r"\b%s\b" % m.group(1), m.group(2)):
            out.append(line.strip())
    return out


@SASS
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_sgemm_sass(arch):
    from warpweave.cute.runtime import make_fake_tensor

    def fake(m0, m1, mode0_major):
        t = make_fake_tensor(cutlass.Float32, (m0, m1), (1, m0) if mode0_major else (m1, 1))
        return t.mark_layout_dynamic(leading_dim=0 if mode0_major else 1).mark_compact_shape_dynamic(
            mode=0 if mode0_major else 1, divisibility=4)

    with target(arch):
        compiled = cute.compile(sgemm.SGemm(), fake(128, 64, True), fake(128, 64, True), fake(128, 128, False),
                                options="-v")
    ops = sass_opcodes(compiled.cubin)
    assert sum(o == "FFMA" for o in ops) == 8 * 64      # 8 k-blocks of an 8x8 thread tile
    # Two 4-wide runs of A and of B per k-block, and the first k-block's once more before the main loop: the loop
    # loads the next tile's at its end, after its barrier, as the source does (not at its top: see
    # test_same_source_sass.py).
    assert sum(o == "LDS.128" for o in ops) == 32 + 4
    # 16-byte asynchronous copies (which the assembler gives an L2 prefetch, as CuTe DSL's: base/entry_name.py)
    assert any(o.startswith("LDGSTS.E") and o.endswith(".128") for o in ops)
    stack, spill_st, spill_ld, _ = ptxas_report(compiled)
    assert (stack, spill_st, spill_ld) == (0, 0, 0), compiled.info["jit_log"]


def test_examples_compile_without_a_gpu(capsys):
    if os.environ.get("WARPWEAVE_ARCH") is None and _core.driver_available() and _core.device_count() > 0:
        pytest.skip("a GPU is present: the examples run instead (see the GPU tests)")
    assert tensorop_gemm.main(["--mnkl", "112,136,40,1"]) == 0
    assert sgemm.main([]) == 0
    out = capsys.readouterr().out
    assert out.count("compiled tensorop_gemm for") == 3 and out.count("compiled sgemm for") == 3


def test_bad_configuration_is_refused():
    with pytest.raises(ValueError, match="not a multiple"):
        tensorop_gemm.TensorOpGemm(cutlass.Float16, cutlass.Float16, cutlass.Float32, (2, 2, 1), (100, 128, 32))
    with pytest.raises(ValueError, match="num_stages"):
        sgemm.SGemm(num_stages=2)


TENSOROP_CASES = [
    # (mnkl, majors, ab, c, atoms)
    ((112, 136, 40, 1), "mnn", cutlass.Float16, cutlass.Float16, (2, 2, 1)),
    ((128, 128, 32, 1), "kkn", cutlass.Float16, cutlass.Float16, (2, 2, 1)),
    ((200, 72, 264, 3), "kkn", cutlass.BFloat16, cutlass.BFloat16, (2, 2, 1)),
    ((256, 264, 96, 2), "mkm", cutlass.Float16, cutlass.Float32, (2, 2, 1)),
    ((136, 200, 520, 1), "knm", cutlass.BFloat16, cutlass.Float16, (2, 2, 1)),
    ((520, 264, 1000, 1), "mnn", cutlass.BFloat16, cutlass.BFloat16, (2, 4, 1)),
    ((64, 64, 8, 1), "kkm", cutlass.Float16, cutlass.Float16, (2, 2, 1)),
]


@requires_gpu
@pytest.mark.parametrize("mnkl,majors,ab,c,atoms", TENSOROP_CASES)
def test_tensorop_gemm_matches_torch(mnkl, majors, ab, c, atoms):
    tile = (128, 256, 32) if atoms == (2, 4, 1) else (128, 128, 32)
    stages = 4 if atoms == (2, 4, 1) else 3
    # fp16/bf16 outputs round at 2**-11 / 2**-8 of |C| ~ sqrt(K) * 1.3.
    tol = 2e-2 if c is cutlass.BFloat16 else 5e-3
    tensorop_gemm.run(majors[0], majors[1], majors[2], ab, c, cutlass.Float32, mnkl, atoms, tolerance=tol,
                      cta_tiler=tile, num_stages=stages)


# The contiguous extent of each operand is a multiple of 4 (16-byte rows); the others are free.
SGEMM_CASES = [((100, 200, 36), "kkn"), ((256, 256, 64), "kkn"), ((130, 68, 12), "knn"), ((132, 68, 9), "mnm"),
               ((512, 384, 1000), "mkm"), ((128, 128, 8), "mnn"), ((4, 4, 4), "mnm")]


@requires_gpu
@pytest.mark.parametrize("mnk,majors", SGEMM_CASES)
def test_sgemm_matches_torch(mnk, majors):
    sgemm.run(mnk, majors[0], majors[1], majors[2])
