#!/usr/bin/env bash
# The main job: install what is missing, build, and run warpweave's demo and examples.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
cd "$root"
exec .venv/bin/python -m warpweave main
