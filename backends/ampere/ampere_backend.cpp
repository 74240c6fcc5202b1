// The Ampere backend plugin: every instruction lowers through its manifest's PTX template, so the library
// carries the manifest and no hooks.
#include <warpweave/plugin.hpp>

WARPWEAVE_DEFINE_PLUGIN("ampere", warpweave::plugin::no_lowering_hooks, nullptr)
