// A kernel with its block, cluster and shared memory fixed and the grid, stream and parameters given per call:
// the hot path of a compiled function's call (warpweave._core.Launcher, also driven by the native fast call).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "ww/runtime/launch.hpp"

namespace ww::py {

// The launch attributes a launch may add to cooperative and programmatic dependent launch: a preferred cluster
// (launch(cluster=, fallback_cluster=)) and the launch completion and programmatic events (0: none), whose
// handles a call reads from its arguments.
struct LaunchExtras {
  runtime::Dim3 preferred_cluster{0, 0, 0};
  std::uint64_t completion_event = 0;
  int completion_flags = 0;
  std::uint64_t programmatic_event = 0;
  int programmatic_flags = 0;
  bool trigger_at_block_start = false;
};

struct Launcher {
  runtime::PreparedLaunch prepared;  // cuLaunchKernel without a cluster, resolved once
  std::vector<std::size_t> offsets;  // where each kernel parameter starts in the packed buffer

  // Launch attributes a call gives (LaunchPlan's flags): none, or these bits.
  static constexpr int kAsPrepared = -1, kCooperative = 1, kProgrammatic = 2;

  // params holds size bytes; each offset was checked against size by the caller or is checked here. `flags`:
  // kAsPrepared, or the cooperative and programmatic dependent launch attributes of this launch (a call's
  // run-time use_pdl= / cooperative=), which go through cuLaunchKernelEx, with `extras` where not null.
  void launch(runtime::Dim3 grid, std::uintptr_t stream, char* params, std::size_t size, int flags = kAsPrepared,
              const LaunchExtras* extras = nullptr) {
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
      if (extras) {
        c.preferred_cluster = extras->preferred_cluster;
        c.launch_completion_event = extras->completion_event;
        c.launch_completion_event_flags = extras->completion_flags;
        c.programmatic_event = extras->programmatic_event;
        c.programmatic_event_flags = extras->programmatic_flags;
        c.programmatic_event_trigger_at_block_start = extras->trigger_at_block_start;
      }
      runtime::launch(prepared.function(), c, ptrs);
      return;
    }
    prepared.set_grid(grid);
    prepared.set_stream(runtime::StreamRef(stream));
    prepared(ptrs);
  }
};

}  // namespace ww::py
