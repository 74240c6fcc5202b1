// Encoding a TMA tensor map (CUtensorMap, 128 bytes) from a hook's attributes, through the driver function the
// core lends (ww_host_services_v1::encode_tensor_map_tiled): one implementation for every backend with TMA.
//
// Attributes: data_type (a CUtensorMapDataType or its name: u8 u16 u32 s32 u64 s64 f16 f32 f64 bf16 f32_ftz tf32
// tf32_ftz), rank (1..5), address, and per dimension i < rank: dim<i> (elements), box<i> (1..256),
// elem_stride<i> (1..8, default 1) and stride<i> for i > 0 (bytes; stride0, if given, must be the element size:
// dimension 0 is contiguous); interleave (none 16B 32B), swizzle, l2_promotion (none 64B 128B 256B), oob_fill
// (none nan). What differs between generations is a TmaLimits: the swizzle modes and packed element types a
// generation's hardware has.
#pragma once

#include <cstdint>
#include <cstdio>
#include <set>
#include <string>

#include "warpweave/plugin_attrs.hpp"

namespace warpweave::plugin {

struct TmaLimits {
  // Names of the CUtensorMapSwizzle values the hardware has, in order (index = value).
  std::initializer_list<const char*> swizzle_modes = {"none", "32B", "64B", "128B"};
  // Whether the packed sub-byte data types (CUtensorMapDataType 13..15) are accepted.
  bool packed_types = false;
};

inline void encode_tma_tiled(const ww_host_services_v1* services, const Attrs& at, void* out, size_t out_size,
                             const TmaLimits& limits) {
  static const int kElementBytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
  std::set<std::string> known = {"data_type", "rank", "address", "interleave", "swizzle", "l2_promotion", "oob_fill"};
  for (int i = 0; i < 5; ++i)
    for (const char* p : {"dim", "stride", "box", "elem_stride"}) known.insert(p + std::to_string(i));
  at.check_known(known, "encode_tma_descriptor");
  if (out_size < 128) throw HookError("needs a 128-byte output buffer, got " + std::to_string(out_size) + " (a tensor map is 128 bytes)");
  int64_t data_type = at.enumeration("data_type", {"u8", "u16", "u32", "s32", "u64", "s64", "f16", "f32", "f64", "bf16",
                                                   "f32_ftz", "tf32", "tf32_ftz"}, -1);
  int64_t max_type = limits.packed_types ? 15 : 12;
  if (data_type < 0 || data_type > max_type)
    throw HookError("needs data_type (a CUtensorMapDataType, 0.." + std::to_string(max_type) + ", or a name)");
  int64_t rank = at.required("rank");
  if (rank < 1 || rank > 5) throw HookError("rank=" + std::to_string(rank) + " must be 1..5");
  uint64_t address = static_cast<uint64_t>(at.required("address"));
  uint64_t dims[5] = {}, strides[5] = {};
  uint32_t box[5] = {}, elem_strides[5] = {};
  for (int64_t i = 0; i < rank; ++i) {
    std::string s = std::to_string(i);
    int64_t d = at.required("dim" + s);
    if (d < 1) throw HookError("dim" + s + "=" + std::to_string(d) + " must be positive");
    dims[i] = static_cast<uint64_t>(d);
    int64_t b = at.required("box" + s);
    if (b < 1 || b > 256) throw HookError("box" + s + "=" + std::to_string(b) + " must be 1..256");
    box[i] = static_cast<uint32_t>(b);
    int64_t e = at.integer("elem_stride" + s, 1);
    if (e < 1 || e > 8) throw HookError("elem_stride" + s + "=" + std::to_string(e) + " must be 1..8");
    elem_strides[i] = static_cast<uint32_t>(e);
    if (i == 0) {
      if (at.has("stride0") && data_type <= 12 && at.integer("stride0", 0) != kElementBytes[data_type])
        throw HookError("stride0=" + std::to_string(at.integer("stride0", 0)) +
                        ": dimension 0 must be contiguous (stride = element size " +
                        std::to_string(kElementBytes[data_type]) + " bytes)");
    } else {
      int64_t st = at.required("stride" + s);
      if (st <= 0) throw HookError("stride" + s + "=" + std::to_string(st) + " must be positive (bytes)");
      strides[i - 1] = static_cast<uint64_t>(st);
    }
  }
  for (int64_t i = rank; i < 5; ++i)
    for (const char* p : {"dim", "stride", "box", "elem_stride"})
      if (at.has((p + std::to_string(i)).c_str()))
        throw HookError(std::string(p) + std::to_string(i) + " is given but rank is " + std::to_string(rank));
  int64_t interleave = at.enumeration("interleave", {"none", "16B", "32B"}, 0);
  int64_t swizzle = at.enumeration("swizzle", limits.swizzle_modes, 0);
  if (swizzle < 0 || swizzle >= static_cast<int64_t>(limits.swizzle_modes.size()))
    throw HookError("swizzle=" + std::to_string(swizzle) + " is not a swizzle mode of this backend's TMA (0.." +
                    std::to_string(limits.swizzle_modes.size() - 1) + ")");
  int64_t l2 = at.enumeration("l2_promotion", {"none", "64B", "128B", "256B"}, 0);
  int64_t oob = at.enumeration("oob_fill", {"none", "nan"}, 0);
  if (!services || !services->encode_tensor_map_tiled) throw HookError("the core lent no encode_tensor_map_tiled service");
  char error[512] = {0};
  int rc = services->encode_tensor_map_tiled(services->ctx, static_cast<int>(data_type), static_cast<uint32_t>(rank),
                                             address, dims, strides, box, elem_strides, static_cast<int>(interleave),
                                             static_cast<int>(swizzle), static_cast<int>(l2), static_cast<int>(oob), out,
                                             error, sizeof(error));
  if (rc != WW_OK) throw HookError(error[0] ? error : "cuTensorMapEncodeTiled failed");
}

}  // namespace warpweave::plugin
