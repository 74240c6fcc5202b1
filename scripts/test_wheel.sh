#!/usr/bin/env bash
# The wheel test: builds the wheel (scripts/build_wheel.sh), installs it into a fresh virtual environment outside the
# checkout, and checks the installed package there (tests/wheel/check_installed.py: imports from site-packages, the
# backends and their Python packages found relative to the package, a kernel compiled for every shipped target,
# `python -m warpweave main` and the conformance compile tier), then builds the out-of-tree example plugin
# (plugins_api/examples/b1_mma) with find_package(warpweave) from the installed package alone and loads it.
#
#   scripts/test_wheel.sh [--wheel FILE] [--keep]
#
# --wheel FILE  test that wheel instead of building one
# --keep        keep the environment and the plugin build (their folder is printed)
# A full build of the project (minutes); scripts/test.sh runs it when WW_TEST_WHEEL=1 (README, "Installing").
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
whl=""
keep=0
while (($#)); do
  case $1 in
    --wheel) whl=$(realpath "$2"); shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "test_wheel.sh: unknown argument $1 (--wheel FILE, --keep)" >&2; exit 2 ;;
  esac
done
log() { printf '\033[1m[wheel test]\033[0m %s\n' "$*"; }
if [ -z "$whl" ]; then
  whl=$("$root/scripts/build_wheel.sh" --out /tmp/ww-wheel/dist | tail -n1)
fi
[ -f "$whl" ] || { echo "test_wheel.sh: no wheel at $whl" >&2; exit 1; }

work=$(mktemp -d /tmp/ww-wheel-test.XXXXXX)
if ((keep)); then log "keeping $work"; else trap 'rm -rf "$work"' EXIT; fi
# A Python 3.12 to make the environment from: the wheel tools' base interpreter, else pyenv's or one on PATH.
py=/tmp/ww-wheel/tools-venv/bin/python
if [ ! -x "$py" ] && command -v pyenv >/dev/null 2>&1; then
  v=$(pyenv versions --bare 2>/dev/null | grep -E '^3\.12(\.[0-9]+)?$' | sort -V | tail -n1 || true)
  [ -n "$v" ] && py="$(pyenv root)/versions/$v/bin/python3.12"
fi
[ -x "$py" ] || py=$(command -v python3.12) || { echo "test_wheel.sh: Python 3.12 is required" >&2; exit 1; }
"$(realpath "$py")" -m venv "$work/venv"  # the base interpreter: the tools' packages stay out
venv=$work/venv
log "installing $(basename "$whl") into $venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check "$whl"

# Everything below runs outside the checkout, with nothing of it on any path.
cd "$work"
unset PYTHONPATH WARPWEAVE_PLUGIN_PATH
export WARPWEAVE_CACHE_DIR=$work/jit-cache
cp "$root/tests/wheel/check_installed.py" "$work/"
"$venv/bin/python" check_installed.py --checkout "$root"

# A third party's plugin, built against the installed package's SDK only (a copy of the example, so that nothing of
# the checkout is in reach of its build).
log "building the example plugin with find_package(warpweave) from the installed package"
cp -r "$root/plugins_api/examples/b1_mma" "$work/b1_src"
prefix=$("$venv/bin/python" -m warpweave sdk --prefix)
# The variables the config promises name files of the installed package.
mkdir -p "$work/sdk_probe"
cat > "$work/sdk_probe/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(sdk_probe LANGUAGES NONE)
find_package(warpweave 0.1 CONFIG REQUIRED)
foreach(f ${WARPWEAVE_MANIFEST_PROTO} ${WARPWEAVE_INCLUDE_DIR}/warpweave/plugin_abi.h
          ${WARPWEAVE_INCLUDE_DIR}/warpweave/plugin.hpp ${WARPWEAVE_PLUGIN_CMAKE_DIR}/WarpweavePlugin.cmake)
  if(NOT EXISTS "${f}" OR NOT "${f}" MATCHES "^${PREFIX}/")
    message(FATAL_ERROR "find_package(warpweave): ${f} is missing or outside the installed package ${PREFIX}")
  endif()
endforeach()
CMAKE
cmake -S "$work/sdk_probe" -B "$work/sdk_probe/build" -DCMAKE_PREFIX_PATH="$prefix" -DPREFIX="$prefix" >/dev/null
echo "ok    find_package(warpweave) from the installed package: its headers, manifest.proto and CMake helpers"
# WARPWEAVE_PLUGIN_INSTALL_DIR: `cmake --install` puts the plugin and a copy of its Python package there.
cmake -S "$work/b1_src" -B "$work/b1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
      -DWARPWEAVE_PLUGIN_INSTALL_DIR=plugins >/dev/null
nice -n 15 cmake --build "$work/b1" -j2 >/dev/null
cmake --install "$work/b1" --prefix "$work/b1-installed" >/dev/null
plugins=$work/b1-installed/plugins
WARPWEAVE_PLUGIN_PATH=$plugins "$venv/bin/python" -m warpweave plugins --json > "$work/plugins.json"
"$venv/bin/python" - "$work/plugins.json" "$plugins" <<'EOF'
import json, os, sys
listed = json.load(open(sys.argv[1]))
names = {p["name"]: p for p in listed if "name" in p}
assert not [p for p in listed if "refused" in p], f"refused plugin files: {[p for p in listed if 'refused' in p]}"
assert "example_b1" in names, f"the example plugin is not loaded (loaded: {sorted(names)})"
path = names["example_b1"]["path"]
assert os.path.dirname(path) == sys.argv[2], path
pydir = os.path.splitext(path)[0] + ".python"
assert os.path.isdir(pydir) and not os.path.islink(pydir), f"{pydir}: not an installed copy"
assert {"ampere", "hopper", "blackwell", "blackwell_geforce"} <= set(names), sorted(names)
print("ok    the example plugin, built against the installed SDK and installed with its Python package, loads "
      f"beside {sorted(set(names) - {'example_b1'})}")
EOF
# Its Python package (warpweave.utils.b1_helpers) comes from the installed copy; its atoms compile.
WARPWEAVE_PLUGIN_PATH=$plugins "$venv/bin/python" -c "
import os, sys
import warpweave.utils.b1_helpers as h
assert os.path.realpath(h.__file__).startswith(os.path.realpath(sys.argv[1]) + os.sep), h.__file__
print('ok    warpweave.utils.b1_helpers from', h.__file__)" "$plugins"
WARPWEAVE_PLUGIN_PATH=$plugins "$venv/bin/python" -m warpweave conformance --backend example_b1 --tier compile --quiet
log "passed"
