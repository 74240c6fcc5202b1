"""Layer 2, turning Python into IR: the preprocessor (AST rewrite and its cache) and the run-time side of dynamic
control flow. Imports `base` and `values`."""
