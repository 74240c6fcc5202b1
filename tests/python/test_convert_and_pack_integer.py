"""cutlass.experimental.primitives.convert_and_pack_integer: a and b saturated to a 16-, 8-, 4- or 2-bit integer
type and packed a above b (the narrow forms with src_c's bits above), against a model of the semantics written
here: on known values while tracing, as the instruction in the PTX, and computed on the GPU."""
import os
import random
import re

import numpy as np
import pytest

import warpweave as cutlass
from warpweave import _core
import warpweave.cute as cute
from warpweave._mlir.extras import types as T
from warpweave.cute.runtime import from_dlpack
from warpweave.experimental import primitives as prims

from dsl_helpers import requires_gpu, sass_opcodes, target

THIS = os.path.abspath(__file__)
FORMS = [(w, s) for w in (16, 8, 4, 2) for s in (True, False)]


def model(a: int, b: int, width: int, signed: bool, c: int = 0) -> int:
    """The packed word, as an unsigned 32-bit number: a, b read as signed 32-bit integers and clamped to the type's
    range, written as width-bit fields (a above b); below 16 bits, c from bit 2 * width up."""
    a, b = (int(np.int32(np.uint32(x & 0xFFFFFFFF))) for x in (a, b))
    lo, hi = (-2 ** (width - 1), 2 ** (width - 1) - 1) if signed else (0, 2 ** width - 1)
    fields = [int(np.clip(x, lo, hi)) % 2 ** width for x in (a, b)]
    word = fields[0] * 2 ** width + fields[1]
    if width < 16:
        word += (c * 2 ** (2 * width)) % 2 ** 32
    return word % 2 ** 32


def _samples(seed: int, n: int) -> list:
    rng = random.Random(seed)
    edges = [0, 1, -1, 2 ** 31 - 1, -2 ** 31, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768, -32769, 65535,
             65536, 7, 8, -8, -9, 15, 16, 1, 2, -2, -3, 3, 4]
    pool = edges + [rng.getrandbits(32) - 2 ** 31 for _ in range(n)] + [rng.randint(-70000, 70000) for _ in range(n)]
    return [(rng.choice(pool), rng.choice(pool), rng.getrandbits(32)) for _ in range(n)]


@pytest.mark.parametrize("width, signed", FORMS)
def test_known_values_pack_as_the_model(width, signed):
    for a, b, c in _samples(width * 2 + signed, 400):
        src_c = cutlass.Uint32(c) if width < 16 else None
        got = prims.convert_and_pack_integer(cutlass.Int32(a), cutlass.Int32(b), T.i(width), src_c=src_c,
                                             is_signed=signed)
        assert type(got) is cutlass.Int32
        assert got.value & 0xFFFFFFFF == model(a, b, width, signed, c if width < 16 else 0), (a, b, c)


def test_unsigned_sources_are_read_as_signed_and_unsigned_is_the_default():
    # 0xFFFFFFFF as Uint32 is -1 to the instruction: 0 in an unsigned field, -1 in a signed one
    ones = cutlass.Uint32(0xFFFFFFFF)
    assert prims.convert_and_pack_integer(ones, cutlass.Uint32(5), T.i16()).value == 5
    assert prims.convert_and_pack_integer(ones, cutlass.Uint32(5), T.i16(), is_signed=True).value & 0xFFFFFFFF == \
        0xFFFF0005
    assert prims.convert_and_pack_integer(70000, -3, T.i16(), is_signed=False).value & 0xFFFFFFFF == 0xFFFF0000


@cute.kernel
def pack_kernel(gS: cute.Tensor, gD: cute.Tensor):
    """Row t of gS is (a, b, c); row t of gD gets each form's word, in FORMS' order."""
    t, _, _ = cute.arch.thread_idx()
    for i, (width, signed) in enumerate(FORMS):
        c = gS[t, 2] if width < 16 else None
        gD[t, i] = prims.convert_and_pack_integer(gS[t, 0], gS[t, 1], T.i(width), src_c=c, is_signed=signed)


@cute.jit
def pack_host(s, d):
    pack_kernel(s, d).launch(grid=[1, 1, 1], block=[s.shape[0], 1, 1])


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a", "sm_100a"])
def test_each_form_is_one_instruction_in_the_ptx(arch):
    with target(arch):
        c = cute.compile(pack_host, from_dlpack(np.zeros((32, 3), np.int32)),
                         from_dlpack(np.zeros((32, len(FORMS)), np.int32)))
    assert c.cubin
    reg = r"%r\d+"
    for width, signed in FORMS:
        kind = f"{'s' if signed else 'u'}{width}"
        if width == 16:
            pattern = rf"\bcvt\.pack\.sat\.{kind}\.s32\s+{reg}, {reg}, {reg};"
        else:
            pattern = rf"\bcvt\.pack\.sat\.{kind}\.s32\.b32\s+{reg}, {reg}, {reg}, {reg};"
        assert len(re.findall(pattern, c.ptx)) == 1, (kind, c.ptx)
    if _core.sass_tool_available():  # each form is one integer pack with saturation in the SASS too
        packs = [op for op in sass_opcodes(c.cubin) if op.startswith("I2IP")]
        assert sorted(packs) == sorted(f"I2IP.{w[0].upper()}{w[1:]}.S32.SAT" for w in (
            f"{'s' if s else 'u'}{n}" for n, s in FORMS)), packs


def _line(exc) -> str:
    line = int(str(exc).split(f"{THIS}:")[1].split(":")[0])
    return open(THIS).read().splitlines()[line - 1]


@pytest.mark.parametrize("call, exc, words", [
    (lambda: prims.convert_and_pack_integer(1, 2, T.i32()), ValueError, "16, 8, 4 or 2 bits"),  # the bad call
    (lambda: prims.convert_and_pack_integer(1, 2, T.f16()), TypeError, "integer IR type"),  # the bad call
    (lambda: prims.convert_and_pack_integer(1, 2, T.i16(), src_c=0), ValueError, "narrower than 16"),  # the bad call
    (lambda: prims.convert_and_pack_integer(1, 2, T.i8()), ValueError, "src_c gives the rest"),  # the bad call
    (lambda: prims.convert_and_pack_integer(cutlass.Float32(1), 2, T.i16()), TypeError, "32-bit"),  # the bad call
    (lambda: prims.convert_and_pack_integer(2 ** 33, 2, T.i16()), ValueError, "not a 32-bit integer"),  # the bad call
])
def test_bad_arguments_are_refused_at_the_users_line(call, exc, words):
    with pytest.raises(exc) as e:
        call()
    assert words in str(e.value) and "the bad call" in _line(e.value)


@requires_gpu
def test_the_gpu_packs_as_the_model():
    import torch

    samples = _samples(99, 32 * 4)
    src = (np.array(samples, dtype=np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)  # each word's bits
    s = torch.from_numpy(src).cuda()
    d = torch.zeros((len(samples), len(FORMS)), dtype=torch.int32, device="cuda")
    pack_host(from_dlpack(s), from_dlpack(d))
    torch.cuda.synchronize()
    got = d.cpu().numpy().view(np.uint32)
    want = np.array([[model(a, b, w, sg, c if w < 16 else 0) for w, sg in FORMS] for a, b, c in samples], np.uint32)
    np.testing.assert_array_equal(got, want)
