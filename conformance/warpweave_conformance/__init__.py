"""warpweave's cross-backend conformance suite, generated from the backends' manifests.

Tiers (DESIGN.md, "Conformance tiers"):
  manifest  no GPU, no compiler: the core's manifest validation per instruction, plus what emit_instruction and
            the probes rely on (register packing, layout sizes, unique ids)
  compile   CPU: each instruction in a generated probe kernel, compiled for each of its targets; ptxas accepts
            it and the SASS holds every expected opcode
  execute   GPU: each instruction the device can use, through the probe of its conformance kind, on random
            data against a CPU reference, with its thread-value layouts confirmed by one-hot inputs

    python -m warpweave conformance [--tier manifest|compile|execute|all] [--backend NAME] [--json FILE]

`run()` is the same from Python. A new atom in a manifest is tested by all three tiers with no new test code.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .records import FAIL, PASS, SKIP, TIERS, Record  # noqa: F401


@dataclass
class Result:
    records: list = field(default_factory=list)
    compile_seconds: float | None = None
    device: str = ""

    @property
    def failed(self) -> bool:
        return any(r.status == FAIL for r in self.records)


def select_sources(backends=None, manifests=None):
    """The loaded plugins (optionally only `backends`), or the given manifest files; and the refusals that
    belong in the report (all of them when no backend is singled out)."""
    from . import sources as S

    if manifests:
        return [S.file_source(p) for p in manifests], []
    srcs = S.loaded_sources(backends)
    return srcs, ([] if backends else S.refusals())


def run(tiers=TIERS, backends=None, manifests=None, progress=None) -> Result:
    from . import compile_tier, execute_tier, gpu, manifest_tier

    srcs, refused = select_sources(backends, manifests)
    n = sum(1 for s in srcs for _ in s.entries())
    res = Result()
    if "manifest" in tiers:
        if progress:
            progress.start("manifest", n)
        res.records += manifest_tier.run(srcs, refused, progress)
        if progress:
            progress.finish()
    if "compile" in tiers:
        jobs, _ = compile_tier.plan(srcs)
        if progress:
            progress.start("compile", len(jobs))
        recs, res.compile_seconds = compile_tier.run(srcs, progress)
        res.records += recs
        if progress:
            progress.finish(f"compile tier: {len(recs)} probes in {res.compile_seconds:.1f} s wall")
    if "execute" in tiers:
        cc = gpu.device_cc()
        res.device = f"sm_{cc} {gpu.device_name()}".strip() if cc else ""
        if progress:
            progress.start("execute", n)
        res.records += execute_tier.run(srcs, progress)
        if progress:
            progress.finish()
    return res
