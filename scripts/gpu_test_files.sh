#!/usr/bin/env bash
# The test files that have GPU tests (they skip without one): what the GPU job's pytest step needs to run when the
# CPU suite has passed elsewhere. Prints them on one line.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
grep -rlE "requires_gpu|_has_gpu|device_count\(\) > 0|cuda\.is_available" tests/python tests/reliability backends/*/tests --include='test_*.py' |
  sort | tr '\n' ' '
echo tests/python/test_notebooks.py
