#!/usr/bin/env python3
"""Writes blackwell.textproto, the manifest of the Blackwell backend (sm_100a, sm_103a, sm_110a).

The committed textproto is the source the plugin embeds. The tcgen05.mma atoms (~1500 that differ in shape and
types), tcgen05.ld/st and the TMA loads and stores are atom families (manifest.proto, message Family): parameters,
the rules on them and one templated instruction each, expanded by the core when an atom is selected. The tables
are the modules of manifest/ beside this script (one a kind of entry; manifest/text.py orders them): edit them, run

    python3 backends/blackwell/generate_manifest.py            # rewrites blackwell.textproto next to this script
    python3 backends/blackwell/generate_manifest.py --check    # exits 1 if the committed file is stale

and commit both. Plain Python 3, no dependencies, so it runs anywhere the repository is checked out.
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# The writer the backends' generators share lives in backends/, beside this backend's folder; this script runs on
# its own (no package holds it), so its parent folder is put on the path.
sys.path.insert(0, os.path.dirname(HERE))
from manifest_builder import load_tables, write_or_check  # noqa: E402

load_tables("blackwell_manifest", os.path.join(HERE, "manifest"))
# Consumer Blackwell's generator loads this script and takes the byte ldmatrix forms and cluster launch control
# from it: they are the same PTX on its targets.
from blackwell_manifest.byte_ldmatrix import byte_ldmatrix_atoms  # noqa: E402,F401
from blackwell_manifest.cluster import clc_primitives  # noqa: E402,F401
from blackwell_manifest.text import manifest_text  # noqa: E402


def main(argv) -> int:
    return write_or_check(os.path.join(HERE, "blackwell.textproto"), manifest_text(), argv,
                          "backends/blackwell/generate_manifest.py")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
