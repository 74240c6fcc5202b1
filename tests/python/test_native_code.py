"""The native fast path's programs made shorter when it is built (_dsl/call/native_code.py): on random programs
and inputs, the shortened program computes what the program computes natively (_core.fast_call_eval_host), and
where it computes a value the native program leaves to the Python call (an intermediate past 64 bits), that value
is the Python call's (host_program.run_code). The traced forms it is made for lose their redundant operations."""
import math
import random
import struct

import pytest

from warpweave import _core
from warpweave._dsl.call.native_code import cast_range, share_common, simplify
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


# --- values computed once (native_code.share_common) ------------------------------------------------------------

NSLOTS = 12


def run_steps(steps, inputs, args):
    """The slots after the native path's steps (a guarded value not taken is 0; a float's value is kept apart,
    its integer slot 0, as FastCall keeps them), or None where one fails."""
    syms, floats = list(inputs) + [0] * (64 - len(inputs)), {}
    for s in steps:
        if isinstance(s[0], str):
            continue  # a loop (none in these programs writes anything)
        slot, code, guards, is_float = s[:4]
        syms[slot] = 0
        if all(syms[g] for g in guards):
            v = native(code, syms, args, is_float)
            if v is None or (len(s) > 4 and v != s[4]):
                return None
            if is_float:
                floats[slot] = v
            else:
                syms[slot] = v
    return [floats.get(k, syms[k]) for k in range(len(syms))]


def random_steps(rng):
    """Values over slots 0-3 (the arguments) into slots 4.., built from a few shared parts so that parts
    repeat, some guarded, some floats, with loops between."""
    parts = [random_program(rng, rng.randrange(1, 4), False) for _ in range(3)]
    steps = []
    for slot in range(NSYMS, NSLOTS):
        r = rng.random()
        if r < 0.1:
            steps.append(("loop", 0))
        if r < 0.35:
            code = rng.choice(parts)
        elif r < 0.75:
            code = rng.choice(parts) + rng.choice(parts) + [(rng.choice(BINARY[:-1]), 0)]
        else:
            code = rng.choice(parts) + [("sym", rng.randrange(slot))] + [(rng.choice(BINARY[:-1]), 0)]
        code = simplify(code)
        guards = [rng.randrange(slot)] if rng.random() < 0.3 else []
        is_float = rng.random() < 0.1
        steps.append((slot, code + ([("cast", 512 + 64)] if is_float else []), guards, is_float))
    return steps


def test_values_computed_once_give_what_the_program_gives():
    rng = random.Random(11)
    checked = shared = hoisted = 0
    for _ in range(1500):
        steps = random_steps(rng)
        fresh = iter(range(NSLOTS, 64))
        out = share_common(steps, lambda: next(fresh))
        ops = lambda ss: sum(len(s[1]) for s in ss if not isinstance(s[0], str))  # noqa: E731
        assert ops(out) <= ops(steps) + len(out) - len(steps), (steps, out)  # each new value reads a slot once
        shared += ops(out) < ops(steps)
        hoisted += len(out) > len(steps)
        assert [s for s in out if isinstance(s[0], str)] == [s for s in steps if isinstance(s[0], str)]
        for _ in range(4):
            inputs = [rng.choice(EDGES + [rng.randrange(-50, 50)]) for _ in range(NSYMS)]
            before, after = run_steps(steps, inputs, [2.5, 3]), run_steps(out, inputs, [2.5, 3])
            assert (before is None) == (after is None), (steps, out, inputs)
            if before is not None:
                assert all(same(before[k], after[k]) for k in range(NSLOTS)), (steps, out, inputs, before, after)
                checked += 1
    assert checked > 1500 and shared > 300 and hoisted > 50, (checked, shared, hoisted)


def test_a_value_a_later_one_computes_again_is_computed_once():
    per = [("sym", 0), ("sym", 3), ("add", 0), ("const", 1), ("sub", 0), ("sym", 3), ("floordiv", 0),
           ("cast", 288)]
    # `per < 128`, then under `not` of it `per` itself: per computed once, before the comparison
    steps = [(4, per + [("const", 128), ("lt", 0)], [], False), (5, [("sym", 4), ("not", 0)], [], False),
             (6, per, [5], False)]
    assert share_common(steps, lambda: 9) == [(9, per, [], False), (4, [("sym", 9), ("const", 128), ("lt", 0)], [],
                                                                      False),
                                              (5, [("sym", 4), ("not", 0)], [], False), (6, [("sym", 9)], [5], False)]
    # a guarded value gives nothing to later ones (it is 0 where its guard does not hold), nor does a value
    # before a loop (which may write what it reads)
    guarded = [(4, per, [1], False), (5, per + [("const", 2), ("mul", 0)], [], False)]
    assert share_common(guarded, lambda: 9) == guarded
    looped = [(4, per, [], False), ("loop", 0), (5, per + [("const", 2), ("mul", 0)], [], False)]
    assert share_common(looped, lambda: 9) == looped
    # the whole of an earlier value: read from its slot
    assert share_common([(4, per, [], False), (5, per + [("const", 2), ("mul", 0)], [], False)], lambda: 9) == \
        [(4, per, [], False), (5, [("sym", 4), ("const", 2), ("mul", 0)], [], False)]
