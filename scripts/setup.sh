#!/usr/bin/env bash
# Installs what is missing on a fresh machine (Debian packages, the .venv), then configures and builds warpweave.
# Safe to re-run: each step skips what is already there.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

log() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

# --- Debian packages (LLVM/MLIR 22, protobuf, Boost.DLL, GoogleTest, Google Benchmark, build tools) -------------
packages=(llvm-22-dev libmlir-22-dev mlir-22-tools clang-22 libclang-rt-22-dev libzstd-dev libboost-dev
          libboost-filesystem-dev libprotobuf-dev protobuf-compiler libgtest-dev libgmock-dev libbenchmark-dev
          cmake ninja-build ccache)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# --- Python 3.12 virtual environment --------------------------------------------------------------------------
find_python312() {
  if command -v pyenv >/dev/null 2>&1; then
    local v
    v=$(pyenv versions --bare 2>/dev/null | grep -E '^3\.12(\.[0-9]+)?$' | sort -V | tail -n1 || true)
    if [ -n "$v" ] && [ -x "$(pyenv root)/versions/$v/bin/python3.12" ]; then
      echo "$(pyenv root)/versions/$v/bin/python3.12"; return
    fi
  fi
  for c in python3.12 /usr/bin/python3.12 /usr/local/bin/python3.12; do
    if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then
      command -v "$c"; return
    fi
  done
  return 1
}
if [ ! -x .venv/bin/python ]; then
  py=$(find_python312) || { echo "setup: Python 3.12 with headers is required (pyenv 3.12 or python3.12)" >&2; exit 1; }
  log "creating .venv with $py"
  "$py" -m venv .venv
fi
req_hash=$(sha256sum requirements.txt | cut -c1-16)
if [ "$(cat .venv/.requirements 2>/dev/null)" != "$req_hash" ]; then
  log "installing requirements.txt into .venv"
  .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
  echo "$req_hash" > .venv/.requirements
fi
# The package imports in place (editable): the build writes warpweave/_core*.so into frontend_python/warpweave.
# The conformance suite (conformance/warpweave_conformance) and the pipelines (pipelines/warpweave_pipelines,
# public as warpweave.pipeline) are importable the same way.
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
printf '%s\n' "$root/frontend_python" "$root/conformance" "$root/pipelines" > "$site/warpweave.pth"

# --- Configure and build --------------------------------------------------------------------------------------
if [ ! -f build/build.ninja ]; then
  log "configuring build/"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$root/.venv/bin/python" >/dev/null
fi
log "building"
cmake --build build -j"$(nproc)"
