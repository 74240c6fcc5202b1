"""Layer 3, the plugin registry and the backends' Python: loaded plugins and their manifests, targets, the element types
and launch limits the manifests declare, backends' packages mounted under CuTe DSL's module names, compile-only runs.
Imports the layers below."""
