"""Hopper's cute.arch.store_async_dsmem (st.async of 1, 2 or 4 i32 into a peer CTA's shared memory, completing on
its mbarrier, both pointers mapped with mapa) and cute.arch.mbarrier_conditional_try_wait (the try_wait only where
the condition holds, True elsewhere), read from the PTX; their mistakes refused at the user's line."""
import re

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import Int32

from dsl_helpers import line_in, target

MISTAKE = {}


@cute.kernel
def stores(flag: Int32, v: Int32):
    smem = cutlass.utils.SmemAllocator()
    mbar = smem.allocate_array(cutlass.Int64, 2)
    buf = smem.allocate_array(Int32, 16, byte_alignment=16)
    ok = cute.arch.mbarrier_conditional_try_wait(flag > 0, mbar, 1)
    if ok:
        cute.arch.store_async_dsmem(buf, v, mbar, 1)
    cute.arch.store_async_dsmem(buf + 2, (v, v + 1), mbar + 1, flag)
    cute.arch.store_async_dsmem(buf + 4, (v, v + 1, v + 2, v + 3), mbar, 0)
    if cutlass.const_expr(MISTAKE.get("kind") == "align"):
        cute.arch.store_async_dsmem(buf + 1, (v, v), mbar, 0)  # misaligned
    if cutlass.const_expr(MISTAKE.get("kind") == "count"):
        cute.arch.store_async_dsmem(buf, (v, v, v), mbar, 0)  # three values
    if cutlass.const_expr(MISTAKE.get("kind") == "pointer"):
        cute.arch.store_async_dsmem(v, v, mbar, 0)  # not a pointer
    if cutlass.const_expr(MISTAKE.get("kind") == "cond"):
        cute.arch.mbarrier_conditional_try_wait(3, mbar, 0)  # not a Boolean


@cute.jit
def launch(flag: Int32, v: Int32):
    stores(flag, v).launch(grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1))


def _ptx():
    with target("sm_90a"):
        return cute.compile(launch, Int32(1), Int32(2)).ptx


def test_stores_and_their_barriers_in_the_peer_cta():
    MISTAKE.clear()
    ptx = _ptx()
    b32 = re.findall(r"st\.async\.shared::cluster\.mbarrier::complete_tx::bytes\.b32", ptx)
    b64 = re.findall(r"st\.async\.shared::cluster\.mbarrier::complete_tx::bytes\.b64", ptx)
    assert len(b32) == 1 and len(b64) == 3          # one i32; two as 8 bytes; four as two 8-byte stores
    assert len(re.findall(r"mapa\.shared::cluster\.u32", ptx)) == 6  # destination and barrier of each call


def test_conditional_try_wait_is_in_a_branch():
    MISTAKE.clear()
    ptx = _ptx()
    body = ptx[ptx.index(".entry"):]
    wait = body.index("mbarrier.try_wait.parity")
    # the threads without the condition branch past the wait: a conditional branch comes before it
    assert re.search(r"@%p\d+ bra", body[:wait]), body[:wait]
    assert body.count("mbarrier.try_wait") == 1


@pytest.mark.parametrize("kind,text,message", [
    ("align", "# misaligned", "must be aligned to 8 bytes"),
    ("count", "# three values", "a tuple of 2 or 4, got 3 values"),
    ("pointer", "# not a pointer", "smem_ptr is a CuTe pointer"),
    ("cond", "# not a Boolean", "cond is a Boolean"),
])
def test_mistakes_at_the_users_line(kind, text, message):
    MISTAKE["kind"] = kind
    try:
        with pytest.raises(Exception, match=message) as e:
            _ptx()
        assert e.value.location == (__file__, line_in(__file__, text))
    finally:
        MISTAKE.clear()

