"""Layer 6, the call path: the typed argument plan, compiled functions and their native fast path, the function
cache, module compilation, @cute.jit / @cute.kernel / cute.compile. Imports the layers below."""
