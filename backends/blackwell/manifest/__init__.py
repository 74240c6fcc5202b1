"""The tables of the Blackwell manifest (blackwell.textproto), one module a kind of entry; text.py puts them in
the manifest's order. generate_manifest.py, beside this folder, loads the package under a name of its own
(manifest_builder.load_tables), so its modules import one another relatively and the shared writer as the
top-level manifest_builder.

Entries that Hopper offers too (TMA, mbarrier, bulk groups, proxy fence) share its Python names, as in CuTe DSL;
the frontend picks the entry made for the target being compiled for.
"""
