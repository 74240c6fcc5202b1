"""`cutlass.base_dsl.ast_preprocessor`: the preprocessor that rewrites a @cute.jit / @cute.kernel function's AST
before tracing, as `DSLPreprocessor`. Libraries extend it by wrapping its `visit_*` methods (QuACK folds a leading
`const_expr(...)` of an `if` test); such a wrapper sees and returns `ast` nodes, as it does under CuTe DSL."""
from .._dsl.tracing.ast_rewrite import DSLPreprocessor  # noqa: F401

__all__ = ["DSLPreprocessor"]
