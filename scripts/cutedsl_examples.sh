#!/usr/bin/env bash
# Compiles CuTe DSL's public example programs unmodified through `python -m warpweave run --compile-only` for
# sm_80 and sm_90a (no GPU needed) and prints a pass/fail table; the Hopper GEMMs (sm_90a only) must also hold
# HGMMA, UTMALDG (multicast with clusters), SYNCS, UTMASTG, STSM (USETMAXREG when warp-specialized) and no local
# memory in their SASS.
#
#   scripts/cutedsl_examples.sh /path/to/cutlass [more options of benchmarks/python/cutedsl_examples.py]
#
# The programs need PyTorch, JAX and cuda-bindings besides warpweave: a separate environment, build/cutedsl-venv, is
# made on first use (PyTorch is large; WARPWEAVE_EXAMPLES_PYTHON names an existing interpreter instead) and given
# what requirements.txt and requirements-examples.txt (the multi-GPU programs' packages) add later.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -ge 1 ] || { echo "usage: $0 /path/to/cutlass [options]" >&2; exit 2; }
py=${WARPWEAVE_EXAMPLES_PYTHON:-}
if [ -z "$py" ]; then
  venv="$root/build/cutedsl-venv"
  if [ ! -x "$venv/bin/python" ]; then
    base=$("$root/.venv/bin/python" -c 'import sys; print(sys.base_prefix)')/bin/python3.12
    "$base" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$root/requirements.txt" \
      -r "$root/requirements-examples.txt" torch
    cat "$root/requirements.txt" "$root/requirements-examples.txt" | sha256sum | cut -c1-16 > "$venv/.requirements"
  fi
  # requirements.txt changed since the environment was made (JAX for the jax/ programs, ...): what it adds is
  # installed; torch stays as it is
  req_hash=$(cat "$root/requirements.txt" "$root/requirements-examples.txt" | sha256sum | cut -c1-16)
  if [ "$(cat "$venv/.requirements" 2>/dev/null)" != "$req_hash" ]; then
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$root/requirements.txt" \
      -r "$root/requirements-examples.txt"
    echo "$req_hash" > "$venv/.requirements"
  fi
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  printf '%s\n' "$root/frontend_python" "$root/conformance" "$root/pipelines" > "$site/warpweave.pth"
  py="$venv/bin/python"
fi
# The Hopper programs' SASS is checked: an interpreter without nvidia-cuda-nvdisasm uses the project's.
if [ -z "${WARPWEAVE_NVDISASM:-}" ]; then
  own=$("$root/.venv/bin/python" -c 'import glob, sysconfig; print(next(iter(glob.glob(sysconfig.get_paths()["purelib"] + "/nvidia/*/bin/nvdisasm")), ""))')
  [ -n "$own" ] && export WARPWEAVE_NVDISASM="$own"
fi
exec "$root/.venv/bin/python" "$root/benchmarks/python/cutedsl_examples.py" --python "$py" "$@"
