// TMA descriptor encoding. The driver answers a bad argument with a bare CUDA_ERROR_INVALID_VALUE, so a
// failure reports every argument it was given.
#include "ww/runtime/tensor_map.hpp"

#include <stdexcept>
#include <string>

#include "context_guard.hpp"
#include "driver_api.hpp"

namespace ww::runtime {
namespace {

template <class T>
std::string list(std::span<const T> values) {
  std::string s = "{";
  for (std::size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "}";
}

void require(bool ok, const char* function, const std::string& what) {
  if (!ok) throw std::invalid_argument(std::string(function) + ": " + what);
}

std::string common_args(int data_type, DevicePtr address, std::span<const std::uint64_t> global_dim,
                        std::span<const std::uint64_t> global_strides, std::span<const std::uint32_t> element_strides,
                        int interleave, int swizzle, int l2_promotion, int oob_fill) {
  return "data_type " + std::to_string(data_type) + ", rank " + std::to_string(global_dim.size()) +
         ", global_address " + std::to_string(address) + " (mod 16 = " + std::to_string(address % 16) +
         "), global_dim " + list(global_dim) + ", global_strides " + list(global_strides) + ", element_strides " +
         list(element_strides) + ", interleave " + std::to_string(interleave) + ", swizzle " + std::to_string(swizzle) +
         ", l2_promotion " + std::to_string(l2_promotion) + ", oob_fill " + std::to_string(oob_fill);
}

// Element strides default to all ones; kept in a fixed array so the common call allocates nothing.
struct ElementStrides {
  std::uint32_t ones[5] = {1, 1, 1, 1, 1};
  std::span<const std::uint32_t> values;
  ElementStrides(std::span<const std::uint32_t> given, std::size_t rank)
      : values(given.empty() ? std::span<const std::uint32_t>(ones, rank) : given) {}
};

}  // namespace

TensorMap encode_tiled(int data_type, DevicePtr global_address, std::span<const std::uint64_t> global_dim,
                       std::span<const std::uint64_t> global_strides, std::span<const std::uint32_t> box_dim,
                       std::span<const std::uint32_t> element_strides, int interleave, int swizzle, int l2_promotion,
                       int oob_fill) {
  constexpr const char* kCall = "cuTensorMapEncodeTiled";
  const std::size_t rank = global_dim.size();
  require(rank >= 1 && rank <= 5, kCall, "rank (global_dim.size()) must be 1..5, got " + std::to_string(rank));
  require(global_strides.size() == rank - 1, kCall,
          "global_strides needs rank - 1 = " + std::to_string(rank - 1) + " entries, got " +
              std::to_string(global_strides.size()));
  require(box_dim.size() == rank, kCall,
          "box_dim needs rank = " + std::to_string(rank) + " entries, got " + std::to_string(box_dim.size()));
  require(element_strides.empty() || element_strides.size() == rank, kCall,
          "element_strides needs rank = " + std::to_string(rank) + " entries (or none), got " +
              std::to_string(element_strides.size()));
  const ElementStrides strides(element_strides, rank);

  detail::ensure_context(kCall);
  TensorMap map;
  // A rank-1 map has no strides, but the driver refuses a null array: hand it a valid (unread) one.
  const std::uint64_t no_strides[1] = {0};
  const std::uint64_t* strides_ptr = global_strides.empty() ? no_strides : global_strides.data();
  const detail::CUresult r = WW_CU_RESULT(cuTensorMapEncodeTiled, &map, data_type, static_cast<std::uint32_t>(rank),
                                          reinterpret_cast<void*>(static_cast<std::uintptr_t>(global_address)),
                                          global_dim.data(), strides_ptr, box_dim.data(),
                                          strides.values.data(), interleave, swizzle, l2_promotion, oob_fill);
  if (r != detail::CUDA_SUCCESS) {
    detail::throw_error(r, kCall,
                        common_args(data_type, global_address, global_dim, global_strides, strides.values, interleave,
                                    swizzle, l2_promotion, oob_fill) +
                            ", box_dim " + list(box_dim));
  }
  return map;
}

TensorMap encode_im2col(int data_type, DevicePtr global_address, std::span<const std::uint64_t> global_dim,
                        std::span<const std::uint64_t> global_strides, std::span<const int> pixel_box_lower_corner,
                        std::span<const int> pixel_box_upper_corner, std::uint32_t channels_per_pixel,
                        std::uint32_t pixels_per_column, std::span<const std::uint32_t> element_strides, int interleave,
                        int swizzle, int l2_promotion, int oob_fill) {
  constexpr const char* kCall = "cuTensorMapEncodeIm2col";
  const std::size_t rank = global_dim.size();
  require(rank >= 3 && rank <= 5, kCall, "rank (global_dim.size()) must be 3..5, got " + std::to_string(rank));
  require(global_strides.size() == rank - 1, kCall,
          "global_strides needs rank - 1 = " + std::to_string(rank - 1) + " entries, got " +
              std::to_string(global_strides.size()));
  require(pixel_box_lower_corner.size() == rank - 2 && pixel_box_upper_corner.size() == rank - 2, kCall,
          "pixel box corners need rank - 2 = " + std::to_string(rank - 2) + " entries each, got " +
              std::to_string(pixel_box_lower_corner.size()) + " and " + std::to_string(pixel_box_upper_corner.size()));
  require(element_strides.empty() || element_strides.size() == rank, kCall,
          "element_strides needs rank = " + std::to_string(rank) + " entries (or none), got " +
              std::to_string(element_strides.size()));
  const ElementStrides strides(element_strides, rank);

  detail::ensure_context(kCall);
  TensorMap map;
  const detail::CUresult r = WW_CU_RESULT(cuTensorMapEncodeIm2col, &map, data_type, static_cast<std::uint32_t>(rank),
                                          reinterpret_cast<void*>(static_cast<std::uintptr_t>(global_address)),
                                          global_dim.data(), global_strides.data(), pixel_box_lower_corner.data(),
                                          pixel_box_upper_corner.data(), channels_per_pixel, pixels_per_column,
                                          strides.values.data(), interleave, swizzle, l2_promotion, oob_fill);
  if (r != detail::CUDA_SUCCESS) {
    detail::throw_error(r, kCall,
                        common_args(data_type, global_address, global_dim, global_strides, strides.values, interleave,
                                    swizzle, l2_promotion, oob_fill) +
                            ", pixel_box_lower_corner " + list(pixel_box_lower_corner) + ", pixel_box_upper_corner " +
                            list(pixel_box_upper_corner) + ", channels_per_pixel " +
                            std::to_string(channels_per_pixel) + ", pixels_per_column " +
                            std::to_string(pixels_per_column));
  }
  return map;
}

}  // namespace ww::runtime
