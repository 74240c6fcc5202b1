#!/usr/bin/env bash
# Install what is missing, build, and run every test: the GoogleTest suites and the bounded fuzzer (CTest), then
# pytest. GPU tests skip with a reason on a machine without a GPU.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
cd "$root"
ctest --test-dir build --output-on-failure -j"$(nproc)"
.venv/bin/python -m pytest -q tests/python
