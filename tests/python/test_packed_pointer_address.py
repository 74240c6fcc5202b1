"""The address of a pointer to packed 4-bit values (two to a byte) moved by a run-time number of elements: the byte
holding the element, offset / 2 bytes past the start, as CuTe DSL gives it (a tensor map's global address of an
FP4 tensor moved to a group's first token, in CuTe DSL's MoE scaled grouped GEMM). An access still starts at an
even element, and a statically odd one is refused at the user's line."""
import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack
from warpweave._dsl.base.errors import DSLValueError

from dsl_helpers import requires_gpu, target


def _program(packed_type, static_offset=None):
    """out[i] = the byte distance from the start of g, viewed as packed values, to element n_i of it."""
    @cute.kernel
    def k(g: cute.Tensor, ns: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        start = cute.recast_ptr(g.iterator, dtype=packed_type)
        n = ns[tidx] if cutlass.const_expr(static_offset is None) else static_offset
        out[tidx] = (start + n).toint(cutlass.Int64) - start.toint(cutlass.Int64)

    @cute.jit
    def host(g: cute.Tensor, ns: cute.Tensor, out: cute.Tensor):
        k(g, ns, out).launch(grid=(1, 1, 1), block=(8, 1, 1))

    return host


def _args(ns):
    return (from_dlpack(np.zeros(1024, np.uint8)), from_dlpack(np.asarray(ns, np.int32)),
            from_dlpack(np.zeros(len(ns), np.int64)))


@pytest.mark.parametrize("packed_type", [cutlass.Int4, cutlass.Float4E2M1FN])
def test_a_run_time_offset_addresses_the_byte_holding_the_element(packed_type):
    with target("sm_80"):
        ptx = cute.compile(_program(packed_type), *_args(range(8))).info["ptx"]
    # the element offset halved, one signed or unsigned shift right by one
    assert any(op in ptx for op in ("shr.s32", "shr.u32", "shr.s64", "shr.u64")), ptx


def test_a_statically_odd_offset_is_refused_at_the_users_line():
    with target("sm_80"), pytest.raises(DSLValueError, match="inside a byte") as e:
        cute.compile(_program(cutlass.Int4, static_offset=3), *_args(range(8)))
    assert e.value.location[0] == __file__


@requires_gpu
def test_run_time_offsets_address_bytes_on_the_gpu():
    import torch

    ns = [0, 1, 2, 7, 64, 65, 1001, 1022]
    g = torch.zeros(1024, dtype=torch.uint8, device="cuda")
    out = torch.zeros(8, dtype=torch.int64, device="cuda")
    _program(cutlass.Float4E2M1FN)(from_dlpack(g), from_dlpack(torch.tensor(ns, dtype=torch.int32, device="cuda")),
                                   from_dlpack(out))
    torch.cuda.synchronize()
    assert out.tolist() == [n // 2 for n in ns]
