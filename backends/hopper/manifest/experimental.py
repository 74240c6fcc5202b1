"""cutlass.experimental.primitives that are sm_90 instructions no other entry already is (mbarrier arrivals and
waits of other forms, bulk copies and reductions of byte ranges, red, fences, stmatrix of words), and the
tensor-map edits (tensormap.replace, sm_90a)."""
from __future__ import annotations

from manifest_builder import attribute, operand

from .common import TARGET, primitive, regs

# The (operation, type) groups of cp.reduce.async.bulk to a global destination, as ptxas 13.0 takes them (every
# other pair it refuses, e.g. "Incorrect type '.f32' for operation '.and'"): (group, operations, types, suffix).
BULK_REDUCE_GROUPS = (
    ("bitwise", ("and", "or", "xor"), ("b32", "b64"), ""),
    ("counter", ("inc", "dec"), ("u32",), ""),
    ("add", ("add",), ("u32", "s32", "u64", "f32", "f64"), ""),
    ("add_noftz", ("add",), ("f16", "bf16"), ".noftz"),
    ("minmax", ("min", "max"), ("u32", "s32", "u64", "s64", "f16", "bf16"), ""),
)


def experimental_tma_primitives():
    """cutlass.experimental.primitives' tensor-map edits (tensormap.replace, sm_90a): a field of the 128-byte tensor
    map at addr (generic, global, or in this CTA's shared memory) set to new_value. The tensor-copy primitives
    themselves are the TMA entries (tma.py), which the backend's Python (python/tma_primitives.py) selects; it adapts
    CuTe DSL's signature (TensormapField, ord) onto these."""
    out = []
    # field -> (value type, takes an ordinal): .field1 (whole map) and .field2 (one dimension, ord an immediate)
    fields = {"global_address": ("b64", False), "rank": ("b32", False), "box_dim": ("b32", True),
              "global_dim": ("b32", True), "global_stride": ("b64", True), "element_stride": ("b32", True)}
    for space, role, acons in (("generic", "GMEM_ADDRESS", "l"), ("global", "GMEM_ADDRESS", "l"),
                               ("shared::cta", "SMEM_ADDRESS", "r")):
        ss = "" if space == "generic" else "." + space
        for field, (ty, ordinal) in fields.items():
            where = "[$0], {ord}, $1" if ordinal else "[$0], $1"
            attrs = [attribute("ord", allowed=range(5), default=0)] if ordinal else []
            out.append(primitive(
                f"hopper.tensormap.replace.{field}.{space.replace('::', '_')}", "OTHER",
                description=(f"tensormap.replace.tile.{field}: sets the {field.replace('_', ' ')}"
                             + (" of dimension ord (0..4, innermost first)" if ordinal else "")
                             + f" of the tensor map at addr ({space}) to new_value; the map is used by TMA after a "
                             "fence.proxy.tensormap::generic release/acquire"),
                python_name="tensormap.replace", python_params={"field": field, "space": space},
                operands=[operand("addr", role, "IN"), operand("new_value", "SCALAR", "IN", register_type=ty)],
                attributes=attrs,
                ptx_template=f"tensormap.replace.tile.{field}{ss}.b1024.{ty} {where};",
                constraints=f"{acons},{'l' if ty == 'b64' else 'r'}", has_side_effects=True,
                sass_opcodes=[], targets=TARGET))
    return out


def experimental_sync_primitives():
    """cutlass.experimental.primitives (python names primitives.*) that are sm_90 instructions and that no other
    entry already is: mbarrier arrivals that return their state or reach another CTA's barrier, waits with a
    suspend-time hint or on a state, non-tensor bulk copies, red on another CTA's shared memory (and 16-bit bf16
    red). The backend's Python adapts CuTe DSL's signatures (enumerations, pointers) onto them."""
    P = primitive
    mbar, phase = operand("mbar", "MBARRIER", "IN"), operand("phase", "SCALAR", "IN")
    done = operand("done", "PREDICATE", "OUT")
    limit = operand("time_limit", "SCALAR", "IN")
    scope = attribute("scope", type_="string", allowed=("cta", "cluster"), default="cta")
    # relaxed (PTX 8.6): an arrival that orders nothing, e.g. after a fence.release.sync_restrict of its own
    sem = attribute("sem", type_="string", allowed=("release", "relaxed"), default="release")
    out = [
        P("hopper.mbarrier.arrive.state", "ARRIVE",
          description="mbarrier.arrive.{release,relaxed}.{cta,cluster}.shared::cta: one arrival on this CTA's mbarrier; "
                      "returns the barrier's state before it (a token for mbarrier.try_wait)",
          python_name="primitives.mbarrier_arrive", python_params={"space": "shared::cta"},
          operands=[operand("state", "SCALAR", "OUT", register_type="b64"), mbar], attributes=[sem, scope],
          ptx_template="mbarrier.arrive.{sem}.{scope}.shared::cta.b64 $0, [$1];", constraints="=l,r",
          has_side_effects=True, sass_opcodes=["SYNCS.ARRIVE.TRANS64"]),
        P("hopper.mbarrier.arrive.shared_cluster", "ARRIVE",
          description="mbarrier.arrive.{release,relaxed}.{cta,cluster}.shared::cluster: one arrival on the mbarrier at a "
                      "shared::cluster address (another CTA's, from mapa); no state is returned",
          python_name="primitives.mbarrier_arrive", python_params={"space": "shared::cluster"},
          operands=[mbar], attributes=[sem, scope],
          ptx_template="mbarrier.arrive.{sem}.{scope}.shared::cluster.b64 _, [$0];", constraints="r",
          has_side_effects=True, sass_opcodes=["SYNCS.ARRIVE.TRANS64.RED"]),
        P("hopper.mbarrier.arrive.state.count", "ARRIVE",
          description="mbarrier.arrive.{release,relaxed}.{cta,cluster}.shared::cta with a count: count arrivals on this CTA's "
                      "mbarrier at once; returns the barrier's state before them",
          python_name="primitives.mbarrier_arrive", python_params={"space": "shared::cta"},
          operands=[operand("state", "SCALAR", "OUT", register_type="b64"), mbar, operand("count", "SCALAR", "IN")],
          attributes=[sem, scope], ptx_template="mbarrier.arrive.{sem}.{scope}.shared::cta.b64 $0, [$1], $2;",
          constraints="=l,r,r", has_side_effects=True, sass_opcodes=["SYNCS.ARRIVE.TRANS64"]),
        P("hopper.mbarrier.arrive.shared_cluster.count", "ARRIVE",
          description="mbarrier.arrive.{release,relaxed}.{cta,cluster}.shared::cluster with a count: count arrivals on the "
                      "mbarrier at a shared::cluster address (another CTA's, from mapa)",
          python_name="primitives.mbarrier_arrive", python_params={"space": "shared::cluster"},
          operands=[mbar, operand("count", "SCALAR", "IN")], attributes=[sem, scope],
          ptx_template="mbarrier.arrive.{sem}.{scope}.shared::cluster.b64 _, [$0], $1;", constraints="r,r",
          has_side_effects=True, sass_opcodes=["SYNCS.ARRIVE.TRANS64.RED"]),
        P("hopper.mbarrier.try_wait.parity.hint", "WAIT",
          description="mbarrier.try_wait.parity with a suspend-time hint: true once the phase of parity phase has "
                      "completed; the thread may sleep up to time_limit nanoseconds first",
          python_name="primitives.mbarrier_try_wait_parity", operands=[done, mbar, phase, limit],
          ptx_template="mbarrier.try_wait.parity.shared::cta.b64 $0, [$1], $2, $3;", constraints="=b,r,r,r",
          has_side_effects=True, sass_opcodes=["SYNCS.PHASECHK.TRANS64.TRYWAIT"]),
        P("hopper.mbarrier.try_wait.parity.plain", "WAIT",
          description="mbarrier.try_wait.parity: true once the phase of parity phase has completed (the thread "
                      "may block for a system-dependent time first)",
          python_name="primitives.mbarrier_try_wait_parity", operands=[done, mbar, phase],
          ptx_template="mbarrier.try_wait.parity.shared::cta.b64 $0, [$1], $2;", constraints="=b,r,r",
          has_side_effects=True, sass_opcodes=["SYNCS.PHASECHK.TRANS64.TRYWAIT"]),
        P("hopper.mbarrier.try_wait.state.hint", "WAIT",
          description="mbarrier.try_wait on a state token (from an arrival): true once that phase has completed; "
                      "the thread may sleep up to time_limit nanoseconds first",
          python_name="primitives.mbarrier_try_wait_timelimit",
          operands=[done, mbar, operand("state", "SCALAR", "IN", register_type="b64"), limit],
          ptx_template="mbarrier.try_wait.shared::cta.b64 $0, [$1], $2, $3;", constraints="=b,r,l,r",
          has_side_effects=True, sass_opcodes=["SYNCS.PHASECHK.TRANS64.TRYWAIT"]),
        P("hopper.bulk.shared_cluster.global", "OTHER",
          description="cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes: size bytes (a multiple "
                      "of 16, 16-byte aligned addresses) from global src to shared dst, completing them on mbar",
          python_name="primitives.cp_async_bulk_shared_cluster_global",
          operands=[operand("dst", "SMEM_ADDRESS", "IN"), operand("src", "GMEM_ADDRESS", "IN"), mbar,
                    operand("size", "SCALAR", "IN")],
          ptx_template="cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1], $3, [$2];",
          constraints="r,l,r,r", has_side_effects=True, sass_opcodes=["UBLKCP.S.G"]),
        P("hopper.bulk.global.shared_cta", "OTHER",
          description="cp.async.bulk.global.shared::cta.bulk_group: size bytes (a multiple of 16) from shared src "
                      "to global dst, completing with this thread's bulk groups",
          python_name="primitives.cp_async_bulk_global_shared_cta",
          operands=[operand("dst", "GMEM_ADDRESS", "IN"), operand("src", "SMEM_ADDRESS", "IN"),
                    operand("size", "SCALAR", "IN")],
          ptx_template="cp.async.bulk.global.shared::cta.bulk_group [$0], [$1], $2;", constraints="l,r,r",
          has_side_effects=True, sass_opcodes=["UBLKCP.G.S"]),
        P("hopper.bulk.shared_cluster.shared_cta", "OTHER",
          description="cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes: size bytes from this "
                      "CTA's shared src to dst in a CTA of the cluster, completing them on mbar (in dst's CTA)",
          python_name="primitives.cp_async_bulk_shared_cluster_shared_cta",
          operands=[operand("dst", "SMEM_ADDRESS", "IN"), operand("src", "SMEM_ADDRESS", "IN"), mbar,
                    operand("size", "SCALAR", "IN")],
          ptx_template="cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [$0], [$1], $3, [$2];",
          constraints="r,r,r,r", has_side_effects=True, sass_opcodes=["UBLKCP.S.S"]),
        P("hopper.bulk.prefetch", "OTHER",
          description="cp.async.bulk.prefetch.L2.global: brings size bytes (a multiple of 16) at src into L2",
          python_name="primitives.cp_async_bulk_prefetch",
          operands=[operand("src", "GMEM_ADDRESS", "IN"), operand("size", "SCALAR", "IN")],
          ptx_template="cp.async.bulk.prefetch.L2.global [$0], $1;", constraints="l,r", has_side_effects=True,
          sass_opcodes=["UBLKPF"]),
    ]
    # cp.reduce.async.bulk of a byte range (no tensor map): the (operation, type) pairs ptxas 13.0 takes for a global
    # destination, one entry a group of them (the wrapper in python/primitives.py picks the group and names the
    # pairs when a program asks for another); f16/bf16 adds are .noftz only. Each with and without an L2 cache hint.
    for group, ops, types, noftz in BULK_REDUCE_GROUPS:
        for hint in (False, True):
            h = ".L2::cache_hint" if hint else ""
            out.append(P(
                f"hopper.bulk_reduce.global.shared_cta.{group}" + (".hint" if hint else ""), "OTHER",
                description=(f"cp.reduce.async.bulk.global.shared::cta.bulk_group{h}.{{op}}{noftz}.{{type}}: "
                             "reduces size bytes (a multiple of 16, 16-byte aligned addresses) of shared src into "
                             "global dst element by element, completing with this thread's bulk groups"
                             + (", with the L2 cache policy in hint" if hint else "")),
                python_name="primitives.cp_reduce_async_bulk_global_shared_cta",
                python_params={"group": group, "hint": str(hint)},
                operands=[operand("dst", "GMEM_ADDRESS", "IN"), operand("src", "SMEM_ADDRESS", "IN"),
                          operand("size", "SCALAR", "IN")]
                + ([operand("hint", "SCALAR", "IN", register_type="b64")] if hint else []),
                attributes=[attribute("op", type_="string", allowed=ops, default=ops[0]),
                            attribute("type", type_="string", allowed=types, default=types[0])],
                ptx_template=(f"cp.reduce.async.bulk.global.shared::cta.bulk_group{h}.{{op}}{noftz}.{{type}} "
                              "[$0], [$1], $2" + (", $3;" if hint else ";")),
                constraints="l,r,r" + (",l" if hint else ""), has_side_effects=True,
                sass_opcodes=["UBLKRED.G.S"]))
    # fence.sync_restrict (PTX 8.6, sm_90 on): release orders this thread's shared::cta writes, acquire makes
    # shared::cluster ones visible, both at cluster scope; cheaper than a full fence.acq_rel.cluster where only a
    # peer CTA's mbarrier arrival has to order shared memory. SASS seen (ptxas 13.0): the acquire emits none.
    for order, space, sass in (("release", "shared::cta", ["MEMBAR.ALL.CTA", "FENCE.VIEW.ASYNC.S"]),
                               ("acquire", "shared::cluster", [])):
        out.append(P(f"hopper.fence.sync_restrict.{order}", "FENCE",
                     description=(f"fence.{order}.sync_restrict::{space}.cluster: a fence of {order} semantics at cluster scope "
                                  f"restricted to the {space} state space"),
                     python_name="primitives.fence_sync_restrict", python_params={"order": order},
                     ptx_template=f"fence.{order}.sync_restrict::{space}.cluster;", has_side_effects=True,
                     sass_opcodes=sass))
    # red: on another CTA's shared memory (cluster scope), and bf16 adds (sm_90) everywhere. SASS seen (ptxas 13.0):
    # a generic ATOM for shared::cluster, and a compare-and-swap loop for the scalar 16-bit float adds.
    def red_sass(space, bits):
        if bits == 16:
            return "CAS"
        return {"global": "RED", "shared::cta": "ATOMS", "shared::cluster": "ATOM"}[space]

    sem = attribute("sem", type_="string", allowed=("relaxed", "release"), default="relaxed")
    red_scope = attribute("scope", type_="string", allowed=("cluster", "cta", "gpu", "sys"), default="cluster")
    widths = ((32, "b32", "r", ("add", "min", "max", "and", "or", "xor", "inc", "dec"), ("u32", "s32", "b32", "f32")),
              (64, "b64", "l", ("add", "min", "max", "and", "or", "xor"), ("u64", "s64", "b64", "f64")),
              (16, "b16", "h", ("add",), ("f16", "bf16")))
    for space, role, acons in (("shared::cluster", "SMEM_ADDRESS", "r"), ("global", "GMEM_ADDRESS", "l"),
                               ("shared::cta", "SMEM_ADDRESS", "r")):
        for bits, rt, vcons, ops, types in widths:
            if space != "shared::cluster" and bits != 16:
                continue  # Ampere's entries
            noftz = ".noftz" if bits == 16 else ""
            out.append(P(
                f"hopper.red.{space.replace('::', '_')}.b{bits}", "OTHER",
                description=f"red.{{sem}}.{{scope}}.{space}.{{op}}{noftz}.{{type}}: an atomic reduction of value into "
                            f"the {bits}-bit word at addr, without a result",
                python_name="primitives.red", python_params={"space": space, "bits": str(bits)},
                operands=[operand("addr", role, "IN"), operand("value", "SCALAR", "IN", register_type=rt)],
                attributes=[attribute("op", type_="string", allowed=ops, default="add"),
                            attribute("type", type_="string", allowed=types, default=types[0]), sem, red_scope],
                ptx_template=f"red.{{sem}}.{{scope}}.{space}.{{op}}{noftz}.{{type}} [$0], $1;",
                constraints=f"{acons},{vcons}", has_side_effects=True,
                sass_opcodes=[red_sass(space, bits)]))
    # the tensormap proxy: a tensor map written through generic stores (tensormap.replace, st.global) is released
    # to it by the writer and acquired from it (the 128 bytes at its address) before TMA uses it
    fscope = attribute("scope", type_="string", allowed=("gpu", "cta", "cluster", "sys"), default="gpu")
    out.append(P("hopper.fence.proxy.tensormap.release", "FENCE",
                 description="fence.proxy.tensormap::generic.release: orders this thread's generic-proxy writes of a "
                             "tensor map before later tensormap-proxy reads of it, at scope",
                 python_name="primitives.fence_proxy_release", attributes=[fscope],
                 ptx_template="fence.proxy.tensormap::generic.release.{scope};", has_side_effects=True,
                 sass_opcodes=["MEMBAR.ALL.GPU"]))
    out.append(P("hopper.fence.proxy.tensormap.acquire", "FENCE",
                 description="fence.proxy.tensormap::generic.acquire: makes the 128-byte tensor map at addr (generic "
                             "address), released by its writer, visible to this thread's tensormap-proxy reads",
                 python_name="primitives.fence_proxy_acquire", operands=[operand("addr", "GMEM_ADDRESS", "IN")],
                 attributes=[fscope], ptx_template="fence.proxy.tensormap::generic.acquire.{scope} [$0], 128;",
                 constraints="l", has_side_effects=True, sass_opcodes=["CCTL"]))
    # stmatrix of 32-bit words (CuTe DSL's primitives take the packed words, not the atoms' b16 values)
    for x in (1, 2, 4):
        for layout, trans in (("row", ""), ("col", ".trans")):
            out.append(P(
                f"hopper.stmatrix.m8n8.x{x}{trans}.words", "OTHER",
                description=f"stmatrix.m8n8.x{x}{trans}.b16: {x} 8x8 16-bit matrices to shared memory"
                            + (", transposed" if trans else "") + ", from one packed 32-bit word a matrix a lane",
                python_name="primitives.stmatrix",
                python_params={"shape": "m8n8", "num": str(x), "layout": layout, "format": "b16"},
                operands=[operand("addr", "SMEM_ADDRESS", "IN"),
                          operand("words", "REGISTERS", "IN", element_type="b32", values=x, registers=x,
                                  register_type="b32")],
                ptx_template=f"stmatrix.sync.aligned.m8n8.x{x}{trans}.shared.b16 [$0], {{{regs(1, x)}}};",
                constraints=",".join(["r"] * (x + 1)), has_side_effects=True, sass_opcodes=["STSM"]))
    return out
