#!/usr/bin/env bash
# Packs what the GPU machine needs and cannot build (it has no LLVM): the Python extension and the C++ test
# binaries, stripped and xz-compressed into .devcarry/ (ignored by git; name it in the device tool's `carry`).
# --cutedsl <NVIDIA/cutlass checkout or git dir>: also packs that checkout's public CuTe DSL example programs
# (examples/python/CuTeDSL) for gpu_job.sh's cutedsl step. They are never committed here.
# --quack: also carries QuACK's sdist (build/quack-cache, fetched by its tests or benchmarks/python/quack_tests.py)
# for gpu_job.sh's quack step. Never committed.
# --wheel [FILE]: carries the warpweave wheel (FILE, or one scripts/build_wheel.sh builds) in .devcarry/wheel/
# instead of the build's extension and plugins; gpu_job.sh installs it and runs everything against the installed
# package. The wheel is 19.6 MiB (2026-12-01; deflated already: xz -6 of it gives 19.5 MiB, so it travels as it
# is), against 13.2 MiB for build.tar.xz; either fits the device tool's 64 MiB.
set -euo pipefail
cutedsl=""
wheel=""
quack=""
while (($#)); do
  case $1 in
    --cutedsl) cutedsl=$2; shift 2 ;;
    --quack) quack=1; shift ;;
    --wheel)
      if [ -n "${2:-}" ] && [ "${2#--}" = "$2" ]; then wheel=$(realpath "$2"); shift 2; else wheel=build; shift; fi ;;
    *) echo "pack_for_device.sh: unknown argument $1 (--cutedsl DIR, --quack, --wheel [FILE])" >&2; exit 2 ;;
  esac
done
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
if [ "$wheel" = build ]; then wheel=$("$root/scripts/build_wheel.sh" --out /tmp/ww-wheel/dist | tail -n1); fi
stage=$(mktemp -d)
mkdir -p "$stage/bin"
if [ -z "$wheel" ]; then
  mkdir -p "$stage/frontend_python/warpweave"
  cp frontend_python/warpweave/_core*.so frontend_python/warpweave/libprotobuf.so.32 "$stage/frontend_python/warpweave/"
  # The whole-program PTX assembler the build wraps: without it the GPU machine falls back to another tool and
  # its register figures would not be the ones users get.
  cp frontend_python/warpweave/libww_nvptxcompiler.so "$stage/frontend_python/warpweave/" 2>/dev/null || true
  # -L: the plugins' Python packages are links into backends/ here; the GPU machine gets copies.
  [ -d frontend_python/warpweave/plugins ] && cp -rL frontend_python/warpweave/plugins "$stage/frontend_python/warpweave/"
fi
for t in ww_runtime_test ww_layout_test; do [ -x build/tests/$t ] && cp build/tests/$t "$stage/bin/"; done
# The out-of-tree example plugin, built against an SDK install as a third party would (the GPU machine cannot build
# it); its tests find it through WARPWEAVE_EXAMPLE_PLUGIN_DIR.
sdk=$(mktemp -d); b1=$(mktemp -d)
cmake --install build --prefix "$sdk" >/dev/null
cmake -S plugins_api/examples/b1_mma -B "$b1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$sdk" >/dev/null
cmake --build "$b1" >/dev/null
mkdir -p "$stage/example_plugin"
cp "$b1"/ww_example_b1.so "$stage/example_plugin/" && cp -rL "$b1"/ww_example_b1.python "$stage/example_plugin/"
rm -rf "$sdk" "$b1"
find "$stage" -type f \( -name '*.so' -o -path '*/bin/*' \) -exec strip --strip-unneeded {} + 2>/dev/null || true
mkdir -p .devcarry
tar -C "$stage" -cf - . | xz -T2 -6 > .devcarry/build.tar.xz
rm -rf "$stage" .devcarry/wheel
if [ -n "$wheel" ]; then
  mkdir -p .devcarry/wheel && cp "$wheel" .devcarry/wheel/
fi
# Python packages the GPU machine lacks and cannot fetch (no index there): apache-tvm-ffi (TVM FFI calls), as the
# wheel pinned in requirements.txt (3.2 MiB), for gpu_job.sh to install.
rm -rf .devcarry/deps && mkdir -p .devcarry/deps
# jax-tvm-ffi (0.1 MiB) likewise: the GPU machine's Python has JAX, not the package that cutlass_call runs through.
for pin in $(grep -E '^(apache-tvm-ffi|jax-tvm-ffi)==' requirements.txt || true); do
  .venv/bin/python -m pip download -q --no-deps --only-binary :all: --python-version 3.12 -d .devcarry/deps "$pin" \
    || echo "pack_for_device.sh: could not download $pin; the GPU job's tests that need it will skip" >&2
done
if [ -n "$cutedsl" ]; then
  if [ -d "$cutedsl/examples/python/CuTeDSL" ]; then
    tar -C "$cutedsl" -cf - examples/python/CuTeDSL | xz -T2 -6 > .devcarry/cutedsl.tar.xz
  else  # a bare git directory (the fetch tool's mirror)
    git --git-dir "$cutedsl" archive HEAD examples/python/CuTeDSL | xz -T2 -6 > .devcarry/cutedsl.tar.xz
  fi
fi
rm -f .devcarry/quack.tar.gz
if [ -n "$quack" ]; then
  sdist=$(ls build/quack-cache/quack_kernels-*.tar.gz 2>/dev/null | head -n1)
  [ -n "$sdist" ] || sdist=$(.venv/bin/python -c "import sys; sys.path.insert(0, 'benchmarks/python'); import quack_tests, glob; \
import os; src = quack_tests.fetch_sdist('0.6.5'); print(glob.glob(os.path.join(os.path.dirname(src), '*.tar.gz'))[0])")
  cp "$sdist" .devcarry/quack.tar.gz
  # QuACK's linear and MLP modules (test_linear*.py, test_mlp.py, ...) import einops, which the GPU machine's
  # Python may lack: its wheel (pure Python, 0.1 MiB) goes with the other deps
  .venv/bin/python -m pip download -q --no-deps --only-binary :all: --python-version 3.12 -d .devcarry/deps \
    "einops==0.8.2" || echo "pack_for_device.sh: could not download einops; QuACK's linear tests will not import" >&2
fi
ls -la .devcarry/
