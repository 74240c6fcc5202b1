"""CuTe DSL's matrix loads and stores of bytes: warp.LdMatrix8x16x8bOp (an 8x16 byte matrix; with unpack_bits 4 or
6, 16 packed values a row widened to bytes), warp.LdMatrix16x16x8bOp (a 16x16 byte matrix, transposed, regrouped by
a byte permute) and warp.StMatrix16x8x8bOp (16x8 byte matrices stored transposed).

The layouts are checked against a model of the instruction written from the PTX ISA's fragment rules, not from the
manifest's layout strings: each thread's value lands at the coordinates the atom's layouts say. The m16n16 model
applies the byte permutes of the manifest's own template, so a wrong selector fails the test. A kernel with every
form compiles through ptxas for each target that has it; on a GPU (sm_80 or newer) the plain form's load, written
back through the destination partition, reproduces the tile.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from dsl_helpers import fresh_compilations, requires_gpu, sass_opcodes, target  # noqa: F401

from warpweave import _core

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base import trace
from warpweave._dsl.base.errors import DSLValueError
from warpweave._dsl.registry.plugins import registry

# (python class, transpose, num_matrices, unpack_bits, the targets whose backends offer it)
PLAIN = [("LdMatrix8x16x8bOp", False, x, None) for x in (1, 2, 4)]
UNPACKING = [("LdMatrix8x16x8bOp", False, x, u) for u in (4, 6) for x in (1, 2, 4)]
M16N16 = [("LdMatrix16x16x8bOp", True, x, u) for u in (None, 4, 6) for x in (1, 2)]
STORES = [("StMatrix16x8x8bOp", True, x, None) for x in (1, 2, 4)]
BLACKWELL = ("sm_100a", "sm_103a", "sm_120a", "sm_121a")


@pytest.fixture(scope="module", autouse=True)
def backends():
    registry.load()
    assert {"ampere", "blackwell", "blackwell_geforce"} <= set(registry.backends)


def _atom(arch, form):
    cls, trans, x, unpack = form
    with trace.tracing(trace.TraceState(target={"name": arch})):
        return cute.make_copy_atom(getattr(cute.nvgpu.warp, cls)(trans, x, unpack), cutlass.Int8)


def _prmt(a: list, b: list, selector: int) -> list:
    pool = a + b
    return [pool[(selector >> (4 * i)) & 0x7] for i in range(4)]


def _model(form, template):
    """(thread, value) -> (matrix row, byte of the row) as the instruction delivers it; rows are numbered over all
    matrices, row r's address given by thread r."""
    cls, _, x, _ = form
    out = {}
    for t in range(32):
        q, g = t % 4, t // 4
        if cls == "StMatrix16x8x8bOp":
            # one register a matrix of 8 rows: (row 2q, byte g) (2q+1, g) (2q, g+8) (2q+1, g+8)
            for i in range(x):
                for j, (dr, db) in enumerate(((0, 0), (1, 0), (0, 8), (1, 8))):
                    out[(t, 4 * i + j)] = (8 * i + 2 * q + dr, g + db)
            continue
        if cls == "LdMatrix8x16x8bOp":
            # one register a matrix: row g of matrix i, bytes 4q..4q+3 (the b16 rule: two 16-bit columns 2q, 2q+1)
            for i in range(x):
                for j in range(4):
                    out[(t, 4 * i + j)] = (8 * i + g, 4 * q + j)
            continue
        # m16n16, transposed: two registers a matrix; the first holds (row 4q, byte g) (4q+1, g) (4q, g+8)
        # (4q+1, g+8), the second the same of rows 4q+2 and 4q+3; then the template's byte permutes.
        regs = []
        for i in range(x):
            r0 = 16 * i + 4 * q
            regs.append([(r0, g), (r0 + 1, g), (r0, g + 8), (r0 + 1, g + 8)])
            regs.append([(r0 + 2, g), (r0 + 3, g), (r0 + 2, g + 8), (r0 + 3, g + 8)])
        perms = re.findall(r"prmt\.b32 \$(\d+), %(\w+), %(\w+), (0x[0-9a-f]+);", template)
        assert len(perms) == 2 * x, template
        tmp = {f"ldsm{i}": regs[i] for i in range(2 * x)}
        final = {int(d): _prmt(tmp[a], tmp[b], int(sel, 16)) for d, a, b, sel in perms}
        for r in range(2 * x):
            for j in range(4):
                out[(t, 4 * r + j)] = final[r][j]
    return out


@pytest.mark.parametrize("arch, form", [("sm_80", f) for f in PLAIN] + [("sm_100a", f) for f in PLAIN]
                         + [(a, f) for a in ("sm_100a", "sm_120a") for f in UNPACKING + M16N16 + STORES])
def test_each_value_lands_where_the_layouts_say(arch, form):
    atom = _atom(arch, form)
    # the shared-memory side (row addresses) and the register side, whichever way the atom copies
    src, dst = atom.layout_src_tv, atom.layout_dst_tv
    if form[0] == "StMatrix16x8x8bOp":
        src, dst = dst, src
    rows = 16 * form[2] if form[0] == "LdMatrix16x16x8bOp" else 8 * form[2]
    assert cute.size(dst, mode=[0]) == 32 and cute.size(dst, mode=[1]) == rows * 16 // 32
    # Thread r gives the address of row r (16 bytes); threads past the rows repeat ignored addresses.
    for thr in range(32):
        for k in range(16):
            assert cute.crd2idx((thr, k), src) == 16 * (thr % rows) + k, (thr, k)
    for (t, v), (row, byte) in _model(form, atom.manifest["ptx_template"]).items():
        assert cute.crd2idx((t, v), dst) == 16 * row + byte, (form, t, v)


def test_the_forms_come_from_the_generation_that_has_them():
    # Without unpacking, the 8x16 byte load is the b16 instruction of sm_75 on: Ampere's entry serves every target.
    for arch in ("sm_80", "sm_90a", "sm_100a", "sm_120a"):
        assert _atom(arch, PLAIN[2]).manifest["id"] == "ampere.ldmatrix.m8n16.x4.b8"
    for arch in BLACKWELL:
        prefix = "blackwell_geforce" if arch.startswith("sm_12") else "blackwell"
        assert _atom(arch, UNPACKING[2]).manifest["id"] == f"{prefix}.warp.ldmatrix.m8n16.x4.u4"
        assert _atom(arch, M16N16[1]).manifest["id"] == f"{prefix}.warp.ldmatrix.m16n16.x2.trans.b8"
        assert _atom(arch, STORES[2]).manifest["id"] == f"{prefix}.warp.stmatrix.m16n8.x4.trans.b8"
    with pytest.raises(DSLValueError, match=r"for sm_100a, sm_103a.*not for the current target sm_90a"):
        _atom("sm_90a", UNPACKING[0])
    with pytest.raises(DSLValueError, match="not for the current target sm_80"):
        _atom("sm_80", M16N16[0])


def test_bad_parameters_name_the_users_line():
    with pytest.raises(DSLValueError, match=r"test_ldmatrix_bytes\.py:\d+: .*LdMatrix8x16x8bOp.*'transpose': 'True'"):
        _atom("sm_100a", ("LdMatrix8x16x8bOp", True, 4, None))
    with pytest.raises(DSLValueError, match="'unpack_bits': '5'"):
        _atom("sm_100a", ("LdMatrix8x16x8bOp", False, 4, 5))
    with pytest.raises(DSLValueError, match="'num_matrices': '4'"):
        _atom("sm_100a", ("LdMatrix16x16x8bOp", True, 4, None))
    # CuTe DSL's class makes the 16x16 load transposed; given no transpose, it is.
    with trace.tracing(trace.TraceState(target={"name": "sm_100a"})):
        atom = cute.make_copy_atom(cute.nvgpu.warp.LdMatrix16x16x8bOp(num_matrices=2), cutlass.Int8)
    assert atom.manifest["id"] == "blackwell.warp.ldmatrix.m16n16.x2.trans.b8"


def _round_trip_kernel(forms):
    """A kernel that loads a 512-byte tile from gA into shared memory, then, for each form n in turn, through the
    atom into registers and back out to gB[512 n:] through the destination partition of the same tile; a store
    form takes its registers from gA through its source partition, stores them to shared memory and copies that
    out."""
    W = cute.nvgpu.warp

    @cute.kernel
    def k(gA: cute.Tensor, gB: cute.Tensor):
        t, _, _ = cute.arch.thread_idx()
        smem = cutlass.utils.SmemAllocator()
        s = smem.allocate_tensor(cutlass.Int8, cute.make_layout(512), 128)
        for i in cutlass.range_constexpr(16):
            s[t * 16 + i] = gA[t * 16 + i]
        cute.arch.sync_threads()
        for n in cutlass.range_constexpr(len(forms)):
            cls, trans, x, unpack = forms[n]
            atom = cute.make_copy_atom(getattr(W, cls)(trans, x, unpack), cutlass.Int8)
            if cutlass.const_expr(cls == "StMatrix16x8x8bOp"):
                # registers from gA through the source partition, stored into the second half of shared memory
                nbytes = cute.size(atom.layout_src_tv)
                out = cute.make_tensor(gB.iterator + 512 * n, cute.make_layout(nbytes))
                tile = cute.make_tensor(s.iterator + 256, cute.make_layout(nbytes))
                tc = cute.make_tiled_copy(atom, atom.layout_src_tv, (nbytes,))
                thr = tc.get_slice(t)
                r = cute.make_rmem_tensor(thr.partition_S(tile).shape, cutlass.Int8)
                cute.autovec_copy(thr.partition_S(cute.make_tensor(gA.iterator, cute.make_layout(nbytes))), r)
                cute.copy(tc, r, thr.partition_D(tile))
                cute.arch.sync_threads()
                for i in cutlass.range_constexpr(nbytes // 32):
                    out[t * (nbytes // 32) + i] = tile[t * (nbytes // 32) + i]
            else:
                nbytes = cute.size(atom.layout_dst_tv)
                out = cute.make_tensor(gB.iterator + 512 * n, cute.make_layout(nbytes))
                tile = cute.make_tensor(s.iterator, cute.make_layout(nbytes))
                tc = cute.make_tiled_copy(atom, atom.layout_dst_tv, (nbytes,))
                thr = tc.get_slice(t)
                r = cute.make_rmem_tensor(thr.partition_D(tile).shape, cutlass.Int8)
                cute.copy(tc, thr.partition_S(tile), r)
                cute.autovec_copy(r, thr.partition_D(out))

    @cute.jit
    def h(a, b):
        k(a, b).launch(grid=[1, 1, 1], block=[32, 1, 1])

    return h


def _ldmatrix_lines(ptx):
    return [line.strip() for line in ptx.splitlines() if "ldmatrix." in line or "stmatrix." in line]


@pytest.mark.parametrize("arch, forms", [("sm_80", PLAIN), ("sm_100a", PLAIN + UNPACKING + M16N16 + STORES),
                                         ("sm_120a", UNPACKING + M16N16 + STORES)])
def test_every_form_compiles_through_ptxas(fresh_compilations, arch, forms):
    from warpweave.cute.runtime import from_dlpack

    with target(arch):
        c = cute.compile(_round_trip_kernel(forms), from_dlpack(np.zeros(512, np.int8)),
                         from_dlpack(np.zeros(512 * len(forms), np.int8)))
    lines = _ldmatrix_lines(c.info["ptx"])
    for cls, _, x, unpack in forms:
        if cls == "StMatrix16x8x8bOp":
            want = f"stmatrix.sync.aligned.m16n8.x{x}.trans.shared.b8 "
        elif cls == "LdMatrix8x16x8bOp":
            want = (f"m8n8.x{x}.shared.b16" if unpack is None else
                    f"m8n16.x{x}.shared.b8x16.{'b4x16_p64' if unpack == 4 else 'b6x16_p32'}")
        else:
            want = f"m16n16.x{x}.trans.shared." + {None: "b8 ", 4: "b8x16.b4x16_p64", 6: "b8x16.b6x16_p32"}[unpack]
        assert any(want in line for line in lines), (want, lines)
    assert c.cubin, "ptxas made no cubin"
    if _core.sass_tool_available():
        moves = [op for op in sass_opcodes(c.cubin) if op.startswith(("LDSM", "STSM"))]
        assert len(moves) == len(forms), moves


@requires_gpu
@pytest.mark.parametrize("x", [1, 2, 4])
def test_the_plain_form_reproduces_the_tile_on_the_gpu(x):
    import torch

    from warpweave.cute.runtime import from_dlpack

    a = torch.randint(-128, 127, (512,), dtype=torch.int8, device="cuda")
    b = torch.zeros(512, dtype=torch.int8, device="cuda")
    form = ("LdMatrix8x16x8bOp", False, x, None)
    f = cute.compile(_round_trip_kernel([form]), from_dlpack(a), from_dlpack(b))
    f(from_dlpack(a), from_dlpack(b))
    torch.cuda.synchronize()
    n = 128 * x
    assert torch.equal(b[:n].cpu(), a[:n].cpu())
