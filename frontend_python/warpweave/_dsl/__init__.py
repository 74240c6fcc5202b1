"""The DSL's machinery: tracing, numeric types, tensors, control flow, compilation. Users import warpweave and
warpweave.cute; these modules are internal."""
