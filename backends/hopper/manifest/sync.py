"""Synchronisation primitives: mbarriers, proxy fences, clusters, elect and grid dependency control."""
from __future__ import annotations

from manifest_builder import attribute, operand

from .common import primitive


def mbarrier_primitives():
    out = []
    P = primitive
    out.append(P("hopper.mbarrier.init", "BARRIER",
                 description="mbarrier.init: the 8-byte mbarrier at mbar expects count arrivals per phase",
                 python_name="arch.mbarrier_init",
                 operands=[operand("mbar", "MBARRIER", "IN"), operand("count", "SCALAR", "IN")],
                 ptx_template="mbarrier.init.shared::cta.b64 [$0], $1;", constraints="r,r", has_side_effects=True,
                 sass_opcodes=["SYNCS.EXCH.64"]))
    out.append(P("hopper.mbarrier.init_fence", "FENCE",
                 description="fence.mbarrier_init.release.cluster: makes mbarrier.init visible to the cluster (and "
                             "to TMA) before they use the barrier. No SASS of its own under ptxas 13.0 (mbarrier.init "
                             "already carries FENCE.VIEW.ASYNC.S)",
                 python_name="arch.mbarrier_init_fence", ptx_template="fence.mbarrier_init.release.cluster;",
                 has_side_effects=True))
    out.append(P("hopper.mbarrier.arrive", "ARRIVE",
                 description="mbarrier.arrive: one arrival on this CTA's mbarrier (release, CTA scope)",
                 python_name="arch.mbarrier_arrive", operands=[operand("mbar", "MBARRIER", "IN")],
                 ptx_template="mbarrier.arrive.shared::cta.b64 _, [$0];", constraints="r", has_side_effects=True,
                 sass_opcodes=["SYNCS.ARRIVE.TRANS64.A1T0"]))
    out.append(P("hopper.mbarrier.arrive.cluster", "ARRIVE",
                 description="mbarrier.arrive on the mbarrier at the same offset in the CTA of rank cta_id in the "
                             "cluster (release, CTA scope: a pipeline's consumer arrives once its reads of the "
                             "stage have completed, so the peer's TMA writes that the arrival permits cannot "
                             "overtake them; a cluster-scope release would cost a MEMBAR.ALL.GPU per arrival)",
                 python_name="arch.mbarrier_arrive_cluster",
                 operands=[operand("mbar", "MBARRIER", "IN"), operand("cta_id", "SCALAR", "IN")],
                 ptx_template=("{ .reg .b32 ww_remote; mapa.shared::cluster.u32 ww_remote, $0, $1; "
                               "mbarrier.arrive.shared::cluster.b64 _, [ww_remote]; }"),
                 constraints="r,r", has_side_effects=True, sass_opcodes=["SYNCS.ARRIVE.TRANS64.RED.A1T0"]))
    out.append(P("hopper.mbarrier.arrive_expect_tx", "ARRIVE",
                 description="mbarrier.arrive.expect_tx: one arrival that also expects tx_count more transaction "
                             "bytes (e.g. of TMA loads) in this phase",
                 python_name="arch.mbarrier_arrive_and_expect_tx",
                 operands=[operand("mbar", "MBARRIER", "IN"), operand("tx_count", "SCALAR", "IN")],
                 ptx_template="mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", constraints="r,r",
                 has_side_effects=True, sass_opcodes=["SYNCS.ARRIVE.TRANS64"]))
    out.append(P("hopper.mbarrier.arrive_expect_tx.cluster", "ARRIVE",
                 description="mbarrier.arrive.expect_tx on the mbarrier at the same offset in the CTA of rank cta_id "
                             "in the cluster: an arrival there that also expects tx_count more bytes, sent ahead of "
                             "the st.async writes into that CTA that complete them (a tile scheduler's broadcast)",
                 python_name="arch.mbarrier_arrive_and_expect_tx_cluster",
                 operands=[operand("mbar", "MBARRIER", "IN"), operand("tx_count", "SCALAR", "IN"),
                           operand("cta_id", "SCALAR", "IN")],
                 ptx_template=("{ .reg .b32 ww_remote; mapa.shared::cluster.u32 ww_remote, $0, $2; "
                               "mbarrier.arrive.expect_tx.shared::cluster.b64 _, [ww_remote], $1; }"),
                 constraints="r,r,r", has_side_effects=True, sass_opcodes=["SYNCS.ARRIVE.TRANS64.RED"]))
    out.append(P("hopper.mbarrier.expect_tx", "BARRIER",
                 description="mbarrier.expect_tx: expects tx_count more transaction bytes in the current phase, "
                             "without arriving",
                 python_name="arch.mbarrier_expect_tx",
                 operands=[operand("mbar", "MBARRIER", "IN"), operand("tx_count", "SCALAR", "IN")],
                 ptx_template="mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [$0], $1;", constraints="r,r",
                 has_side_effects=True, sass_opcodes=["SYNCS.ARRIVE.TRANS64.RED.A0TR"]))
    out.append(P("hopper.mbarrier.try_wait.parity", "WAIT",
                 description="mbarrier.try_wait.parity: true once the phase of parity phase (0 or 1) has completed; "
                             "may block for a time-limit first. Loop on it, or use hopper.mbarrier.wait.parity",
                 python_name="arch.mbarrier_try_wait",
                 operands=[operand("done", "PREDICATE", "OUT"), operand("mbar", "MBARRIER", "IN"),
                           operand("phase", "SCALAR", "IN")],
                 ptx_template="mbarrier.try_wait.parity.shared::cta.b64 $0, [$1], $2;", constraints="=b,r,r",
                 has_side_effects=True, sass_opcodes=["SYNCS.PHASECHK.TRANS64.TRYWAIT"]))
    # The loop's try_wait carries a suspend-time hint (10 ms, the phase's completion wakes the thread first): ptxas
    # then parks a waiting warp in NANOSLEEP.SYNCS, woken by the barrier, where without it the warp re-issues the
    # try_wait in a loop. A warp-specialised kernel's producer waits on an empty stage for as long as the
    # consumers' epilogue lasts, on the schedulers those consumers issue from (CuTe DSL's and CUTLASS's waits carry
    # the same hint).
    # The loop's back-edge is a uniform branch (bra.uni), as in CuTe DSL's wait: the lanes of a warp that wait on
    # one barrier and phase get one answer from each try, so the warp leaves the loop together, and ptxas need not
    # keep the loop's exit as a point where the warp reconverges. In a kernel where that exit sat in a long-lived
    # region (dense_blockscaled_gemm_persistent_amax's epilogue before its register fixes) ptxas took 50 registers
    # instead of 57. It asks that every lane of a warp running the wait names the same barrier and phase, as every
    # pipeline's does; lanes that wait on barriers of their own loop on mbarrier_try_wait instead (a DSL loop,
    # whose branch the compiler keeps divergent).
    out.append(P("hopper.mbarrier.wait.parity", "WAIT",
                 description=("waits (a try_wait.parity loop in PTX) until the phase of parity phase has completed; "
                              "the lanes of a warp that run it together wait on the same barrier and phase (the loop "
                              "exits for the whole warp at once); lanes with barriers of their own loop on "
                              "mbarrier_try_wait"),
                 python_name="arch.mbarrier_wait",
                 operands=[operand("mbar", "MBARRIER", "IN"), operand("phase", "SCALAR", "IN")],
                 ptx_template=("{ .reg .pred ww_done; ww_wait: mbarrier.try_wait.parity.shared::cta.b64 ww_done, "
                               "[$0], $1, 10000000; @!ww_done bra.uni ww_wait; }"),
                 constraints="r,r", has_side_effects=True, sass_opcodes=["SYNCS.PHASECHK.TRANS64.TRYWAIT"]))
    out.append(P("hopper.mbarrier.inval", "BARRIER",
                 description="mbarrier.inval: invalidates the mbarrier so that its memory can be reused",
                 python_name="arch.mbarrier_inval", operands=[operand("mbar", "MBARRIER", "IN")],
                 ptx_template="mbarrier.inval.shared::cta.b64 [$0];", constraints="r", has_side_effects=True,
                 sass_opcodes=["SYNCS.CCTL.IV"]))
    return out


def proxy_fence_primitives():
    out = []
    P = primitive
    # SASS seen: FENCE.VIEW.ASYNC.S for the shared spaces and for the unqualified fence (with MEMBARs), .G for global.
    for suffix, what, sass in (("", "all state spaces", "FENCE.VIEW.ASYNC.S"),
                               (".shared::cta", "this CTA's shared memory", "FENCE.VIEW.ASYNC.S"),
                               (".shared::cluster", "the cluster's shared memory", "FENCE.VIEW.ASYNC.S"),
                               (".global", "global memory", "FENCE.VIEW.ASYNC.G")):
        name = "hopper.fence.proxy.async" + suffix.replace("::", "_")
        out.append(P(name, "FENCE",
                     description=f"fence.proxy.async{suffix}: orders generic-proxy accesses of {what} with async-proxy "
                                 "ones (TMA, wgmma), e.g. smem writes before a TMA store reads them",
                     python_name="arch.fence_proxy_async" + suffix.replace("::", "_").replace(".", "_"),
                     ptx_template=f"fence.proxy.async{suffix};", has_side_effects=True, sass_opcodes=[sass]))
    return out


def cluster_primitives():
    out = []
    P = primitive
    for name, ptx, pyn, sass in (
            ("hopper.cluster.arrive", "barrier.cluster.arrive.aligned;", "arch.cluster_arrive", "UCGABAR_ARV"),
            ("hopper.cluster.arrive.relaxed", "barrier.cluster.arrive.relaxed.aligned;", "arch.cluster_arrive_relaxed",
             "UCGABAR_ARV"),
            ("hopper.cluster.wait", "barrier.cluster.wait.aligned;", "arch.cluster_wait", "UCGABAR_WAIT")):
        out.append(P(name, "CLUSTER",
                     description=f"{ptx[:-1]}: every thread of the CTA executes it (aligned); arrive (release, or "
                                 "relaxed: no ordering) then wait (acquire) synchronises the cluster's CTAs",
                     python_name=pyn, ptx_template=ptx, has_side_effects=True, sass_opcodes=[sass]))
    xyz = attribute("dim", type_="string", allowed=("x", "y", "z"))
    # ptxas reads most of these from the launch's constant bank (LDC) or derives them from %ctaid, so only
    # %cluster_ctarank has a recognisable SASS operand (SR_CgaCtaId).
    for name, reg, pyn, what, has_dim in (
            ("hopper.cluster.ctaid", "cluster_ctaid", "arch.block_idx_in_cluster", "this CTA's index in its cluster",
             True),
            ("hopper.cluster.nctaid", "cluster_nctaid", "arch.cluster_dim", "the cluster's shape in CTAs", True),
            ("hopper.cluster.ctarank", "cluster_ctarank", "arch.block_rank_in_cluster",
             "this CTA's linear rank in its cluster", False),
            ("hopper.cluster.nctarank", "cluster_nctarank", "arch.cluster_size", "the number of CTAs of the cluster",
             False),
            ("hopper.cluster.clusterid", "clusterid", "arch.cluster_idx", "the cluster's index in the grid", True),
            ("hopper.cluster.nclusterid", "nclusterid", "arch.cluster_grid_dim", "the grid's shape in clusters", True)):
        sreg = f"%{reg}.{{dim}}" if has_dim else f"%{reg}"
        out.append(P(name, "CLUSTER", description=f"%{reg}{'.{x,y,z}' if has_dim else ''}: {what}",
                     python_name=pyn, operands=[operand("value", "SCALAR", "OUT")],
                     attributes=[xyz] if has_dim else [], ptx_template=f"mov.u32 $0, {sreg};", constraints="=r",
                     sass_opcodes=["SR_CgaCtaId"] if reg == "cluster_ctarank" else []))
    out.append(P("hopper.cluster.is_explicit", "CLUSTER",
                 description="%is_explicit_cluster: whether the launch named a cluster shape",
                 python_name="arch.is_explicit_cluster", operands=[operand("value", "PREDICATE", "OUT")],
                 ptx_template="mov.pred $0, %is_explicit_cluster;", constraints="=b"))
    out.append(P("hopper.cluster.mapa", "CLUSTER",
                 description="mapa.shared::cluster: the shared::cluster address of addr (a shared::cta address) in "
                             "the CTA of rank cta_id",
                 python_name="arch.mapa",
                 operands=[operand("remote", "SCALAR", "OUT"), operand("addr", "SMEM_ADDRESS", "IN"),
                           operand("cta_id", "SCALAR", "IN")],
                 ptx_template="mapa.shared::cluster.u32 $0, $1, $2;", constraints="=r,r,r", sass_opcodes=["PRMT"]))
    return out


def elect_primitives():
    out = []
    P = primitive
    out.append(P("hopper.elect.sync", "ELECT",
                 description="elect.sync: true in exactly one active lane of membermask (the lowest)",
                 python_name="arch.elect_one", operands=[operand("elected", "PREDICATE", "OUT")],
                 attributes=[attribute("membermask", default="0xffffffff")],
                 ptx_template="{ .reg .b32 ww_lane; elect.sync ww_lane|$0, {membermask}; }", constraints="=b",
                 has_side_effects=True, sass_opcodes=["ELECT"]))
    return out


def grid_dependency_primitives():
    """Programmatic dependent launch (sm_90 on): a kernel launched with use_pdl may start before the one it
    depends on has finished, and waits for it where it needs its results."""
    return [
        primitive("hopper.griddepcontrol.wait", "WAIT",
                  description=("griddepcontrol.wait: waits until the grids this one depends on have completed and "
                               "their memory operations are visible (a no-op when launched without a dependency)"),
                  python_name="arch.griddepcontrol_wait", ptx_template="griddepcontrol.wait;",
                  has_side_effects=True, sass_opcodes=["ACQBULK"]),
        primitive("hopper.griddepcontrol.launch_dependents", "OTHER",
                  description=("griddepcontrol.launch_dependents: lets the grids that depend on this one be "
                               "scheduled once every CTA of this grid has issued it or exited"),
                  python_name="arch.griddepcontrol_launch_dependents",
                  ptx_template="griddepcontrol.launch_dependents;", has_side_effects=True, sass_opcodes=["PREEXIT"]),
    ]
