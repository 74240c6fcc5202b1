"""The `conformance` and `plugins` commands of `python -m warpweave`."""
from __future__ import annotations

import json
import sys

from . import TIERS, run
from .records import FAIL, dump_json
from .report import Progress, table


def add_conformance_parser(sub) -> None:
    p = sub.add_parser("conformance", help="the conformance suite generated from the backends' manifests")
    p.add_argument("--tier", choices=list(TIERS) + ["all"], default="all",
                   help="manifest (no GPU), compile (CPU), execute (GPU), or all (default)")
    p.add_argument("--backend", action="append", metavar="NAME",
                   help="only this loaded backend (repeatable); refused plugins are then left out")
    p.add_argument("--manifest", action="append", metavar="FILE",
                   help="test a manifest text file (protobuf text format) instead of the loaded plugins")
    p.add_argument("--json", metavar="FILE", help="write every record (backend, atom, tier, target, status, reason)")
    p.add_argument("--quiet", action="store_true", help="no table, only the summary line")
    p.add_argument("--family-sample", type=int, metavar="N",
                   help="instances of each atom family beyond its corners (default 1024: every instance of families "
                        "that have no more)")
    p.add_argument("--seed", type=int, metavar="S", help="the seed of the families' samples (default 1)")


def conformance_main(args) -> int:
    from warpweave._dsl.registry.plugins import registry

    tiers = TIERS if args.tier == "all" else (args.tier,)
    from . import sources

    if args.family_sample is not None:
        sources.FAMILY_SAMPLE = max(0, args.family_sample)
    if args.seed is not None:
        sources.FAMILY_SEED = args.seed
    if args.backend and not args.manifest:
        registry.load()
        unknown = [b for b in args.backend if b not in registry.backends]
        if unknown:
            loaded = ", ".join(sorted(registry.backends)) or "none"
            print(f"conformance: no loaded backend named {', '.join(unknown)} (loaded: {loaded})", file=sys.stderr)
            return 2
    try:
        result = run(tiers, args.backend, args.manifest, Progress())
    except OSError as e:
        print(f"conformance: {e}", file=sys.stderr)
        return 2
    if args.json:
        dump_json(result.records, args.json)
    if not args.quiet:
        table(result.records, result.device)
    counts = {s: sum(r.status == s for r in result.records) for s in ("pass", "fail", "skip")}
    line = f"\nconformance: {counts['pass']} pass, {counts['fail']} fail, {counts['skip']} skip"
    if result.compile_seconds is not None:
        line += f"; compile tier {result.compile_seconds:.1f} s wall over all backends tested"
    print(line)
    return 1 if any(r.status == FAIL for r in result.records) else 0


# --- plugins ---------------------------------------------------------------------------------------------------

def add_plugins_parser(sub) -> None:
    p = sub.add_parser("plugins", help="the loaded backend plugins, their targets, atoms and primitives, and refusals")
    p.add_argument("--json", action="store_true", help="print JSON: one object per plugin, one per refused file")
    p.add_argument("--manifest", metavar="NAME", help="print the manifest plugin NAME carries (protobuf text format)")


def plugins_report() -> list[dict]:
    from warpweave._dsl.registry.plugins import registry

    registry.load()
    out = []
    for b in registry.backends.values():
        out.append({
            "name": b.name, "version": b.version, "path": b.path,
            "description": b.manifest.get("description", ""),
            "extends": list(b.extends),
            "targets": [t.name for t in b.targets],
            "target_details": [{"name": t.name, "compute_capability": t.compute_capability,
                                "arch_specific": t.arch_specific, "also_serves": list(t.also_serves)}
                               for t in b.targets],
            "atoms": [a["id"] for a in b.atoms],
            "primitives": [p["id"] for p in b.primitives],
            "families": [f["id"] for f in b.families],
        })
    for path, reason in registry.refusals():
        out.append({"refused": path, "reason": reason})
    return out


def plugins_main(args) -> int:
    try:
        return _print_plugins(args)
    except BrokenPipeError:  # `| head`: the reader is gone, nothing is wrong
        sys.stderr.close()
        return 0


def _print_plugins(args) -> int:
    if args.manifest:
        from warpweave import _core
        from warpweave._dsl.registry.plugins import registry

        registry.load()
        try:
            sys.stdout.write(_core.plugin_manifest_text(args.manifest))
        except RuntimeError as e:
            names = ", ".join(registry.backends) or "none"
            print(f"warpweave plugins: {e} (loaded: {names})", file=sys.stderr)
            return 2
        return 0
    report = plugins_report()
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    for p in report:
        if "refused" in p:
            continue
        print(f"{p['name']} {p['version']}  {p['path']}")
        if p["extends"]:
            print(f"  extends {', '.join(p['extends'])} (loaded first)")
        for t in p["target_details"]:
            extra = " arch-specific" if t["arch_specific"] else ""
            serves = f", also serves {', '.join(str(c) for c in t['also_serves'])}" if t["also_serves"] else ""
            print(f"  target {t['name']} (compute capability {t['compute_capability']}{extra}{serves})")
        for what in ("families", "atoms", "primitives"):
            ids = p[what]
            print(f"  {len(ids)} {what}" + (":" if ids else ""))
            for i in ids:
                print(f"    {i}")
    refused = [p for p in report if "refused" in p]
    if refused:
        print(f"\nrefused ({len(refused)}):")
        for r in refused:
            reason = r["reason"].replace("\n", "\n      ")
            print(f"  {r['refused']}\n    {reason}")
    return 0
