// A kernel with its block, cluster and shared memory fixed and the grid, stream and parameters given per call:
// the hot path of a compiled function's call (warpweave._core.Launcher, also driven by the native fast call).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "ww/runtime/launch.hpp"

namespace ww::py {

struct Launcher {
  runtime::PreparedLaunch prepared;  // cuLaunchKernel without a cluster, resolved once
  std::vector<std::size_t> offsets;  // where each kernel parameter starts in the packed buffer

  // Launch attributes a call gives (LaunchPlan's flags): none, or these bits.
  static constexpr int kAsPrepared = -1, kCooperative = 1, kProgrammatic = 2;

  // params holds size bytes; each offset was checked against size by the caller or is checked here. `flags`:
  // kAsPrepared, or the cooperative and programmatic dependent launch attributes of this launch (a call's
  // run-time use_pdl= / cooperative=), which go through cuLaunchKernelEx.
  void launch(runtime::Dim3 grid, std::uintptr_t stream, char* params, std::size_t size, int flags = kAsPrepared) {
    void* ptrs[256];
    for (std::size_t i = 0; i < offsets.size(); ++i) {
      if (offsets[i] >= size) throw std::invalid_argument("launch: a parameter offset is past the buffer");
      ptrs[i] = params + offsets[i];
    }
    if (flags != kAsPrepared) {
      runtime::LaunchConfig c = prepared.config();
      c.grid = grid;
      c.stream = runtime::StreamRef(stream);
      c.cooperative = (flags & kCooperative) != 0;
      c.programmatic_serialization = (flags & kProgrammatic) != 0;
      runtime::launch(prepared.function(), c, ptrs);
      return;
    }
    prepared.set_grid(grid);
    prepared.set_stream(runtime::StreamRef(stream));
    prepared(ptrs);
  }
};

}  // namespace ww::py
