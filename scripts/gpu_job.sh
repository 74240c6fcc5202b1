#!/usr/bin/env bash
# Runs on the GPU machine (device tool), over a copy of the working tree with .devcarry/ carried:
# unpacks the build, then runs the GPU tests, the examples and the benchmarks. Logs go under $OUT; a short
# summary is printed last. Usage: scripts/gpu_job.sh [pytest|conformance|bench|gemm|hopper|profile|examples|cutedsl|sanitize|sanitize_tests|integration|
# stash|vs_cutedsl|example_set|same_source|same_source_calls|same_source_variants|quack|quack_bench|ncu|all]...
# cutedsl: CuTe DSL's own public example programs, unmodified, through `python -m warpweave run`, from the copy that
# `scripts/pack_for_device.sh --cutedsl <NVIDIA/cutlass checkout>` put in .devcarry/ (never committed).
# sanitize: compute-sanitizer's memcheck, racecheck and synccheck over the examples; sanitize_tests: over the GPU tests.
# stash, vs_cutedsl: CuTe DSL itself beside warpweave (scripts/pack_cutedsl_for_device.sh): `stash` in one call, then
# `vs_cutedsl` in the next while the machine is warm.
# WW_PYTEST_ARGS, WW_GEMM_ARGS and WW_VS_ARGS pass arguments to pytest, benchmarks/python/bench_gemm.py and
# bench_vs_cutedsl.py; WW_PYTEST_PATHS narrows the pytest step (e.g. to the files with GPU tests: scripts/gpu_test_files.sh).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-/tmp/ww-out}
mkdir -p "$OUT"
tar -xJf .devcarry/build.tar.xz
wheel=$(ls .devcarry/wheel/warpweave-*.whl 2>/dev/null | head -n1)
if [ -n "$wheel" ]; then
  # The wheel (pack_for_device.sh --wheel), installed into a folder of its own that PYTHONPATH names: everything
  # below runs against the installed package (the machine's torch and numpy stay in use). No index is reachable
  # there; where pip is missing, a wheel unpacks as a zip.
  site=/tmp/ww-site
  rm -rf "$site"
  python3 -m pip install -q --no-deps --no-index --target "$site" "$wheel" > "$OUT/wheel_install.log" 2>&1 \
    || python3 -m zipfile -e "$wheel" "$site"
  export PYTHONPATH=$site
  # Tests that start Python with the tree's package folders on PYTHONPATH get the installed packages too: in this
  # copy of the tree (the device tool's, thrown away after the call) those folders become links to them.
  for d in frontend_python/warpweave conformance/warpweave_conformance pipelines/warpweave_pipelines; do
    rm -rf "$d" && ln -s "$site/$(basename "$d")" "$d"
  done
else
  export PYTHONPATH=$PWD/frontend_python:$PWD/conformance:$PWD/pipelines
  # The backends' Python packages as the tree has them now, not as they were packed: a change made after
  # pack_for_device.sh (Python only, no rebuild needed) would otherwise run against the packed copies
  # (2026-12-07: three Hopper tests failed so, new tests over old backend code).
  for d in frontend_python/warpweave/plugins/ww_backend_*.python; do
    gen=${d##*/ww_backend_}; gen=${gen%.python}
    [ -d "backends/$gen/python" ] && rm -rf "$d" && ln -s "$PWD/backends/$gen/python" "$d"
  done
fi
if ls .devcarry/deps/*.whl > /dev/null 2>&1; then  # apache-tvm-ffi and the like (pack_for_device.sh)
  rm -rf /tmp/ww-deps
  python3 -m pip install -q --no-deps --no-index --target /tmp/ww-deps .devcarry/deps/*.whl > "$OUT/deps_install.log" 2>&1 \
    || for w in .devcarry/deps/*.whl; do python3 -m zipfile -e "$w" /tmp/ww-deps; done
  export PYTHONPATH=$PYTHONPATH:/tmp/ww-deps
fi
export PYTHONUNBUFFERED=1 WARPWEAVE_CACHE_DIR=/tmp/ww-cache
# JAX takes 75% of the GPU's memory when it starts: with the example set's programs run several at once, the
# others then ran out of memory (2026-12-07: four programs failed so under warpweave, two under CuTe DSL itself)
export XLA_PYTHON_CLIENT_PREALLOCATE=false
export WARPWEAVE_EXAMPLE_PLUGIN_DIR=$PWD/example_plugin
what=${*:-all}
summary=()
# CuTe DSL's packages under $pk: part 1 stashed by the call before (`stash`), part 2 carried by this one.
pk=/tmp/cdpk
unpack_cutedsl() {
  if [ ! -d $pk/nvidia_cutlass_dsl ] && [ -f /tmp/cdstash/part1 ] && [ -f .devcarry/cd_part2 ]; then
    mkdir -p $pk && cat /tmp/cdstash/part1 .devcarry/cd_part2 | xz -d | tar -C $pk -xf -
  fi
}
run() {  # name, command...
  local name=$1; shift
  local t0=$SECONDS
  # WW_STEP_TIMEOUT (seconds): a step that hangs (a deadlocked kernel) ends there, and the steps after it still run.
  timeout "${WW_STEP_TIMEOUT:-0}" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  summary+=("$(printf '%-14s rc=%-3s %4ss  %s' "$name" "$rc" "$((SECONDS - t0))" "$(tail -n 1 "$OUT/$name.log")")")
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
case " $what " in *" all "*|*" pytest "*)
  run pytest python3 -m pytest -q -p no:cacheprovider ${WW_PYTEST_PATHS:-tests/python tests/reliability backends} ${WW_PYTEST_ARGS:-}
  run runtime_test ./bin/ww_runtime_test --gtest_brief=1 ;;
esac
case " $what " in *" conformance "*)
  run conformance timeout 500 python3 -m warpweave conformance --tier execute --json "$OUT/conformance.json" ;;
esac
case " $what " in *" all "*|*" examples "*)
  run main_job python3 -m warpweave main ;;
esac
case " $what " in *" all "*|*" cutedsl "*)
  if [ -f .devcarry/cutedsl.tar.xz ]; then
    mkdir -p /tmp/cutedsl && tar -C /tmp/cutedsl -xJf .devcarry/cutedsl.tar.xz
    ex=/tmp/cutedsl/examples/python/CuTeDSL/cute/ampere/kernel
    cutedsl_run() { local name=$1; shift; run "cutedsl_$name" timeout 300 python3 -m warpweave run "$@"; }
    cutedsl_run add       $ex/elementwise/elementwise_add.py
    cutedsl_run add_odd   $ex/elementwise/elementwise_add.py --M 1000 --N 777
    cutedsl_run add_odd2  $ex/elementwise/elementwise_add.py --M 3 --N 4100
    cutedsl_run apply     $ex/elementwise/elementwise_apply.py
    cutedsl_run apply_odd $ex/elementwise/elementwise_apply.py --M 1001 --N 513 --op mul
    cutedsl_run sgemm     $ex/dense_gemm/sgemm.py
    cutedsl_run sgemm_odd $ex/dense_gemm/sgemm.py --mnk 1000,777,333
    cutedsl_run sgemm_odd2 $ex/dense_gemm/sgemm.py --mnk 129,65,17 --a_major k --c_major m
    cutedsl_run tensorop  $ex/dense_gemm/tensorop_gemm.py
    cutedsl_run tensorop_odd  $ex/dense_gemm/tensorop_gemm.py --mnkl 1000,776,328,1
    cutedsl_run tensorop_odd2 $ex/dense_gemm/tensorop_gemm.py --mnkl 136,200,520,3 --ab_dtype BFloat16 --c_dtype BFloat16
    # Hopper: TMA + wgmma GEMMs (1x1 and 2x1 clusters) and the warp-specialized persistent one, each checked
    # against its own reference at the default size and two that are not multiples of the tile.
    hx=/tmp/cutedsl/examples/python/CuTeDSL/cute/hopper/kernel/dense_gemm
    cutedsl_run hopper_gemm           $hx/dense_gemm.py
    cutedsl_run hopper_gemm_odd       $hx/dense_gemm.py --mnkl 1000,776,328,1
    cutedsl_run hopper_gemm_odd2      $hx/dense_gemm.py --mnkl 136,200,520,3 --a_major m --c_major m
    cutedsl_run hopper_gemm_2x1       $hx/dense_gemm.py --cluster_shape_mn 2,1
    cutedsl_run hopper_gemm_2x1_odd   $hx/dense_gemm.py --cluster_shape_mn 2,1 --mnkl 1000,776,328,1
    cutedsl_run hopper_gemm_2x1_odd2  $hx/dense_gemm.py --cluster_shape_mn 2,1 --tile_shape_mn 128,256 --mnkl 136,200,520,3
    cutedsl_run hopper_persistent     $hx/dense_gemm_persistent.py
    cutedsl_run hopper_persistent_odd $hx/dense_gemm_persistent.py --mnkl 1000,776,328,1
    cutedsl_run hopper_persistent_odd2 $hx/dense_gemm_persistent.py --mnkl 136,200,520,3 --cluster_shape_mn 2,1
  else
    echo "cutedsl: no .devcarry/cutedsl.tar.xz (pack_for_device.sh --cutedsl <cutlass checkout>)" | tee "$OUT/cutedsl.log"
  fi ;;
esac
case " $what " in *" stash "*)
  # Part 1 of CuTe DSL's packages (scripts/pack_cutedsl_for_device.sh), kept for the next call's vs_cutedsl step.
  mkdir -p /tmp/cdstash && cp .devcarry/cd_part1 /tmp/cdstash/part1 && echo "stashed $(du -h /tmp/cdstash/part1)" ;;
esac
case " $what " in *" vs_cutedsl "*)
  # CuTe DSL's own example kernels beside warpweave's and cuBLAS, in one process per table (bench_vs_cutedsl.py).
  unpack_cutedsl
  if [ -d $pk/nvidia_cutlass_dsl ] && [ -f .devcarry/cutedsl.tar.xz ]; then
    mkdir -p /tmp/cutedsl && tar -C /tmp/cutedsl -xJf .devcarry/cutedsl.tar.xz
    cd_env=(env "PYTHONPATH=$pk:$pk/nvidia_cutlass_dsl/dsl_packages:$PYTHONPATH")
    cd_ex=/tmp/cutedsl/examples/python/CuTeDSL
    run vs_cutedsl "${cd_env[@]}" python3 benchmarks/python/bench_vs_cutedsl.py --cutedsl-examples $cd_ex \
      ${WW_VS_SHAPES:+--shapes $WW_VS_SHAPES} ${WW_VS_ARGS:-} --json "$OUT/vs_cutedsl.json"
    run vs_cutedsl_ampere "${cd_env[@]}" python3 benchmarks/python/bench_vs_cutedsl.py --ampere \
      --cutedsl-examples $cd_ex --json "$OUT/vs_cutedsl_ampere.json"
  else
    echo "vs_cutedsl: no CuTe DSL packages (stash part 1 in the call before) or no .devcarry/cutedsl.tar.xz" |
      tee "$OUT/vs_cutedsl.log"
  fi ;;
esac
case " $what " in *" example_set "*)
  # Every program of CuTe DSL's public example set whose target this GPU runs (sm_80, sm_90a), with its default
  # arguments, under warpweave and under CuTe DSL itself (packages stashed as for vs_cutedsl): both columns.
  unpack_cutedsl
  if [ -f .devcarry/cutedsl.tar.xz ]; then
    mkdir -p /tmp/cutedsl && tar -C /tmp/cutedsl -xJf .devcarry/cutedsl.tar.xz
    ref=()
    [ -d $pk/nvidia_cutlass_dsl ] && ref=(--reference-pythonpath "$pk:$pk/nvidia_cutlass_dsl/dsl_packages:/tmp/ww-deps")
    run example_set python3 benchmarks/python/cutedsl_examples.py /tmp/cutedsl --all --real sm_80,sm_90a \
      --python python3 --jobs "${WW_EXAMPLE_JOBS:-6}" --timeout "${WW_EXAMPLE_TIMEOUT:-150}" ${WW_EXAMPLE_UNDER:+--under $WW_EXAMPLE_UNDER} \
      ${WW_EXAMPLE_REAL_ALSO:+--real-also $WW_EXAMPLE_REAL_ALSO} "${ref[@]}"
  else
    echo "example_set: no .devcarry/cutedsl.tar.xz (pack_for_device.sh --cutedsl <cutlass checkout>)" |
      tee "$OUT/example_set.log"
  fi ;;
esac
case " $what " in *" odd_shapes "*)
  # The GEMM and attention programs at shapes that are not multiples of their tiles, under both (odd_shape_runs.py).
  unpack_cutedsl
  if [ -f .devcarry/cutedsl.tar.xz ]; then
    mkdir -p /tmp/cutedsl && tar -C /tmp/cutedsl -xJf .devcarry/cutedsl.tar.xz
    ref=()
    [ -d $pk/nvidia_cutlass_dsl ] && ref=(--reference-pythonpath "$pk:$pk/nvidia_cutlass_dsl/dsl_packages:/tmp/ww-deps")
    run odd_shapes python3 benchmarks/python/odd_shape_runs.py /tmp/cutedsl --python python3 \
      --jobs "${WW_EXAMPLE_JOBS:-4}" --timeout "${WW_EXAMPLE_TIMEOUT:-200}" "${ref[@]}"
  else
    echo "odd_shapes: no .devcarry/cutedsl.tar.xz (pack_for_device.sh --cutedsl <cutlass checkout>)" |
      tee "$OUT/odd_shapes.log"
  fi ;;
esac
case " $what " in *" quack "*)
  # QuACK's own tests (benchmarks/python/quack_tests.py), the same sample under CuTe DSL itself (packages as for
  # vs_cutedsl) and under warpweave through the `cutlass` alias; QuACK's sdist carried in .devcarry/ by
  # pack_for_device.sh --quack. WW_QUACK_ARGS: --files, --every, --workers, --timeout.
  unpack_cutedsl
  if [ -f .devcarry/quack.tar.gz ]; then
    rm -rf /tmp/quack && mkdir -p /tmp/quack && tar -C /tmp/quack -xzf .devcarry/quack.tar.gz
    qsrc=$(ls -d /tmp/quack/quack_kernels-*)
    # WW_QUACK_LIBRARY: a tarball of another library written in CuTe DSL (its package and tests/ at the top, any
    # pure-Python package its tests import beside them), whose tests run instead of QuACK's, with QuACK still
    # importable on both sides (FlashAttention's CuTe DSL kernels import it). Fetched, never committed.
    lib_path=""
    if [ -n "${WW_QUACK_LIBRARY:-}" ]; then
      rm -rf /tmp/library && mkdir -p /tmp/library && tar -C /tmp/library -xzf "$WW_QUACK_LIBRARY"
      lib_path=$qsrc: && qsrc=/tmp/library
    fi
    ref=()
    if [ -d $pk/nvidia_cutlass_dsl ]; then
      # CuTe DSL's interpreter: its packages, QuACK and the sample plugin on the path, and not warpweave (the
      # alias that --install-alias puts in python3's site-packages finds no warpweave there, so it does nothing)
      printf '#!/bin/sh\nPYTHONPATH=%s exec python3 "$@"\n' \
        "$qsrc:$lib_path$OUT/quack_logs/plugin:$pk:$pk/nvidia_cutlass_dsl/dsl_packages:/tmp/ww-deps" > /tmp/cdpy
      chmod +x /tmp/cdpy
      ref=(--cutedsl-python /tmp/cdpy)
    fi
    run quack env PYTHONPATH="$lib_path$PYTHONPATH" python3 benchmarks/python/quack_tests.py --warpweave-python python3 --install-alias \
      --quack-src "$qsrc" --logs "$OUT/quack_logs" --json "$OUT/quack.json" \
      ${WW_QUACK_ARGS:-} "${ref[@]}"
    tar -C "$OUT" -cJf "$OUT/quack_logs.tar.xz" quack_logs && rm -rf "$OUT/quack_logs"
  else
    echo "quack: no .devcarry/quack.tar.gz (pack_for_device.sh --quack)" | tee "$OUT/quack.log"
  fi ;;
esac
case " $what " in *" quack_bench "*)
  # QuACK's memory-bound kernels and its sm_90 GEMM (4096^3, 8192^3, beside cuBLAS) timed under both
  # (benchmarks/python/bench_quack.py), as the quack step sets them up. WW_QUACK_BENCH_ARGS: e.g. --kernels gemm.
  unpack_cutedsl
  if [ -f .devcarry/quack.tar.gz ] && [ -d $pk/nvidia_cutlass_dsl ]; then
    rm -rf /tmp/quack && mkdir -p /tmp/quack && tar -C /tmp/quack -xzf .devcarry/quack.tar.gz
    qsrc=$(ls -d /tmp/quack/quack_kernels-*)
    printf '#!/bin/sh\nPYTHONPATH=%s exec python3 "$@"\n' "$pk:$pk/nvidia_cutlass_dsl/dsl_packages:/tmp/ww-deps" > /tmp/cdpy
    chmod +x /tmp/cdpy
    python3 -m warpweave alias --install > /dev/null
    run quack_bench python3 benchmarks/python/bench_quack.py --warpweave-python python3 --cutedsl-python /tmp/cdpy \
      --quack-src "$qsrc" --json "$OUT/quack_bench.json" ${WW_QUACK_BENCH_ARGS:-}
  else
    echo "quack_bench: needs .devcarry/quack.tar.gz and CuTe DSL's packages (stash)" | tee "$OUT/quack_bench.log"
  fi ;;
esac
case " $what " in *" same_source "*|*" same_source_calls "*)
  # CuTe DSL's own programs compiled and timed by CuTe DSL and by warpweave, one timer (bench_same_source.py);
  # CuTe DSL's packages as for vs_cutedsl, its interpreter a wrapper that puts them on the path. Then (and alone
  # with same_source_calls) every example program that times itself with cute.testing.benchmark, run unmodified
  # by each side, its benchmark calls timed by one shared timer (--benchmark-calls): WW_SAME_SOURCE_CALL_TIMEOUT
  # seconds per program and side (default 150), WW_SAME_SOURCE_CALLS_BUDGET seconds in all (default 360: the
  # programs left after it are reported as not run), WW_SAME_SOURCE_ROUNDS runs of each side, the order alternating
  # (default 2), WW_SAME_SOURCE_CALLS_ARGS more arguments (e.g. --only).
  unpack_cutedsl
  if [ -d $pk/nvidia_cutlass_dsl ] && [ -f .devcarry/cutedsl.tar.xz ]; then
    mkdir -p /tmp/cutedsl && tar -C /tmp/cutedsl -xJf .devcarry/cutedsl.tar.xz
    printf '#!/bin/sh\nPYTHONPATH=%s exec python3 "$@"\n' "$pk:$pk/nvidia_cutlass_dsl/dsl_packages:/tmp/ww-deps" > /tmp/cdpy
    chmod +x /tmp/cdpy
    case " $what " in *" same_source "*)
      run same_source python3 benchmarks/python/bench_same_source.py /tmp/cutedsl --cutedsl-python /tmp/cdpy \
        ${WW_SAME_SOURCE_ARGS:-} --json "$OUT/same_source.json" ;;
    esac
    run same_source_calls python3 benchmarks/python/bench_same_source.py /tmp/cutedsl --cutedsl-python /tmp/cdpy \
      --benchmark-calls --timeout "${WW_SAME_SOURCE_CALL_TIMEOUT:-150}" --budget "${WW_SAME_SOURCE_CALLS_BUDGET:-360}" \
      --rounds "${WW_SAME_SOURCE_ROUNDS:-2}" ${WW_SAME_SOURCE_CALLS_ARGS:-} --json "$OUT/same_source_calls.json"
  else
    echo "same_source: no CuTe DSL packages (stash part 1 in the call before) or no .devcarry/cutedsl.tar.xz" |
      tee "$OUT/same_source.log"
  fi ;;
esac
case " $what " in *" same_source_variants "*)
  # CuTe DSL's Hopper persistent GEMMs under warpweave with variants of warpweave applied from outside (each undoes
  # one change or tries what CuTe DSL's compile does otherwise), timed by the shared timer beside the baseline and
  # CuTe DSL (same_source_variants.py); first each side's launches and tensor maps recorded (launch_recorder.c),
  # last, with what is left of the budget, both GEMM kernels profiled under Nsight Compute on both sides.
  # Without CuTe DSL's packages (stash part 1 in the call before) the variants are timed against the baseline
  # alone. WW_VARIANTS_BUDGET seconds in all (default 540), WW_VARIANTS_ARGS more arguments (e.g. --variants all,
  # --rounds 3, --only dense_gemm_persistent.py, cubin_ptxas@DIR among the variants).
  unpack_cutedsl
  if [ -f .devcarry/cutedsl.tar.xz ]; then
    mkdir -p /tmp/cutedsl && tar -C /tmp/cutedsl -xJf .devcarry/cutedsl.tar.xz
    cd_args=--no-cutedsl
    if [ -d $pk/nvidia_cutlass_dsl ]; then
      printf '#!/bin/sh\nPYTHONPATH=%s exec python3 "$@"\n' "$pk:$pk/nvidia_cutlass_dsl/dsl_packages:/tmp/ww-deps" > /tmp/cdpy
      chmod +x /tmp/cdpy
      cd_args="--cutedsl-python /tmp/cdpy"
    fi
    run same_source_variants python3 benchmarks/python/same_source_variants.py /tmp/cutedsl $cd_args \
      --record-launches --ncu dense_gemm_persistent.py,dense_gemm_fp8_gelu_persistent.py \
      --budget "${WW_VARIANTS_BUDGET:-540}" ${WW_VARIANTS_ARGS:-} \
      --json "$OUT/same_source_variants.json"
  else
    echo "same_source_variants: no .devcarry/cutedsl.tar.xz (pack_for_device.sh --cutedsl)" |
      tee "$OUT/same_source_variants.log"
  fi ;;
esac
case " $what " in *" sanitize "*)
  for tool in memcheck racecheck synccheck; do
    run "san_${tool}_add" compute-sanitizer --tool $tool --error-exitcode 9 python3 frontend_python/examples/elementwise_add.py --M 256 --N 384 --iterations 1 --warmup_iterations 0
    run "san_${tool}_sgemm" compute-sanitizer --tool $tool --error-exitcode 9 python3 frontend_python/examples/sgemm.py --mnk 136,72,40 --iterations 1 --warmup_iterations 0
    run "san_${tool}_tensorop" compute-sanitizer --tool $tool --error-exitcode 9 python3 frontend_python/examples/tensorop_gemm.py --iterations 1 --warmup_iterations 0
    run "san_${tool}_hopper" compute-sanitizer --tool $tool --error-exitcode 9 python3 frontend_python/examples/hopper/dense_gemm.py --iterations 1 --warmup_iterations 0
    run "san_${tool}_hopper_2x1" compute-sanitizer --tool $tool --error-exitcode 9 python3 frontend_python/examples/hopper/dense_gemm.py --cluster_shape_mn 2,1 --mnkl 264,136,200,1 --iterations 1 --warmup_iterations 0
    run "san_${tool}_persist" compute-sanitizer --tool $tool --error-exitcode 9 python3 frontend_python/examples/hopper/dense_gemm_persistent.py --mnkl 264,136,200,2 --iterations 1 --warmup_iterations 0
    run "san_${tool}_persist_2x1" compute-sanitizer --tool $tool --error-exitcode 9 python3 frontend_python/examples/hopper/dense_gemm_persistent.py --cluster_shape_mn 2,1 --mnkl 520,264,200,1 --iterations 1 --warmup_iterations 0
  done ;;
esac
case " $what " in *" sanitize_tests "*)
  # The GPU tests under compute-sanitizer: every tool of WW_SAN_TOOLS (memcheck, racecheck, synccheck) over every GPU
  # test file (WW_PYTEST_PATHS narrows it). A test that fails under a tool fails its step. One tool over all of them
  # in one process takes longer than a device call (memcheck: 248 of 605 tests in 400 s, 2026-12-02), and the host
  # side (tracing, compiling) is most of it: WW_SAN_JOBS=n splits the tests round-robin over n processes per tool,
  # all running at once (each test compiles into a JIT cache of its own: conftest.py's private_cache).
  # Each test's outcome is logged as it ends (-v), so a step cut short by WW_STEP_TIMEOUT still says which passed.
  # Each process's report goes to a file of its own (--log-file), apart from pytest's output, and is summarised at
  # the end. Every error is printed (--print-limit 0), so the summary counts each one by its headline: a limit of
  # 20 left 15 of 35 errors per process unnamed (2026-12-02).
  san_files=${WW_PYTEST_PATHS:-$(scripts/gpu_test_files.sh)}
  san_jobs=${WW_SAN_JOBS:-1}
  mkdir -p "$OUT/reports"
  # Left out by default: programs run against the stand-in driver (no GPU work, and the tool, which follows child
  # processes, crashes them) and assertions on kernel times (the tool distorts them). WW_SAN_SELECT replaces it.
  python3 -m pytest --collect-only -q -p no:cacheprovider -m "${WW_SAN_SELECT:-not stand_in_driver and not timing}" \
    $san_files 2>&1 | grep '::' > "$OUT/san_tests.txt"
  for tool in ${WW_SAN_TOOLS:-memcheck racecheck synccheck}; do
    for ((j = 0; j < san_jobs; j++)); do
      name=san_tests_${tool}_$((j + 1))of$san_jobs
      mapfile -t ids < <(awk -v j=$j -v n="$san_jobs" '(NR - 1) % n == j' "$OUT/san_tests.txt")
      ( run "$name" compute-sanitizer --tool "$tool" --error-exitcode 9 --print-limit 0 \
          --log-file "$OUT/reports/$name.%p.txt" python3 -m pytest -v -rfE -p no:cacheprovider "${ids[@]}"
        printf '%s\n' "${summary[-1]}" > "$OUT/$name.summary" ) &
    done
  done
  wait
  for f in "$OUT"/san_tests_*.summary; do summary+=("$(cat "$f")"); done
  # Each process's summary and, counted, the headline of every error it reported (the lines below a headline, its
  # backtrace, are indented); then the start of the first report that found something.
  bad=$(grep -l -E "ERROR SUMMARY: [1-9]|RACECHECK SUMMARY: [1-9]" "$OUT"/reports/*.txt 2>/dev/null)
  { for f in "$OUT"/reports/*.txt; do
      echo "== $(basename "$f"): $(grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY" "$f" | sed 's/^=* *//' | tr '\n' ' ')"
      grep -E '^========= [^ ]' "$f" | grep -v -E "COMPUTE-SANITIZER|SUMMARY|Target application returned" |
        sed 's/^=* //' | sort | uniq -c
    done
    first=$(printf '%s\n' $bad | head -n 1)
    [ -z "$first" ] || { echo "== first report with errors: $(basename "$first")"; head -n 80 "$first"; }
    echo "$(ls "$OUT"/reports | wc -l) processes followed, $(printf '%s' "$bad" | grep -c .) of them with errors"
  } > "$OUT/san_tests_reports.log"
  summary+=("$(printf '%-14s %s' san_tests_reports "$(tail -n 1 "$OUT/san_tests_reports.log")")")
  rm -rf "$OUT/reports" ;;
esac
case " $what " in *" all "*|*" hopper "*)
  run hopper_persistent python3 -m pytest -q -rP -p no:cacheprovider backends/hopper/tests/test_hopper_gemm_persistent.py tests/python/test_persistent_tile_scheduler.py tests/python/test_pipeline_participants.py
  run bench_hopper python3 benchmarks/python/bench_hopper_gemm.py --sizes 4096,8192 --json "$OUT/bench_hopper.json" ;;
esac
case " $what " in *" all "*|*" profile "*)
  # intra-kernel profiling and autotuning: their GPU tests, a Perfetto trace of the persistent GEMM's producer and
  # consumer warps, and the profiling overhead on the GEMMs (traces under $OUT)
  run profile_tests python3 -m pytest -q -p no:cacheprovider tests/python/test_profile.py tests/python/test_autotune.py
  run profile_persistent python3 frontend_python/examples/hopper/dense_gemm_persistent.py --mnkl 4096,4096,4096,1 --profile "$OUT/trace_persistent.json"
  run bench_profile python3 benchmarks/python/bench_profile_overhead.py --json "$OUT/bench_profile.json" --trace-dir "$OUT"
  run bench_autotune python3 benchmarks/python/bench_autotune.py --json "$OUT/bench_autotune.json" ;;
esac
case " $what " in *" ncu "*)
  # Nsight Compute on the Hopper GEMMs at the clocks the GPU runs at (not locked to base): speed of light, pipe
  # utilisation, warp stalls, shared-memory bank conflicts and L2 hit rate of one launch after the warm-ups (by
  # their mangled names: the DSL's kernels are plain identifiers, torch's C++ names start with _Z; the reference
  # check, hence cuBLAS, is skipped).
  ncu_run() {  # name, example, args...
    local name=$1 ex=$2; shift 2
    run "ncu_$name" ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis \
      --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section WarpStateStats \
      --section SchedulerStats --section Occupancy --print-details all --kernel-name-base mangled \
      --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_gmma.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_gmma.sum \
      -k 'regex:^[A-Za-z][A-Za-z_0-9]*$' --launch-skip 2 --launch-count 1 \
      python3 "frontend_python/examples/hopper/$ex.py" "$@" --iterations 1 --warmup_iterations 2 --skip_ref_check
  }
  ncu_run persistent_8192 dense_gemm_persistent --mnkl 8192,8192,8192,1 --cluster_shape_mn 2,1 --swizzle_size 8
  ncu_run dense_4096 dense_gemm --mnkl 4096,4096,4096,1 --tile_shape_mn 128,256
  ncu_run persistent_16k_2k dense_gemm_persistent --mnkl 16384,2048,8192,1 --cluster_shape_mn 2,1 --swizzle_size 8
  ncu --query-metrics --chip gh100 2>&1 | grep -i -E "tensor_op|gmma" > "$OUT/ncu_metrics.log" ;;
esac
case " $what " in *" all "*|*" bench "*)
  run bench_dsl python3 benchmarks/python/bench_dsl.py --json "$OUT/bench_dsl.json" ;;
esac
case " $what " in *" all "*|*" integration "*)
  # Ahead-of-time export run from C++ and load_module, TVM FFI calls with torch tensors, CUDA graph capture, and
  # the host cost of a call (compiled, TVM FFI, raw cuLaunchKernel, torch.add).
  run integration python3 -m pytest -q -p no:cacheprovider -rs tests/python/test_export.py \
    tests/python/test_export_example.py tests/python/test_tvm_ffi.py
  run bench_launch python3 benchmarks/python/bench_launch_overhead.py --json "$OUT/bench_launch.json"
  run bench_host_loop python3 benchmarks/python/bench_host_loop_overhead.py --json "$OUT/bench_host_loop.json"
  run bench_launch_stub python3 benchmarks/python/bench_launch_overhead.py --stub ;;  # this host, driver left out
esac
case " $what " in *" all "*|*" gemm "*)
  run bench_gemm python3 benchmarks/python/bench_gemm.py ${WW_GEMM_ARGS:-} --json "$OUT/bench_gemm.json" ;;
esac
# The device tool returns few files: the failures of every step, gathered into one.
{ for f in "$OUT"/*.log; do
    grep -E "^(FAILED|ERROR) |^E  +[A-Za-z]|Error|FAIL" "$f" | head -n 60 | sed "s|^|$(basename "$f"): |"
  done; } > "$OUT/failures.txt" 2>/dev/null
tar -C "$OUT" -cJf "$OUT/logs.tar.xz" $(cd "$OUT" && ls *.log 2>/dev/null) 2>/dev/null  # every log, in one file
for f in "$OUT"/*.log; do echo "== $f"; tail -n ${WW_TAIL:-25} "$f"; done
printf '\n== summary ==\n'; printf '%s\n' "${summary[@]}"
