#!/usr/bin/env bash
# Packs CuTe DSL's installed Python packages (nvidia-cutlass-dsl and what it needs) for gpu_job.sh's vs_cutedsl step,
# which times CuTe DSL's own example kernels beside warpweave's in one process. They are about 76 MB as xz, more
# than one device call carries next to the build, so they travel as two parts (.devcarry/cd_part1, cd_part2):
# gpu_job.sh's `stash` step keeps part 1 under the GPU machine's /tmp, and the next call (within the machine's warm
# period) brings part 2 and runs `vs_cutedsl`. Nothing of CuTe DSL is committed or imported by warpweave itself.
#   scripts/pack_cutedsl_for_device.sh <venv with nvidia-cutlass-dsl>     (e.g. one made as TOOLCHAIN.md says)
set -euo pipefail
venv=${1:?usage: $0 <venv with nvidia-cutlass-dsl installed>}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
site=$(echo "$venv"/lib/python3.*/site-packages)
[ -d "$site/nvidia_cutlass_dsl" ] || { echo "no nvidia_cutlass_dsl under $site" >&2; exit 1; }
work=$(mktemp -d)
(cd "$site" && tar -cf - nvidia_cutlass_dsl cuda cuda_bindings* cuda_pathfinder* google protobuf* typing_extensions.py) |
  xz -T2 -6 > "$work/pkgs.tar.xz"
(cd "$work" && split -n 2 -d pkgs.tar.xz part)
mkdir -p "$root/.devcarry"
mv "$work/part00" "$root/.devcarry/cd_part1"
mv "$work/part01" "$root/.devcarry/cd_part2"
rm -rf "$work"
ls -la "$root/.devcarry/cd_part1" "$root/.devcarry/cd_part2"
