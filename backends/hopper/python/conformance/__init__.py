"""The Hopper backend's conformance probes (its manifest's python_package.conformance_probes): the execute-tier
kernels of the kinds the generic probes cannot drive (wgmma from shared-memory descriptors, TMA with tensor maps,
stmatrix). Each module has the interface of warpweave_conformance.probes (execute, and optionally
build_compile_probe and uses)."""
