#!/usr/bin/env bash
# Runs on the GPU machine (device tool), over a copy of the working tree with .devcarry/ carried:
# unpacks the build, then runs the GPU tests, the examples and the benchmarks. Logs go under $OUT; a short
# summary is printed last. Usage: scripts/gpu_job.sh [pytest|conformance|bench|gemm|examples|all]...
# WW_PYTEST_ARGS and WW_GEMM_ARGS pass arguments to pytest and to benchmarks/python/bench_gemm.py.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-/tmp/ww-out}
mkdir -p "$OUT"
tar -xJf .devcarry/build.tar.xz
export PYTHONPATH=$PWD/frontend_python:$PWD/conformance:$PWD/pipelines PYTHONUNBUFFERED=1 WARPWEAVE_CACHE_DIR=/tmp/ww-cache
what=${*:-all}
summary=()
run() {  # name, command...
  local name=$1; shift
  local t0=$SECONDS
  "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  summary+=("$(printf '%-14s rc=%-3s %4ss  %s' "$name" "$rc" "$((SECONDS - t0))" "$(tail -n 1 "$OUT/$name.log")")")
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
case " $what " in *" all "*|*" pytest "*)
  run pytest python3 -m pytest -q -p no:cacheprovider tests/python ${WW_PYTEST_ARGS:-}
  run runtime_test ./bin/ww_runtime_test --gtest_brief=1 ;;
esac
case " $what " in *" conformance "*)
  run conformance timeout 500 python3 -m warpweave conformance --tier execute --json "$OUT/conformance.json" ;;
esac
case " $what " in *" all "*|*" examples "*)
  run main_job python3 -m warpweave main ;;
esac
case " $what " in *" all "*|*" bench "*)
  run bench_dsl python3 benchmarks/python/bench_dsl.py --json "$OUT/bench_dsl.json" ;;
esac
case " $what " in *" all "*|*" gemm "*)
  run bench_gemm python3 benchmarks/python/bench_gemm.py ${WW_GEMM_ARGS:-} --json "$OUT/bench_gemm.json" ;;
esac
for f in "$OUT"/*.log; do echo "== $f"; tail -n 25 "$f"; done
printf '\n== summary ==\n'; printf '%s\n' "${summary[@]}"
