"""A bounded fuzz of the layout API from Python (issue 15): random layouts through every operation, each result
checked against the operation's defining property, and hostile arguments (zero, negative and huge extents, wrong
types, deep nesting) that must raise TypeError or ValueError, never crash or return nonsense.

Seeded (WARPWEAVE_TEST_SEED reproduces a run) and bounded twice: a count of cases and a time budget
(WARPWEAVE_FUZZ_SECONDS, default 3 s per test); each test states how many cases it checked.
"""
import os
import random
import time

import pytest

import warpweave.cute as cute

BUDGET = float(os.environ.get("WARPWEAVE_FUZZ_SECONDS", "3"))
MAX_CASES = 20000
MAX_POINTS = 1 << 14  # a property is checked on every point of layouts up to this size


def cases(rng, minimum):
    """Yields case numbers until the count or the time budget is spent; checks that at least `minimum` ran."""
    t0 = time.monotonic()
    n = 0
    while n < MAX_CASES and time.monotonic() - t0 < BUDGET:
        yield n
        n += 1
    print(f"{n} cases in {time.monotonic() - t0:.1f} s")
    assert n >= minimum, f"only {n} cases in the time budget"


# --- generators -------------------------------------------------------------------------------------------------

def shape(rng, depth=2):
    if depth == 0 or rng.random() < 0.35:
        return rng.choice([1, 2, 2, 3, 4, 4, 5, 6, 8])
    return tuple(shape(rng, depth - 1) for _ in range(rng.randint(1, 3)))


def leaves(t):
    return [x for c in t for x in leaves(c)] if isinstance(t, tuple) else [t]


def like(values, profile):
    it = iter(values)

    def go(p):
        return tuple(go(c) for c in p) if isinstance(p, tuple) else next(it)

    return go(profile)


def injective(rng, depth=2):
    s = shape(rng, depth)
    ls = leaves(s)
    order = list(range(len(ls)))
    rng.shuffle(order)
    strides, cur = [0] * len(ls), 1
    for i in order:
        if rng.random() < 0.25:
            cur *= rng.choice([2, 3])
        strides[i] = cur
        cur *= ls[i]
    return cute.make_layout(s, stride=like(strides, s))


def any_layout(rng):
    if rng.random() < 0.5:
        return injective(rng)
    s = shape(rng)
    return cute.make_layout(s, stride=like([rng.choice([0, 1, 2, 3, 4, 8, 16]) for _ in leaves(s)], s))


def points(layout):
    n = cute.size(layout)
    return [layout(i) for i in range(n)] if n <= MAX_POINTS else None


def is_injective(layout):
    """True, False, or None when the layout is too large to check point by point."""
    p = points(layout)
    return None if p is None else len(set(p)) == len(p)


# --- properties -------------------------------------------------------------------------------------------------

def test_composition_is_function_composition(rng):
    checked = 0
    for _ in cases(rng, 200):
        a, b = any_layout(rng), any_layout(rng)
        try:
            r = cute.composition(a, b)
        except ValueError:
            continue
        assert cute.size(r) == cute.size(b), (a, b, r)
        for i in range(min(cute.size(b), MAX_POINTS)):
            assert r(i) == a(b(i)), f"{a} o {b} = {r} at {i}"
        checked += 1
    assert checked > 50


def test_inverses(rng):
    lefts = 0
    for _ in cases(rng, 200):
        a = any_layout(rng)
        r = cute.right_inverse(a)
        for i in range(cute.size(r)):
            assert a(r(i)) == i, f"right_inverse({a}) = {r} at {i}"
        try:
            left = cute.left_inverse(a)
        except ValueError:
            continue  # refused with a ValueError (not injective, or no layout inverts it)
        if is_injective(a):
            lefts += 1
            for i in range(cute.size(a)):
                assert left(a(i)) == i, f"left_inverse({a}) = {left} at {i}"
    assert lefts > 20


def test_coalesce_keeps_size_and_function(rng):
    for _ in cases(rng, 200):
        a = any_layout(rng)
        c = cute.coalesce(a)
        assert cute.size(c) == cute.size(a) and cute.depth(c) <= 1
        assert points(c) == points(a), (a, c)
        assert cute.coalesce(c) == c  # idempotent


def test_complement(rng):
    checked = 0
    for _ in cases(rng, 200):
        a = injective(rng)
        cotarget = cute.cosize(a) * rng.choice([1, 2, 3, 4])
        try:
            c = cute.complement(a, cotarget)
        except ValueError:
            continue
        values = points(c)
        if values is None or points(a) is None:
            continue  # too large to check point by point
        assert values == sorted(values), (a, cotarget, c)  # ordered
        image = set(points(a))
        assert not image.intersection(values[1:]), (a, c)  # disjoint from a (but at 0)
        both = cute.make_layout(a, c)
        assert is_injective(both) is not False, (a, c)  # (a, complement) is injective ...
        # ... and fills the cotarget as far as CuTe promises: gaps between a's modes that are no whole number of
        # copies round down, size(complement) >= size(cotarget) / size(filter(a)).
        assert cute.size(c) >= cotarget // cute.size(cute.filter(a)), (a, cotarget, c)
        checked += 1
    assert checked > 50


@pytest.mark.parametrize("op", ["logical_divide", "zipped_divide", "tiled_divide", "flat_divide"])
def test_divides_are_compositions_with_the_tiler_and_its_complement(rng, op):
    checked = 0
    for _ in cases(rng, 100):
        a = injective(rng, depth=1)
        b = injective(rng, depth=0)
        try:
            d = getattr(cute, op)(a, b)
            # CuTe's definition: the tiler and its complement in the shape of the coalesced layout.
            ref = cute.composition(a, cute.make_layout(b, cute.complement(b, cute.shape(cute.coalesce(a)))))
        except ValueError:
            continue
        # The tiles cover a up to less than one tile (the complement's bound size(a) / size(b), rounded down).
        assert cute.size(d) > cute.size(a) - cute.size(b), (op, a, b, d)
        # same offsets, in the same order for a rank-1 tiler; the first mode is the tile
        assert points(d) == points(ref), (op, a, b, d, ref)
        tile = cute.get(d, mode=[0]) if op != "flat_divide" else None
        if tile is not None:
            assert points(tile) == points(cute.composition(a, b)), (op, a, b, d)
        checked += 1
    assert checked > 20


@pytest.mark.parametrize("op", ["logical_product", "zipped_product", "tiled_product", "blocked_product",
                                "raked_product"])
def test_products_repeat_the_block_over_the_complement(rng, op):
    checked = 0
    for _ in cases(rng, 100):
        a = injective(rng, depth=1)
        b = injective(rng, depth=0)
        try:
            p = getattr(cute, op)(a, b)
        except ValueError:
            continue
        assert cute.size(p) == cute.size(a) * cute.size(b), (op, a, b, p)
        try:
            ref = cute.make_layout(a, cute.composition(cute.complement(a, cute.size(a) * cute.cosize(b)), b))
        except ValueError:  # the complement's rest falls short; the product runs past it: still each offset once
            assert len(set(points(p))) == len(points(p)), (op, a, b, p)
            checked += 1
            continue
        if op in ("logical_product", "zipped_product", "tiled_product"):
            assert points(p) == points(ref), (op, a, b, p, ref)
        else:  # blocked and raked interleave the modes: the same offsets, each once
            assert sorted(points(p)) == sorted(points(ref)), (op, a, b, p, ref)
        checked += 1
    assert checked > 20


# --- hostile arguments ------------------------------------------------------------------------------------------

HOSTILE_INTS = [0, -1, -7, 2**31, 2**40, 2**62, 2**63 - 1, -2**63]
HOSTILE_OTHER = [None, "4", 1.5, [], (), ((),), object(), True]


def hostile_shape(rng):
    r = rng.random()
    if r < 0.4:
        return rng.choice(HOSTILE_INTS)
    if r < 0.6:
        return rng.choice(HOSTILE_OTHER)
    if r < 0.7:
        deep = 1
        for _ in range(rng.choice([50, 200, 1000])):
            deep = (deep,)
        return deep
    return tuple(rng.choice(HOSTILE_INTS + [1, 2, 4]) for _ in range(rng.randint(1, 4)))


OPS = [
    ("make_layout", lambda rng, a, x: cute.make_layout(x)),
    ("make_layout stride", lambda rng, a, x: cute.make_layout(cute.size(a), stride=x)),
    ("composition", lambda rng, a, x: cute.composition(a, x)),
    ("complement", lambda rng, a, x: cute.complement(a, x)),
    ("logical_divide", lambda rng, a, x: cute.logical_divide(a, x)),
    ("zipped_divide", lambda rng, a, x: cute.zipped_divide(a, x)),
    ("logical_product", lambda rng, a, x: cute.logical_product(a, x)),
    ("blocked_product", lambda rng, a, x: cute.blocked_product(a, x)),
    ("call", lambda rng, a, x: a(x)),
    ("crd2idx", lambda rng, a, x: cute.crd2idx(x, a.shape, a.stride)),
    ("idx2crd", lambda rng, a, x: cute.idx2crd(x, a.shape)),
    ("size", lambda rng, a, x: cute.size(x)),
    ("coalesce", lambda rng, a, x: cute.coalesce(cute.make_layout(x))),
    ("right_inverse", lambda rng, a, x: cute.right_inverse(cute.make_layout(x, stride=x))),
    ("recast", lambda rng, a, x: cute.recast_layout(x, 16, a)),
]


def hostile_run(seed: int, budget: float, log_path: str) -> dict:
    """The hostile cases of one seed (run in a child process: a crash must not take the test session down).
    Each case is written to log_path before it runs, so that a crash names it."""
    rng = random.Random(seed)
    tried = clear = accepted = 0
    t0 = time.monotonic()
    with open(log_path, "w") as log:
        while tried < MAX_CASES and time.monotonic() - t0 < budget:
            name, op = rng.choice(OPS)
            a, x = any_layout(rng), hostile_shape(rng)
            log.write(f"{name}({a}, {repr(x)[:300]})\n")
            log.flush()
            tried += 1
            try:
                op(rng, a, x)
                accepted += 1
            except (TypeError, ValueError, OverflowError, RecursionError) as e:
                if not str(e) or "bad_cast" in str(e) or "std::" in str(e):
                    return {"tried": tried, "bad_message": f"{name}({a}, {x!r}): {type(e).__name__}: {e}"}
                clear += 1
            # any other exception (SystemError, RuntimeError from a C++ exception nanobind could not map)
            # propagates: the child fails with its traceback
    return {"tried": tried, "clear": clear, "accepted": accepted}


def test_hostile_arguments_raise_type_or_value_errors(rng, tmp_path):
    import json
    import subprocess
    import sys

    seed = rng.randrange(1 << 30)
    log = tmp_path / "cases.log"
    code = (f"import json, sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); "
            f"import test_layout_fuzz as t; print(json.dumps(t.hostile_run({seed}, {BUDGET}, {str(log)!r})))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=BUDGET + 120)
    last = log.read_text().splitlines()[-1:] if log.exists() else []
    assert r.returncode == 0, f"the layout API died (exit {r.returncode}) on {last}:\n{r.stderr[-2000:]}"
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert "bad_message" not in out, out
    print(f"hostile (seed {seed}): {out['tried']} tried, {out['clear']} clear errors, {out['accepted']} accepted")
    assert out["tried"] >= 500
