"""benchmarks/python/bench_quack.py without a GPU: its arguments, the GEMM rows' arithmetic (TFLOP/s, the ratio,
each implementation against the cuBLAS of its own run), the check that decides whether a GEMM row is timed, and the
outer run's plumbing (what it hands each implementation's --inner process, and the tables it prints from their
rows)."""
import json
import math
import os
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "python"))
import bench_quack  # noqa: E402


def test_the_default_run_times_the_norms_and_the_gemm_cubes(tmp_path):
    ns = bench_quack.parse_args(["--quack-src", str(tmp_path)])
    assert ns.kernels.split(",")[-1] == "gemm" and set(bench_quack.NORM_KERNELS) < set(ns.kernels.split(","))
    assert ns.gemm_shapes == "4096x4096x4096,8192x8192x8192"
    assert ns.shapes == "32768x8192,8192x32768"


def test_gemm_shapes_are_mxnxk_and_one_extent_is_a_cube():
    assert bench_quack.parse_gemm_shapes("4096, 8192x4096x2048") == [(4096, 4096, 4096), (8192, 4096, 2048)]
    for bad in ("4096x4096", "1x2x3x4", "0", "4096x-1x8"):
        with pytest.raises(ValueError):
            bench_quack.parse_gemm_shapes(bad)


def test_arguments_are_refused_before_anything_runs(tmp_path, capsys):
    with pytest.raises(SystemExit):
        bench_quack.parse_args(["--quack-src", str(tmp_path), "--kernels", "gemm,matmul"])
    assert "matmul" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench_quack.parse_args(["--quack-src", str(tmp_path), "--gemm-shapes", "4096x4096"])
    # the cube shorthand reaches the inner runs (and the table) spelled out
    assert bench_quack.parse_args(["--quack-src", str(tmp_path), "--gemm-shapes", "2048"]).gemm_shapes == \
        "2048x2048x2048"


def test_tflops_counts_a_multiply_and_an_add_per_product():
    # 8192^3 in 1.6 ms: 2 * 8192^3 = 1.0995e12 operations
    assert bench_quack.tflops(8192, 8192, 8192, 1.6e-3) == pytest.approx(687.2, abs=0.1)
    assert bench_quack.tflops(4096, 2048, 1024, 1e-3) == pytest.approx(2 * 4096 * 2048 * 1024 / 1e-3 / 1e12)


def test_a_gemm_row_is_timed_only_near_cublas_and_without_poison():
    ok = bench_quack.gemm_within_tolerance
    assert ok(0.9, 1.0, 400.0) and ok(2.3, 1.0, 400.0)  # 2.3 <= 2 * 1.0 + 0.4
    assert not ok(2.5, 1.0, 400.0)
    assert not ok(math.nan, 1.0, 400.0) and not ok(math.inf, 1.0, 400.0)


def _row(impl, us, cublas_us, config="128x192 cluster 2x1 pingpong", shape="8192x8192x8192"):
    M, N, K = bench_quack.parse_gemm_shapes(shape)[0]
    return {"impl": impl, "kernel": "gemm", "shape": shape, "config": config, "us": us,
            "tflops": round(bench_quack.tflops(M, N, K, us * 1e-6), 1), "cublas_us": cublas_us,
            "cublas_tflops": round(bench_quack.tflops(M, N, K, cublas_us * 1e-6), 1)}


def test_the_gemm_table_gives_the_ratio_and_each_run_against_its_own_cublas():
    key = ("gemm", "8192x8192x8192")
    results = {"cutedsl": {key: _row("cutedsl", 1600.0, 1400.0)},
               "warpweave": {key: _row("warpweave", 1500.0, 1500.0)}}
    (row,), lines = bench_quack.gemm_table(results, ["8192x8192x8192"])
    assert row["ratio"] == pytest.approx(1600 / 1500, abs=1e-3)  # warpweave faster: above 1
    assert row["cutedsl_vs_cublas"] == pytest.approx(1400 / 1600, abs=1e-3)
    assert row["warpweave_vs_cublas"] == 1.0
    cells = [c.strip() for c in lines[-1].strip("|").split("|")]
    assert cells[:6] == ["gemm", "8192x8192x8192", "128x192 cluster 2x1 pingpong", "687.2", "733.0", "1.067"]
    assert cells[6] == "785.4 / 733.0"  # each run's cuBLAS
    assert len(cells) == len(lines[0].strip("|").split("|"))


def test_the_gemm_table_shows_both_configs_where_they_differ_and_errors_where_a_row_failed():
    key = ("gemm", "4096x4096x4096")
    results = {"cutedsl": {key: _row("cutedsl", 200.0, 190.0, "128x192 cluster 2x1 pingpong", key[1])},
               "warpweave": {key: {"impl": "warpweave", "kernel": "gemm", "shape": key[1],
                                   "config": "128x256 cluster 2x1 cooperative",
                                   "error": "wrong result: largest deviation from the f32 product nan"}}}
    (row,), lines = bench_quack.gemm_table(results, [key[1]])
    assert row["ratio"] is None and row["warpweave_vs_cublas"] is None
    cells = [c.strip() for c in lines[-1].strip("|").split("|")]
    assert cells[2] == "128x192 cluster 2x1 pingpong / 128x256 cluster 2x1 cooperative"
    assert cells[4].startswith("wrong result") and cells[5] == "-" and cells[6] == "723.4 / -"


def test_the_outer_run_hands_each_inner_run_its_shapes_and_kernels_with_quacks_disk_cache_off(tmp_path, capsys):
    """Each implementation's interpreter is run with --inner, the GEMM shapes and kernels as asked, and QuACK's disk
    cache off; the table is made from the rows it writes. Here the interpreters are stand-ins that record what they
    were handed and write one GEMM row."""
    seen = tmp_path / "seen"
    seen.mkdir()
    for impl, us in (("cutedsl", 1600.0), ("warpweave", 1500.0)):
        row = _row(impl, us, 1400.0, shape="2048x2048x2048")
        stub = tmp_path / f"{impl}_python"
        stub.write_text(textwrap.dedent(f"""\
            #!{sys.executable}
            import json, os, sys
            args = sys.argv[1:]
            json.dump({{"args": args, "cache": os.environ.get("QUACK_CACHE_ENABLED")}},
                      open({str(seen / impl)!r}, "w"))
            json.dump([{row!r}], open(args[args.index("--json") + 1], "w"))
        """))
        stub.chmod(0o755)
    out = tmp_path / "table.json"
    assert bench_quack.main(["--quack-src", str(tmp_path), "--cutedsl-python", str(tmp_path / "cutedsl_python"),
                             "--warpweave-python", str(tmp_path / "warpweave_python"), "--kernels", "gemm",
                             "--gemm-shapes", "2048", "--json", str(out)]) == 0
    for impl in ("cutedsl", "warpweave"):
        got = json.loads((seen / impl).read_text())
        assert got["cache"] == "0"
        args = got["args"]
        assert args[1] == "--inner" and args[args.index("--kernels") + 1] == "gemm"
        assert args[args.index("--gemm-shapes") + 1] == "2048x2048x2048"
    printed = capsys.readouterr().out
    assert "| gemm | 2048x2048x2048 |" in printed and "CuTe DSL µs" not in printed  # no norm table asked for
    (row,) = json.loads(out.read_text())
    assert row["ratio"] == pytest.approx(1600 / 1500, abs=1e-3)


def test_rounds_take_turns_at_going_first_and_a_row_keeps_its_fastest_round_unless_one_failed(tmp_path, capsys):
    """With --rounds 3 the order is CuTe DSL, warpweave / warpweave, CuTe DSL / CuTe DSL, warpweave; each row is the
    fastest of its implementation's rounds, and a round that reports no time (a wrong result) is what the row shows."""
    log = tmp_path / "order"
    times = {"cutedsl": [1600.0, 1550.0, 1580.0], "warpweave": [1500.0, 1450.0, None]}
    for impl, series in times.items():
        rows = [_row(impl, us, 1400.0, shape="2048x2048x2048") if us else
                {"kernel": "gemm", "shape": "2048x2048x2048", "error": "wrong result"} for us in series]
        stub = tmp_path / f"{impl}_python"
        stub.write_text(textwrap.dedent(f"""\
            #!{sys.executable}
            import json, sys
            with open({str(log)!r}, "a") as f:
                f.write({impl!r} + "\\n")
            n = open({str(log)!r}).read().split().count({impl!r})
            args = sys.argv[1:]
            json.dump([{rows!r}[n - 1]], open(args[args.index("--json") + 1], "w"))
        """))
        stub.chmod(0o755)
    out = tmp_path / "table.json"
    assert bench_quack.main(["--quack-src", str(tmp_path), "--cutedsl-python", str(tmp_path / "cutedsl_python"),
                             "--warpweave-python", str(tmp_path / "warpweave_python"), "--kernels", "gemm",
                             "--gemm-shapes", "2048", "--rounds", "3", "--json", str(out)]) == 0
    assert log.read_text().split() == ["cutedsl", "warpweave", "warpweave", "cutedsl", "cutedsl", "warpweave"]
    (row,) = json.loads(out.read_text())
    assert row["cutedsl"]["us"] == 1550.0 and row["cutedsl"]["rounds"] == 3
    assert "us" not in row["warpweave"] and row["warpweave"]["error"] == "wrong result" and row["ratio"] is None
