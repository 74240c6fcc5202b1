// The example_b1 plugin: its atoms lower through the PTX templates of its manifest, so the library is the
// embedded manifest plus the entry point; its Python package (python/) adds the rest.
#include <warpweave/plugin.hpp>

WARPWEAVE_DEFINE_PLUGIN("example_b1", warpweave::plugin::no_lowering_hooks, nullptr)
