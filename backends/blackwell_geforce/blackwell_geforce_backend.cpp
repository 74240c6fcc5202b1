// The consumer Blackwell backend plugin (sm_120a, sm_121a): every instruction lowers through its manifest's PTX
// template, so the library carries the manifest and no hooks. Ampere's atoms, which apply here too, come from the
// Ampere plugin (the manifest extends it).
#include <warpweave/plugin.hpp>

WARPWEAVE_DEFINE_PLUGIN("blackwell_geforce", warpweave::plugin::no_lowering_hooks, nullptr)
