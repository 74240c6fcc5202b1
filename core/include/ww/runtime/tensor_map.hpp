// TMA tensor maps (sm_90+): thin wrappers of cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col for backend
// host hooks. Enums are plain ints so that they cross the plugin C ABI and Python unchanged; the values
// below are the driver's (cuda.h, CUDA 13.0) and never change meaning.
//
// Dimensions are listed innermost (contiguous) first, as in the driver. Strides are in bytes and given
// for dimensions 1..rank-1 only (dimension 0 is contiguous). The driver's rules, in short: rank 1..5
// (im2col 3..5); global address 16-byte aligned (32 with INTERLEAVE_32B); strides multiples of 16 and
// < 2^40; box extents 1..256 with box_dim[0] * element size a multiple of 16 bytes; element strides 1..8;
// with a swizzle, box_dim[0] * element size <= the swizzle span.
#pragma once

#include <cstdint>
#include <span>

#include "ww/runtime/memory.hpp"

namespace ww::runtime {

// CUtensorMap: an opaque 128-byte descriptor, 64-byte aligned as the driver and the kernel parameter
// space require. Pass its address in the kernel's params array (a __grid_constant__ parameter).
struct alignas(64) TensorMap {
  std::uint64_t opaque[16] = {};
};
static_assert(sizeof(TensorMap) == 128 && alignof(TensorMap) == 64);

namespace tensor_map {

// CUtensorMapDataType
enum DataType : int {
  kUInt8 = 0,
  kUInt16 = 1,
  kUInt32 = 2,
  kInt32 = 3,
  kUInt64 = 4,
  kInt64 = 5,
  kFloat16 = 6,
  kFloat32 = 7,
  kFloat64 = 8,
  kBFloat16 = 9,
  kFloat32Ftz = 10,
  kTFloat32 = 11,
  kTFloat32Ftz = 12,
  k16U4Align8B = 13,   // sm_100+: 16 x 4-bit values packed in 8 bytes
  k16U4Align16B = 14,  // sm_100+: 16 x 4-bit values in 16 bytes (8-byte gaps)
  k16U6Align16B = 15,  // sm_100+: 16 x 6-bit values in 16 bytes (4-byte gaps)
};

// CUtensorMapInterleave
enum Interleave : int {
  kInterleaveNone = 0,
  kInterleave16B = 1,
  kInterleave32B = 2,  // requires kSwizzle32B
};

// CUtensorMapSwizzle: how 16-byte (or larger) chunks are permuted within a span of shared memory.
enum Swizzle : int {
  kSwizzleNone = 0,
  kSwizzle32B = 1,                // 16 B chunks within a 32 B span
  kSwizzle64B = 2,                // 16 B chunks within a 64 B span
  kSwizzle128B = 3,               // 16 B chunks within a 128 B span
  kSwizzle128BAtom32B = 4,        // sm_100+: 32 B chunks within a 128 B span
  kSwizzle128BAtom32BFlip8B = 5,  // sm_100+: as 4, and the 8 B halves of each 16 B swapped on odd rows
  kSwizzle128BAtom64B = 6,        // sm_100+: 64 B chunks within a 128 B span
};

// CUtensorMapL2promotion: granularity of the L2 fills from DRAM.
enum L2Promotion : int {
  kL2PromotionNone = 0,
  kL2Promotion64B = 1,
  kL2Promotion128B = 2,
  kL2Promotion256B = 3,
};

// CUtensorMapFloatOOBfill: what out-of-bounds elements read as.
enum OobFill : int {
  kOobFillNone = 0,               // zeros
  kOobFillNanRequestZeroFma = 1,  // a NaN that MMA treats as zero; floating-point types only
};

}  // namespace tensor_map

// cuTensorMapEncodeTiled. rank = global_dim.size(); global_strides has rank - 1 entries; box_dim rank;
// element_strides rank, or empty for all ones. Throws std::invalid_argument for mismatched lengths and
// CudaError, with every argument in detail(), when the driver refuses.
TensorMap encode_tiled(int data_type, DevicePtr global_address, std::span<const std::uint64_t> global_dim,
                       std::span<const std::uint64_t> global_strides, std::span<const std::uint32_t> box_dim,
                       std::span<const std::uint32_t> element_strides, int interleave = tensor_map::kInterleaveNone,
                       int swizzle = tensor_map::kSwizzleNone, int l2_promotion = tensor_map::kL2PromotionNone,
                       int oob_fill = tensor_map::kOobFillNone);

// cuTensorMapEncodeIm2col, for an N{D,H,}WC tensor (rank 3..5; global_dim is {C, W, H, D, N} cut to the
// rank). The pixel box corners have rank - 2 entries each, innermost first like global_dim: {W}, {W, H}
// or {W, H, D}. Lower offsets count from the top-left-front corner, upper ones from the bottom-right-back
// corner (for a convolution: lower = -padding, upper = padding - (filter - 1) * dilation); ranges
// [-32768, 32767], [-128, 127] and [-16, 15] for rank 3, 4 and 5.
TensorMap encode_im2col(int data_type, DevicePtr global_address, std::span<const std::uint64_t> global_dim,
                        std::span<const std::uint64_t> global_strides, std::span<const int> pixel_box_lower_corner,
                        std::span<const int> pixel_box_upper_corner, std::uint32_t channels_per_pixel,
                        std::uint32_t pixels_per_column, std::span<const std::uint32_t> element_strides,
                        int interleave = tensor_map::kInterleaveNone, int swizzle = tensor_map::kSwizzleNone,
                        int l2_promotion = tensor_map::kL2PromotionNone, int oob_fill = tensor_map::kOobFillNone);

}  // namespace ww::runtime
