"""cute.arch.dynamic_smem_size: the bytes of dynamic shared memory the running kernel was launched with (the
%dynamic_smem_size special register, read through NVVM's intrinsic), e.g. to check a launch's smem= against what
the kernel's layout needs."""
from __future__ import annotations

from ..base import trace
from ..values.numeric import Int32


def dynamic_smem_size(*, loc=None, ip=None):
    v = trace.builder().op1("llvm.call_intrinsic", [], "i32",
                            'intrin = "llvm.nvvm.read.ptx.sreg.dynamic_smem_size", op_bundle_sizes = array<i32>, '
                            "operandSegmentSizes = array<i32: 0, 0>")
    return Int32.from_ir(v)
