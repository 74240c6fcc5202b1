"""cute.atom's kinds of operation (Op, CopyOp, MmaOp; a backend's tcgen05.mma.MmaOp) answer isinstance and
issubclass from what each operation is, for every operation the loaded backends offer; and the names libraries
import from cutlass_dsl for what cute.compile returns and the architectures."""
import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.nvgpu import cpasync, tcgen05, warp, warpgroup

from dsl_helpers import target


def _ops():
    f16, f32 = cutlass.Float16, cutlass.Float32
    copies = [cute.nvgpu.CopyUniversalOp(), cpasync.CopyG2SOp(), cpasync.CopyBulkTensorTileG2SOp(),
              warp.LdMatrix8x8x16bOp(False, 4), tcgen05.Ld32x32bOp(tcgen05.Repetition.x8)]
    mmas = [cute.nvgpu.MmaUniversalOp(f32), warp.MmaF16BF16Op(f16, f32, (16, 8, 16)),
            warpgroup.MmaF16BF16Op(f16, f32, (64, 128, 16), warpgroup.OperandSource.SMEM,
                                   warpgroup.OperandMajorMode.K, warpgroup.OperandMajorMode.K)]
    umma = tcgen05.MmaF16BF16Op(f16, f32, (128, 256, 16), tcgen05.CtaGroup.ONE, tcgen05.OperandSource.SMEM,
                                tcgen05.OperandMajorMode.K, tcgen05.OperandMajorMode.K)
    return copies, mmas, umma


def test_every_operation_is_of_its_own_kind_only():
    copies, mmas, umma = _ops()
    for op in copies:
        assert isinstance(op, cute.atom.CopyOp) and isinstance(op, cute.atom.Op), op
        assert not isinstance(op, cute.atom.MmaOp) and not isinstance(op, tcgen05.mma.MmaOp), op
        assert issubclass(type(op), cute.atom.CopyOp)
    for op in mmas + [umma]:
        assert isinstance(op, cute.atom.MmaOp) and isinstance(op, cute.atom.Op), op
        assert not isinstance(op, cute.atom.CopyOp), op
    # the backend's narrower kind: its own MMAs only
    assert isinstance(umma, tcgen05.mma.MmaOp) and tcgen05.MmaOp is tcgen05.mma.MmaOp
    assert not any(isinstance(op, tcgen05.mma.MmaOp) for op in mmas)
    for other in (3, "op", cute.make_layout(4), int, None):
        assert not isinstance(other, cute.atom.Op)


def test_cutlass_dsl_names_what_compile_returns_and_the_architectures():
    from warpweave import cutlass_dsl
    from warpweave.base_dsl.arch import Arch

    @cute.kernel
    def k(x: cute.Tensor):
        x[0] = x[0] + 1.0

    @cute.jit
    def launch(x: cute.Tensor):
        k(x).launch(grid=(1, 1, 1), block=(32, 1, 1))

    import numpy as np
    from warpweave.cute.runtime import from_dlpack

    with target("sm_80"):
        compiled = cute.compile(launch, from_dlpack(np.zeros(4, np.float32)))
    assert isinstance(compiled, cutlass_dsl.JitCompiledFunction)
    assert cutlass_dsl.Arch is Arch and cutlass_dsl.Arch.sm_90a > cutlass_dsl.Arch.sm_80
