"""Primitives of clusters: barriers, special registers, mapa and remote arrivals, elect, the TMA descriptor
prefetch and proxy fences; and cluster launch control, which consumer Blackwell's generator takes too."""
from __future__ import annotations

from manifest_builder import entry, operand as op

from .tma import TMA_HOST_ATTRS


def cluster_primitives():
    """What a cluster of CTAs (and a 2-CTA tcgen05.mma pair) needs beyond the mbarrier basics: cluster barriers,
    the cluster special registers, mapa and remote arrivals, elect.sync, the TMA descriptor prefetch and the proxy
    fences. The PTX is Hopper's; sm_100a code needs entries of its own target (an arch-specific sm_90a entry does
    not run on sm_100a)."""
    P = lambda **kw: entry("primitives", **kw)  # noqa: E731
    for name, ptx, pyn in (("blackwell.cluster.arrive", "barrier.cluster.arrive.aligned;", "arch.cluster_arrive"),
                           ("blackwell.cluster.arrive.relaxed", "barrier.cluster.arrive.relaxed.aligned;",
                            "arch.cluster_arrive_relaxed"),
                           ("blackwell.cluster.wait", "barrier.cluster.wait.aligned;", "arch.cluster_wait")):
        yield P(id=name, kind="CLUSTER",
                description=(f"{ptx[:-1]}: every thread of the CTA executes it (aligned); arrive (release, or relaxed: "
                             "no ordering) then wait (acquire) synchronises the cluster's CTAs"),
                python_name=pyn, ptx_template=ptx, has_side_effects=True,
                sass_opcodes=["UCGABAR_WAIT" if name.endswith("wait") else "UCGABAR_ARV"])
    xyz = {"name": "dim", "type": "string", "allowed": ["x", "y", "z"]}
    for name, reg, pyn, what, has_dim in (
            ("blackwell.cluster.ctaid", "cluster_ctaid", "arch.block_idx_in_cluster", "this CTA's index in its cluster",
             True),
            ("blackwell.cluster.nctaid", "cluster_nctaid", "arch.cluster_dim", "the cluster's shape in CTAs", True),
            ("blackwell.cluster.ctarank", "cluster_ctarank", "arch.block_rank_in_cluster",
             "this CTA's linear rank in its cluster", False),
            ("blackwell.cluster.nctarank", "cluster_nctarank", "arch.cluster_size", "the number of CTAs of the cluster",
             False),
            ("blackwell.cluster.clusterid", "clusterid", "arch.cluster_idx", "the cluster's index in the grid", True),
            ("blackwell.cluster.nclusterid", "nclusterid", "arch.cluster_grid_dim", "the grid's shape in clusters",
             True)):
        sreg = f"%{reg}.{{dim}}" if has_dim else f"%{reg}"
        yield P(id=name, kind="CLUSTER", description=f"%{reg}{'.{x,y,z}' if has_dim else ''}: {what}",
                python_name=pyn, operands=[op("value", "SCALAR", "OUT")], attributes=[xyz] if has_dim else [],
                ptx_template=f"mov.u32 $0, {sreg};", constraints="=r",
                sass_opcodes=["S2R"] if reg == "cluster_ctarank" else [])   # S2R of SR_CgaCtaId
    yield P(id="blackwell.cluster.mapa", kind="CLUSTER",
            description=("mapa.shared::cluster: the shared::cluster address of addr (a shared::cta address) in the CTA "
                         "of rank cta_id (e.g. the even CTA of a tcgen05 pair, whose mbarriers track both CTAs' loads)"),
            python_name="arch.mapa",
            operands=[op("remote", "SCALAR", "OUT"), op("addr", "SMEM_ADDRESS"), op("cta_id", "SCALAR")],
            ptx_template="mapa.shared::cluster.u32 $0, $1, $2;", constraints="=r,r,r", sass_opcodes=[])
    yield P(id="blackwell.mbarrier.arrive.cluster", kind="ARRIVE",
            description=("mbarrier.arrive on the mbarrier at the same offset in the CTA of rank cta_id in the cluster "
                         "(release, CTA scope)"),
            python_name="arch.mbarrier_arrive_cluster", operands=[op("mbar", "MBARRIER"), op("cta_id", "SCALAR")],
            ptx_template=("{ .reg .b32 ww_remote; mapa.shared::cluster.u32 ww_remote, $0, $1; "
                          "mbarrier.arrive.shared::cluster.b64 _, [ww_remote]; }"),
            constraints="r,r", has_side_effects=True, sass_opcodes=["SYNCS.ARRIVE.TRANS64.RED.A1T0"])
    yield P(id="blackwell.elect.sync", kind="ELECT",
            description="elect.sync: true in exactly one active lane of membermask (the lowest)",
            python_name="arch.elect_one", operands=[op("elected", "PREDICATE", "OUT")],
            attributes=[{"name": "membermask", "type": "int", "default_value": "0xffffffff"}],
            ptx_template="{ .reg .b32 ww_lane; elect.sync ww_lane|$0, {membermask}; }", constraints="=b",
            has_side_effects=True, sass_opcodes=["ELECT"])
    yield P(id="blackwell.tma.prefetch_descriptor", kind="OTHER",
            description="prefetch.tensormap: brings the tensor map at tmap (generic address) into the cache. " +
            TMA_HOST_ATTRS,
            python_name="cpasync.prefetch_descriptor", operands=[op("tmap", "TMA_DESCRIPTOR")],
            ptx_template="prefetch.tensormap [$0];", constraints="l", has_side_effects=True,
            sass_opcodes=["UTMACCTL.PF"], host_hook="encode_tma_descriptor")
    for r in range(1, 6):   # cute.prefetch of a TMA load atom: the boxes its copy would load, into L2
        coords = ", ".join(f"${i}" for i in range(1, r + 1))
        yield P(id=f"blackwell.tma.prefetch.{r}d", kind="OTHER",
                description=(f"cp.async.bulk.prefetch.tensor.{r}d.L2: brings the box at coords (elements, innermost "
                             "first) of the tensor map into L2, writing no shared memory; one thread issues it. " +
                             TMA_HOST_ATTRS),
                python_name=f"cpasync.prefetch_tile_{r}d",
                operands=[op("tmap", "TMA_DESCRIPTOR"), op("coords", "COORDINATE", count=r)],
                ptx_template=f"cp.async.bulk.prefetch.tensor.{r}d.L2.global [$0, {{{coords}}}];",
                constraints=",".join(["l"] + ["r"] * r), has_side_effects=True,
                sass_opcodes=[f"UTMAPF.L2.{r}D"], host_hook="encode_tma_descriptor")
    for suffix, what, sass in (("", "all state spaces", "FENCE.VIEW.ASYNC.S"),
                               (".shared::cluster", "the cluster's shared memory", "FENCE.VIEW.ASYNC.S"),
                               (".global", "global memory", "FENCE.VIEW.ASYNC.G")):
        yield P(id="blackwell.fence.proxy_async" + suffix.replace("::", "_"), kind="FENCE",
                description=(f"fence.proxy.async{suffix}: orders generic-proxy accesses of {what} with async-proxy ones "
                             "(TMA, tcgen05.mma)"),
                python_name="arch.fence_proxy_async" + suffix.replace("::", "_").replace(".", "_"),
                ptx_template=f"fence.proxy.async{suffix};", has_side_effects=True, sass_opcodes=[sass])


def clc_primitives(prefix: str = "blackwell", remote_arrive: bool = True):
    """Cluster launch control (sm_100a; consumer Blackwell's generator takes them too, prefix "blackwell_geforce":
    ptxas 13.0 assembles them, the multicast form included, for sm_120a and sm_121a, to the same UGETNEXTWORKID): a
    running cluster asks the hardware to cancel the launch of a cluster that has not started, and takes over its
    work (CuTe DSL's dynamic persistent tile scheduler and PipelineClcFetchAsync are built from these). The
    response is 16 opaque bytes in shared memory; the try_cancel completes its mbarrier by 16 transaction bytes (in
    every CTA of the cluster when multicast), and the query reads it back. A CTA that has seen a failed response
    must not issue another try_cancel. remote_arrive: also the arrival with expect_tx on a peer CTA's mbarrier
    (Hopper's portable sm_90 entry serves consumer Blackwell)."""
    P = lambda **kw: entry("primitives", **kw)  # noqa: E731
    resp, mbar = op("response", "SMEM_ADDRESS"), op("mbar", "MBARRIER")
    for suffix, pyn, where, sass in (
            ("", "arch.clc_try_cancel", "this CTA's shared memory at response; its mbarrier at mbar gets",
             "UGETNEXTWORKID.SELFCAST"),
            (".multicast::cluster::all", "arch.clc_try_cancel_multicast",
             "the shared memory of every CTA of the cluster at response's offset; the mbarrier at mbar's offset in "
             "each of them gets", "UGETNEXTWORKID.BROADCAST")):
        yield P(id=f"{prefix}.clc.try_cancel" + (".multicast" if suffix else ""), kind="OTHER",
                description=(f"clusterlaunchcontrol.try_cancel{suffix}: asynchronously asks to cancel the launch of a "
                             "cluster of this grid that has not started; the 16-byte response (canceled or not, and "
                             f"the first CTA id of the canceled cluster) is written to {where} a complete_tx of 16 "
                             "bytes. response is 16-byte aligned; the executing warp's one elected lane should issue it"),
                python_name=pyn, operands=[resp, mbar],
                ptx_template=("clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes"
                              f"{suffix}.b128 [$0], [$1];"),
                constraints="r,r", has_side_effects=True, sass_opcodes=[sass])
    yield P(id=f"{prefix}.clc.query_cancel", kind="OTHER",
            description=("clusterlaunchcontrol.query_cancel on the 16-byte response at response (shared memory, "
                         "read with ld.shared.b128 after its mbarrier phase completed): is_canceled, and the first "
                         "CTA id (x, y, z) of the canceled cluster (undefined when is_canceled is false)"),
            python_name="arch.clc_query_cancel",
            operands=[op("is_canceled", "PREDICATE", "OUT"), op("x", "SCALAR", "OUT"), op("y", "SCALAR", "OUT"),
                      op("z", "SCALAR", "OUT"), resp],
            ptx_template=("{ .reg .b128 ww_resp; ld.shared.b128 ww_resp, [$4]; "
                          "clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 $0, ww_resp; "
                          "clusterlaunchcontrol.query_cancel.get_first_ctaid.v4.b32.b128 {$1, $2, $3, _}, ww_resp; }"),
            constraints="=b,=r,=r,=r,r", has_side_effects=True, sass_opcodes=["LDS.128"])
    if not remote_arrive:
        return
    yield P(id="blackwell.mbarrier.arrive_expect_tx.cluster", kind="ARRIVE",
            description=("mbarrier.arrive.expect_tx on the mbarrier at the same offset in the CTA of rank cta_id in "
                         "the cluster: one arrival that also expects tx_count transaction bytes there (release, "
                         "cluster scope), e.g. for a response multicast to every CTA of the cluster"),
            python_name="arch.mbarrier_arrive_and_expect_tx_cluster",
            operands=[op("mbar", "MBARRIER"), op("tx_count", "SCALAR"), op("cta_id", "SCALAR")],
            ptx_template=("{ .reg .b32 ww_remote; mapa.shared::cluster.u32 ww_remote, $0, $2; "
                          "mbarrier.arrive.expect_tx.shared::cluster.b64 _, [ww_remote], $1; }"),
            constraints="r,r,r", has_side_effects=True, sass_opcodes=["SYNCS.ARRIVE.TRANS64.RED"])
