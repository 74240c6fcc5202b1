"""Layer 0, the ground every other layer stands on: the DSL's errors and their user line, the state of one trace (the
IR builder), markers, launch settings and compile options. Imports nothing of the DSL."""
