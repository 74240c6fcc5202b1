"""The native fast path's programs made shorter when it is built (_dsl/call/native_code.py): on random programs
and inputs, the shortened program computes what the program computes natively (_core.fast_call_eval_host), and
where it computes a value the native program leaves to the Python call (an intermediate past 64 bits), that value
is the Python call's (host_program.run_code). The traced forms it is made for lose their redundant operations."""
import math
import random
import struct

import pytest

from warpweave import _core
from warpweave._dsl.call.native_code import cast_range, simplify
from warpweave._dsl.host.host_program import run_code
from warpweave._dsl.base.errors import DSLValueError

CASTS = [0, 8, 8 + 256, 16, 32, 32 + 256, 64, 64 + 256, 512 + 32, 512 + 64]
BINARY = ["add", "sub", "mul", "floordiv", "mod", "xor", "min", "max", "lt", "le", "gt", "ge", "eq", "ne", "and",
          "or", "truediv"]
EDGES = [0, 1, -1, 2, 3, 127, 128, -128, (1 << 31) - 1, -(1 << 31), 1 << 32, (1 << 63) - 1, -(1 << 63)]
NSYMS = 4


def fbits(x: float) -> int:
    return struct.unpack("q", struct.pack("d", x))[0]


def random_program(rng: random.Random, depth: int, floats: bool) -> list:
    """A random native program: the traced patterns (1 * x, x + -1 * y, conversions of converted values) made
    likely."""
    if depth == 0 or rng.random() < 0.2:
        r = rng.random()
        if r < 0.4:
            return [("sym", rng.randrange(NSYMS))]
        if floats and r < 0.55:
            return [("arg", rng.randrange(2))] if rng.random() < 0.6 else [("fconst", fbits(rng.choice([0.5, -2.0,
                                                                                                         1e300])))]
        return [("const", rng.choice(EDGES))]
    r = rng.random()
    sub = lambda: random_program(rng, depth - 1, floats)  # noqa: E731
    if r < 0.15:
        return [("const", rng.choice([1, 1, -1, 0]))] + sub() + [("mul", 0)]
    if r < 0.25:
        return sub() + [("const", rng.choice([-1, 0, -5]))] + sub() + [("mul", 0), ("add", 0)]
    if r < 0.45:
        codes = CASTS if floats else [c for c in CASTS if c < 512]
        c = rng.choice(codes)
        return sub() + [("cast", c)] + ([("cast", c)] if rng.random() < 0.5 else [])
    if r < 0.55:
        return sub() + [(rng.choice(["neg", "abs", "not"]), 0)]
    if r < 0.62:
        return sub() + sub() + sub() + [("select", 0)]
    ops = BINARY if floats else BINARY[:-1]
    return sub() + sub() + [(rng.choice(ops), 0)]


def native(code, syms, args, want_float):
    return _core.fast_call_eval_host(code, syms, args, want_float)


def python_value(code, syms, args):
    """The Python call's value of a native program (host_program.run_code on its host-program form), or None
    where it raises."""
    names = {0: "b", 512 + 32: "f32", 512 + 64: "f64"}
    host = []
    for op, x in code:
        if op == "cast":
            host.append(("cast", names.get(x) or ("i" if x & 256 else "u") + str(x & 255)))
        elif op == "fconst":
            host.append(("const", struct.unpack("d", struct.pack("q", x))[0]))
        else:
            host.append((op, x))
    try:
        return run_code(host, args, dict(enumerate(syms)))
    except (DSLValueError, ZeroDivisionError, OverflowError, ValueError):
        return None


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("d", a) == struct.pack("d", b) or (math.isnan(a) and math.isnan(b))
    return a == b and type(a) is type(b)


@pytest.mark.parametrize("floats", [False, True])
def test_a_shortened_program_computes_what_the_program_computes(floats):
    rng = random.Random(7 + floats)
    ranges = {0: cast_range(256 + 32), 1: cast_range(0)}  # slot 0 an Int32, slot 1 a Boolean
    checked = shorter = rescued = 0
    for _ in range(3000):
        code = random_program(rng, rng.randrange(1, 5), floats)
        short = simplify(code, ranges)
        assert len(short) <= len(code), (code, short)
        shorter += len(short) < len(code)
        for _ in range(4):
            syms = [rng.randrange(-(1 << 31), 1 << 31), rng.randrange(2)] + \
                [rng.choice(EDGES + [rng.randrange(-1000, 1000)]) for _ in range(NSYMS - 2)]
            args = [rng.choice([3, -7, 0, 2.5, -0.0, 1e308]) for _ in range(2)]
            for want_float in (False, True):
                before, after = native(code, syms, args, want_float), native(short, syms, args, want_float)
                if before is not None:
                    assert after is not None and same(before, after), (code, short, syms, args, before, after)
                    checked += 1
                elif after is not None and not floats:
                    # a value the native program leaves to Python (past 64 bits on the way): Python's own
                    expected = python_value(code, syms, args)
                    assert expected is not None and (float if want_float else int)(expected) == after, \
                        (code, short, syms, after, expected)
                    rescued += 1
    assert checked > 4000 and shorter > 1000
    if not floats:
        assert rescued > 0


def test_the_traced_forms_lose_their_redundant_operations():
    i32 = cast_range(256 + 32)
    # ((1 * s0 + 1 * s3) + -1) // (1 * s3), converted to Int32, compared with 128, converted to a Boolean
    per = [("const", 1), ("sym", 0), ("mul", 0), ("const", 1), ("sym", 3), ("mul", 0), ("add", 0), ("const", 1),
           ("neg", 0), ("add", 0), ("const", 1), ("sym", 3), ("mul", 0), ("floordiv", 0), ("cast", 288)]
    assert simplify(per + [("const", 128), ("lt", 0), ("cast", 0)]) == \
        [("sym", 0), ("sym", 3), ("add", 0), ("const", 1), ("sub", 0), ("sym", 3), ("floordiv", 0), ("cast", 288),
         ("const", 128), ("lt", 0)]
    # min(s7, s0 - s8) of Int32 values, converted to Int32 again: the conversions left out
    assert simplify([("const", 1), ("sym", 7), ("mul", 0), ("cast", 288), ("const", 1), ("sym", 0), ("mul", 0),
                     ("const", -1), ("sym", 8), ("mul", 0), ("add", 0), ("cast", 288), ("min", 0), ("cast", 288)],
                    {7: i32}) == [("sym", 7), ("sym", 0), ("sym", 8), ("sub", 0), ("cast", 288), ("min", 0)]
    # a float product keeps its conversions (rounding to single precision) and its operands' order
    f = [("arg", 0), ("cast", 544), ("fconst", fbits(0.5)), ("mul", 0), ("cast", 544)]
    assert simplify(f) == f
    # a division by zero that the Python call raises is kept, also in the branch of a select not taken
    div = [("const", 1), ("const", 2), ("const", 0), ("floordiv", 0), ("const", 3), ("select", 0)]
    assert simplify(div) == div
