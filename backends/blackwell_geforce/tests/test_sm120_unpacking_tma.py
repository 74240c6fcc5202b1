"""TMA loads of 4- and 6-bit tensors unpack into byte containers of shared memory on the targets whose manifest
entry lists the unpacking tensor maps (Target.tma_unpacking): Blackwell's (tcgen05 reads such operands so) and
consumer Blackwell's (ldmatrix's .b4x16_p64 / .b6x16_p32 forms read them so for mma.sync kind::mxf8f6f4, as CuTe
DSL's sm_120a GEMMs load a mixed FP4 x FP8 operand with a U4_UNPACK_U8 tensor map); elsewhere the bytes move as
internal_type's."""
from __future__ import annotations

import pytest
from dsl_helpers import target

import warpweave as cutlass
import warpweave.cute as cute

# the driver's tensor-map data types: 16U4_ALIGN16B and 16U6_ALIGN16B
U4_UNPACKED, U6_UNPACKED = 14, 15


def _tensor_map_type(arch, dtype, internal):
    from warpweave.cute.nvgpu import cpasync
    from warpweave.cute.runtime import make_ptr

    made = {}

    @cute.jit
    def host(a_ptr: cute.Pointer):
        a = cute.make_tensor(a_ptr, cute.make_layout((128, 1024), stride=(1024, 1)))
        smem = cute.make_composed_layout(cute.make_swizzle(3, 4, 3), 0, cute.make_layout((128, 128), stride=(128, 1)))
        atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, smem, (128, 128),
                                              internal_type=internal)
        made.update(atom.tma_desc.attrs, element_type=atom.element_type)

    with target(arch):
        cute.compile(host, make_ptr(dtype, 0x10000, cute.AddressSpace.gmem, assumed_align=32))
    return made


@pytest.mark.parametrize("arch", ["sm_120a", "sm_121a", "sm_100a"])
@pytest.mark.parametrize("dtype, internal, code, bits", [
    (cutlass.Float4E2M1FN, cutlass.Int8, U4_UNPACKED, 4),
    (cutlass.Float4E2M1FN, cutlass.Uint8, U4_UNPACKED, 4),
    (cutlass.Float6E2M3FN, None, U6_UNPACKED, 6),
    (cutlass.Float6E3M2FN, cutlass.Uint8, U6_UNPACKED, 6),
])
def test_subbyte_loads_unpack_where_the_manifest_lists_it(arch, dtype, internal, code, bits):
    got = _tensor_map_type(arch, dtype, internal)
    assert (got["data_type"], got["gbits"]) == (code, bits)
    assert got["element_type"] is (internal or cutlass.Uint8)


def test_a_target_whose_manifest_lists_no_unpacking_moves_bytes():
    from warpweave.backends.hopper import tma

    got = _tensor_map_type("sm_90a", cutlass.Float4E2M1FN, cutlass.Uint8)
    assert got["data_type"] == "u8" and "gbits" not in got
    with target("sm_90a"):
        assert tma.unpacked_codes() == {}
    with target("sm_120a"):
        assert tma.unpacked_codes() == {4: U4_UNPACKED, 6: U6_UNPACKED}


def test_the_unpacking_comes_from_the_loaded_manifest(monkeypatch):
    # the Python reads the target's entry of its backend's manifest: without 16U6_ALIGN16B there, a 6-bit load has
    # no tensor map (TMA moves no 6-bit values packed), and a 4-bit one asked for as Uint8 moves its bytes as they are
    import copy

    from warpweave import ext

    backend = ext.backend("blackwell_geforce")
    manifest = copy.deepcopy(backend.manifest)
    for t in manifest["targets"]:
        assert set(t["tma_unpacking"]) == {"16U4_ALIGN8B", "16U4_ALIGN16B", "16U6_ALIGN16B"}
        t["tma_unpacking"] = ["16U4_ALIGN8B"]
    monkeypatch.setattr(backend, "manifest", manifest)
    got = _tensor_map_type("sm_120a", cutlass.Float4E2M1FN, cutlass.Uint8)
    assert got["data_type"] == "u8" and "gbits" not in got
    with pytest.raises(Exception, match="TMA does not move Float6E2M3FN values"):
        _tensor_map_type("sm_120a", cutlass.Float6E2M3FN, None)
