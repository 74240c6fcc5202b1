"""The tables of the Hopper manifest (hopper.textproto), one module a kind of entry; text.py puts them in the
manifest's order. generate_manifest.py, beside this folder, loads the package under a name of its own
(manifest_builder.load_tables), so its modules import one another relatively and the shared writer as the
top-level manifest_builder.
"""
