#!/usr/bin/env bash
# Install what is missing, build, and run every test: the GoogleTest suites and the bounded fuzzer (CTest), then
# pytest (tests/reliability: the hostile-input probe), then the sanitizer build. GPU tests skip with a reason on a
# machine without a GPU.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
cd "$root"
ctest --test-dir build --output-on-failure -j"$(nproc)"
.venv/bin/python -m pytest -q tests/python tests/reliability backends

# The sanitizer build (build-asan/): the core that needs no MLIR (layout algebra, IR builder, runtime, JIT cache,
# plugin host) and its GoogleTest suites under AddressSanitizer and UndefinedBehaviorSanitizer, and the bounded
# manifest fuzzer. Compiled by clang (libFuzzer) through ccache; any report fails the run.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
if [ ! -f build-asan/build.ninja ]; then
  cxx=$(command -v clang++-22 || command -v clang++ || true)
  cc=$(command -v clang-22 || command -v clang || true)
  compilers=()
  [ -n "$cxx" ] && [ -n "$cc" ] && compilers=(-DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx")
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
        -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" "${compilers[@]}" -DWW_CORE_ONLY=ON -DWW_SANITIZE=ON >/dev/null
fi
cmake --build build-asan -j"$(nproc)"
ctest --test-dir build-asan --output-on-failure -j"$(nproc)"

# WW_TEST_WHEEL=1 (CI sets it, .ci/run): the wheel, built (a second full build of the project, through ccache),
# installed into a fresh environment outside the checkout and checked there, the example plugin built against it.
if [ "${WW_TEST_WHEEL:-0}" = 1 ]; then
  "$root/scripts/test_wheel.sh"
fi
