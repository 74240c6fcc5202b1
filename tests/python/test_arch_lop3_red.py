"""cute.arch.lop3 (a bitwise function of three words by its truth table) and cute.arch.red (a reduction into memory
without a result, including the vector f32 add): the instruction in the PTX, lop3's values where they are known
while tracing, and bad arguments refused at the user's line."""
import os
import random
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target

THIS = os.path.abspath(__file__)
M32 = 0xFFFFFFFF

# Bitwise functions and their truth tables, each the function applied to lop3's three selector words.
FUNCTIONS = [lambda a, b, c: a & b | c, lambda a, b, c: a ^ b ^ c, lambda a, b, c: ~a & b,
             lambda a, b, c: (a & c) | (b & ~c), lambda a, b, c: ~(a | b | c), lambda a, b, c: a,
             lambda a, b, c: 0, lambda a, b, c: (a | b) & ~c]


def _lut(f):
    return f(0xF0, 0xCC, 0xAA) & 0xFF


def _compile(kernel_body, *arrays, arch="sm_90a"):
    @cute.kernel
    def k(gA: cute.Tensor, gB: cute.Tensor):
        kernel_body(gA, gB)

    @cute.jit
    def h(a, b):
        k(a, b).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target(arch):
        return cute.compile(h, *[from_dlpack(x) for x in arrays]).info["ptx"]


def _line_of(exc):
    msg = str(exc)
    line = int(msg.split(f"{THIS}:")[1].split(":")[0])
    return open(THIS).read().splitlines()[line - 1]


@pytest.mark.parametrize("f", FUNCTIONS)
def test_lop3_of_known_words_is_the_function_its_table_names(f):
    rng = random.Random(7)
    lut = _lut(f)
    for _ in range(20):
        a, b, c = (rng.getrandbits(32) for _ in range(3))
        got = cute.arch.lop3(cutlass.Uint32(a), cutlass.Uint32(b), cutlass.Uint32(c), lut)
        assert type(got) is cutlass.Uint32 and got.value == f(a, b, c) & M32
        signed = cute.arch.lop3(cutlass.Int32(a - (1 << 32) if a >> 31 else a), cutlass.Int32(b), cutlass.Int32(c),
                                lut) if b < 1 << 31 and c < 1 << 31 else None
        if signed is not None:
            assert type(signed) is cutlass.Int32 and signed.value & M32 == f(a, b, c) & M32


@pytest.mark.parametrize("lut", [0xEA, 0x96, 0x6A, 0x00, 0xFF])
def test_lop3_compiles_to_the_instruction_with_its_table(lut):
    def body(gA, gB):
        t, _, _ = cute.arch.thread_idx()
        gB[t] = cute.arch.lop3(gA[t], cutlass.Int32(t), gA[t + 1], lut)

    ptx = _compile(body, np.zeros(64, np.int32), np.zeros(64, np.int32))
    assert re.search(rf"\blop3\.b32\s+%r\d+, %r\d+, %r\d+, %r\d+, {lut};", ptx)


def test_lop3_bad_arguments_are_refused_at_the_users_line():
    with pytest.raises(ValueError) as e:
        cute.arch.lop3(cutlass.Int32(1), cutlass.Int32(2), cutlass.Int32(3), 0x100)  # the bad call
    assert "8-bit truth table" in str(e.value) and "the bad call" in _line_of(e.value)
    with pytest.raises(TypeError) as e:
        cute.arch.lop3(cutlass.Float32(1.0), cutlass.Int32(2), cutlass.Int32(3), 0xEA)  # the bad call
    assert "Int32 or Uint32" in str(e.value) and "the bad call" in _line_of(e.value)

    def body(gA, gB):
        t, _, _ = cute.arch.thread_idx()
        gB[t] = cute.arch.lop3(gA[t], gA[t], gA[t], gA[0])  # the bad call

    with pytest.raises(ValueError) as e:
        _compile(body, np.zeros(64, np.int32), np.zeros(64, np.int32))
    assert "known while tracing" in str(e.value) and "the bad call" in _line_of(e.value)


def test_red_vector_f32_add_is_one_instruction():
    def body(gA, gB):
        t, _, _ = cute.arch.thread_idx()
        frag = cute.make_rmem_tensor(cute.make_layout(4), cutlass.Float32)
        for i in cutlass.range_constexpr(4):
            frag[i] = gB[t * 4 + i]
        chunk = cute.make_tensor(gA.iterator + 4 * t, cute.make_layout(4))
        # as split-K's partial sums are added: the fragment as one IR vector
        cute.arch.red(chunk.iterator, frag.load().ir_value(), op="add", dtype="f32", sem="relaxed", scope="gpu")
        cute.arch.red(chunk.iterator, frag.load(), op="add", dtype=cutlass.Float32, sem="release", scope="cta")

    ptx = _compile(body, np.zeros(128, np.float32), np.zeros(128, np.float32))
    assert len(re.findall(r"\bred\.relaxed\.gpu\.global\.add\.v4\.f32 \[%rd\d+\], \{(?:%[rf]\d+, ){3}%[rf]\d+\};",
                          ptx)) == 1
    assert len(re.findall(r"\bred\.release\.cta\.global\.add\.v4\.f32\b", ptx)) == 1
    assert not re.search(r"\bred\.[a-z.]*\.add\.f32\b", ptx)   # not split into scalar reductions


@pytest.mark.parametrize("op,dtype,value,want", [
    ("add", cutlass.Float32, lambda t: cutlass.Float32(1.5), "add.f32"),
    ("umax", "u32", lambda t: cutlass.Uint32(t), "max.u32"),
    ("umin", cutlass.Uint32, lambda t: cutlass.Uint32(t), "min.u32"),
    ("min", "s32", lambda t: cutlass.Int32(t), "min.s32"),
    ("xor", "b32", lambda t: cutlass.Int32(t), "xor.b32"),
])
def test_red_scalar_forms(op, dtype, value, want):
    def body(gA, gB):
        t, _, _ = cute.arch.thread_idx()
        cute.arch.red(gA.iterator + t, value(t), op=op, dtype=dtype, sem="relaxed", scope="gpu")

    arr = np.zeros(64, np.float32 if want.endswith("f32") else np.int32)
    ptx = _compile(body, arr, arr.copy(), arch="sm_80")
    assert re.search(rf"\bred\.relaxed\.gpu\.global\.{re.escape(want)} \[%rd\d+\], %[rf]\d+;", ptx), ptx


@pytest.mark.parametrize("call,exc,words", [
    (lambda g, v: cute.arch.red(g.iterator, v, op="umin", dtype="s32"), ValueError, "unsigned"),  # the bad call
    (lambda g, v: cute.arch.red(g.iterator, v, op="mul", dtype="f32"), ValueError, "op"),  # the bad call
    (lambda g, v: cute.arch.red(g.iterator, v, op="add", dtype=float), TypeError, "dtype"),  # the bad call
])
def test_red_bad_arguments_are_refused_at_the_users_line(call, exc, words):
    def body(gA, gB):
        call(gA, cutlass.Int32(1))

    with pytest.raises(exc) as e:
        _compile(body, np.zeros(64, np.int32), np.zeros(64, np.int32))
    assert words in str(e.value) and "the bad call" in _line_of(e.value)


def test_red_vector_needs_a_target_with_it_and_two_or_four_f32():
    def body(gA, gB):
        frag = cute.make_rmem_tensor(cute.make_layout(4), cutlass.Float32)
        frag.fill(1.0)
        cute.arch.red(gA.iterator, frag.load(), op="add", dtype="f32")  # the bad call

    with pytest.raises(Exception) as e:
        _compile(body, np.zeros(64, np.float32), np.zeros(64, np.float32), arch="sm_80")
    assert "sm_90" in str(e.value) and "the bad call" in _line_of(e.value)

    def body3(gA, gB):
        frag = cute.make_rmem_tensor(cute.make_layout(3), cutlass.Float32)
        frag.fill(1.0)
        cute.arch.red(gA.iterator, frag.load(), op="add", dtype="f32")  # the bad call

    with pytest.raises(ValueError) as e:
        _compile(body3, np.zeros(64, np.float32), np.zeros(64, np.float32))
    assert "2 or 4 f32" in str(e.value) and "the bad call" in _line_of(e.value)
