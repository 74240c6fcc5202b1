"""blackwell_helpers.check_gemm_tma_alignment (a host check before a GEMM is built): it refuses a problem exactly when
an operand's contiguous extent (by its major) is not a whole number of 16-byte units, D's only when D is given, and
names the operand, the mode and the extent; a major mode an operand cannot have is refused by name."""
from __future__ import annotations

import pytest

import warpweave as cutlass
import warpweave.utils.blackwell_helpers as h
from warpweave.cute.testing import CantImplementError

TYPES = [cutlass.Float16, cutlass.BFloat16, cutlass.Float32, cutlass.Float8E4M3FN, cutlass.Int8, cutlass.Float4E2M1FN]


def test_refuses_exactly_the_extents_tma_cannot_move(rng):
    for _ in range(400):
        m, n, k = (rng.choice([1, 2, 8, 16, 24, 32, 100, 128, 250, 256, 4096]) for _ in range(3))
        a, b, d = (rng.choice(TYPES) for _ in range(3))
        am, bm, dm = rng.choice("mk"), rng.choice("nk"), rng.choice("mn")
        with_d = rng.random() < 0.7
        extent = {"m": m, "n": n, "k": k}
        bad = [name for name, major, t in (("A", am, a), ("B", bm, b)) + ((("D", dm, d),) if with_d else ())
               if extent[major] * t.width % 128]
        args = (m, n, k, a, b, d if with_d else None, am, bm, dm if with_d else None)
        if not bad:
            assert h.check_gemm_tma_alignment(*args) is None
            continue
        with pytest.raises(CantImplementError) as e:
            h.check_gemm_tma_alignment(*args, output_tensor_name="D")
        # the first operand that fails is named, with its mode and extent
        name = bad[0]
        major = {"A": am, "B": bm, "D": dm}[name]
        assert f"{name} TMA" in str(e.value) and f"{major.upper()}={extent[major]}" in str(e.value), str(e.value)


@pytest.mark.parametrize("majors,which", [(("n", "k", "n"), "A"), (("k", "m", "n"), "B"), (("k", "k", "k"), "C")])
def test_a_major_the_operand_cannot_have_is_refused(majors, which):
    with pytest.raises(CantImplementError, match=f"{which} TMA .*major mode is one of"):
        h.check_gemm_tma_alignment(128, 128, 128, cutlass.Float16, cutlass.Float16, cutlass.Float16, *majors,
                                   output_tensor_name="C")
