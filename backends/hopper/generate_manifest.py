#!/usr/bin/env python3
"""Writes backends/hopper/hopper.textproto, the Hopper backend's manifest.

The wgmma atoms (every type combination x every N x both A sources, 912 of them) are four families
(manifest.proto, message Family): parameters with their legal domains, the rules tying them together, and one
templated instruction each; the core expands an atom when it is selected. Everything else is listed here too so
that the file has one author: the tables are the modules of manifest/ beside this script (one a kind of entry;
manifest/text.py orders them). The committed textproto is what the plugin embeds: edit the tables, run

    python3 backends/hopper/generate_manifest.py            # rewrites hopper.textproto next to this script
    python3 backends/hopper/generate_manifest.py --check    # exits 1 if the committed file is stale

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

load_tables("hopper_manifest", os.path.join(HERE, "manifest"))
from hopper_manifest.text import render  # noqa: E402

OUT = os.path.join(HERE, "hopper.textproto")


def main(argv) -> int:
    return write_or_check(OUT, render(), argv, "backends/hopper/generate_manifest.py")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
