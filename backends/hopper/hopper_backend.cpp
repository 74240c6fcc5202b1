// The Hopper backend plugin (sm_90a). Most instructions lower through their manifest's PTX template; this library
// adds two hooks:
//   lower("make_smem_desc"): the 64-bit wgmma shared-memory matrix descriptor, as integer IR, so that the address
//     part stays a runtime value while the offsets and the swizzle mode (static attributes) fold into constants;
//   host_call("encode_tma_descriptor"): a TMA tensor map (CUtensorMap, 128 bytes) through the driver function the
//     core lends, so that this library never loads the driver itself.
// The attributes of both are documented in hopper.textproto (hopper.wgmma.make_smem_desc, hopper.tma.*).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <warpweave/plugin.hpp>

extern "C" const char ww_manifest_text[];
extern "C" const size_t ww_manifest_size;

namespace {

namespace wp = warpweave::plugin;

const ww_attr* find_attr(const ww_attr* attrs, size_t n, const std::string& name) {
  for (size_t i = 0; i < n; ++i)
    if (attrs[i].name && name == attrs[i].name) return &attrs[i];
  return nullptr;
}

bool parse_int(const char* s, int64_t& v) {
  if (!s || !*s) return false;
  char* end = nullptr;
  long long x = std::strtoll(s, &end, 0);
  if (*end != '\0') return false;
  v = x;
  return true;
}

// An integer attribute, given as an integer or as its decimal/hex spelling, since Python callers pass either.
int64_t int_attr_impl(const ww_attr* attrs, size_t n, const std::string& name, const int64_t* fallback) {
  const ww_attr* a = find_attr(attrs, n, name);
  if (!a) {
    if (fallback) return *fallback;
    throw wp::HookError("needs the attribute " + name);
  }
  if (!a->str_value) return a->int_value;
  int64_t v = 0;
  if (!parse_int(a->str_value, v))
    throw wp::HookError("attribute " + name + " must be an integer, got \"" + std::string(a->str_value) + "\"");
  return v;
}

int64_t int_attr(const ww_attr* attrs, size_t n, const std::string& name) {
  return int_attr_impl(attrs, n, name, nullptr);
}
int64_t int_attr(const ww_attr* attrs, size_t n, const std::string& name, int64_t fallback) {
  return int_attr_impl(attrs, n, name, &fallback);
}

// An attribute that is an integer or one of the names in `names` (index = value), e.g. swizzle "128B" -> 3.
int64_t enum_attr(const ww_attr* attrs, size_t n, const std::string& name, std::initializer_list<const char*> names,
                  int64_t fallback) {
  const ww_attr* a = find_attr(attrs, n, name);
  if (!a) return fallback;
  if (!a->str_value) return a->int_value;
  int64_t v = 0;
  if (parse_int(a->str_value, v)) return v;
  int64_t i = 0;
  std::string known;
  for (const char* s : names) {
    if (*s && std::string(s) == a->str_value) return i;
    if (*s) known += std::string(known.empty() ? "" : ", ") + s;
    ++i;
  }
  throw wp::HookError("attribute " + name + "=\"" + a->str_value + "\" is not one of " + known + " (or an integer)");
}

void check_known_attrs(const ww_attr* attrs, size_t n, const std::set<std::string>& known, const char* what) {
  for (size_t i = 0; i < n; ++i) {
    std::string name = attrs[i].name ? attrs[i].name : "";
    if (!known.count(name)) throw wp::HookError(std::string(what) + " has no attribute \"" + name + "\"");
  }
}

// --- lower("make_smem_desc") ---------------------------------------------------------------------------------
// Descriptor bits (PTX ISA, wgmma "Matrix Descriptor Format"): [0,14) start address >> 4 (the address modulo
// 2^18), [16,30) leading dimension byte offset >> 4, [32,46) stride dimension byte offset >> 4, [49,52) base
// offset, [62,64) swizzle mode: 0 none, 1 128B, 2 64B, 3 32B.
void make_smem_desc(const wp::Emitter& em, const ww_value* operands, size_t num_operands, const ww_attr* attrs,
                    size_t num_attrs, ww_value* results, size_t max_results, size_t* num_results) {
  check_known_attrs(attrs, num_attrs, {"leading_byte_offset", "stride_byte_offset", "swizzle", "base_offset"},
                    "make_smem_desc");
  if (num_operands != 1) throw wp::HookError("make_smem_desc takes one operand (the 32-bit shared address)");
  if (max_results < 1) throw wp::HookError("make_smem_desc produces one result");
  std::string t = em.type_of(operands[0]);
  if (t != "i32") throw wp::HookError("the address must be an i32 shared address, got " + t);
  int64_t lbo = int_attr(attrs, num_attrs, "leading_byte_offset", 16);
  int64_t sbo = int_attr(attrs, num_attrs, "stride_byte_offset");
  int64_t swizzle = int_attr(attrs, num_attrs, "swizzle", 0);
  int64_t base = int_attr(attrs, num_attrs, "base_offset", 0);
  for (auto [name, v] : {std::pair<const char*, int64_t>{"leading_byte_offset", lbo}, {"stride_byte_offset", sbo}})
    if (v < 0 || v >= (int64_t{1} << 18) || v % 16 != 0)
      throw wp::HookError(std::string(name) + "=" + std::to_string(v) +
                          " must be a multiple of 16 in [0, 2^18)");
  uint64_t mode = 0;
  switch (swizzle) {
    case 0: mode = 0; break;
    case 128: mode = 1; break;
    case 64: mode = 2; break;
    case 32: mode = 3; break;
    default:
      throw wp::HookError("swizzle=" + std::to_string(swizzle) + " must be 0, 32, 64 or 128 (bytes)");
  }
  if (base < 0 || base > 7) throw wp::HookError("base_offset=" + std::to_string(base) + " must be 0..7");

  const uint64_t lo_const = static_cast<uint64_t>(lbo >> 4) << 16;
  const uint64_t hi_const = (static_cast<uint64_t>(sbo >> 4) | static_cast<uint64_t>(base) << 17 | mode << 30) << 32;
  ww_value a = em.op("llvm.and", {operands[0], em.constant(0x3FFFF, "i32")}, "i32");
  ww_value lo = em.op("llvm.lshr", {a, em.constant(4, "i32")}, "i32");
  if (lo_const) lo = em.op("llvm.or", {lo, em.constant(static_cast<int64_t>(lo_const), "i32")}, "i32");
  ww_value d = em.op("llvm.zext", {lo}, "i64");
  if (hi_const) d = em.op("llvm.or", {d, em.constant(static_cast<int64_t>(hi_const), "i64")}, "i64");
  results[0] = d;
  *num_results = 1;
}

// The instruction id is not needed: the core names it in the message of a failure.
int lower(const char* hook, const char* /*id*/, const ww_emitter_v1* em_c, const ww_value* operands,
          size_t num_operands, const ww_attr* attrs, size_t num_attrs, ww_value* results, size_t max_results,
          size_t* num_results) {
  wp::Emitter em(em_c);
  std::string h = hook ? hook : "";
  if (h != "make_smem_desc") return WW_UNKNOWN_HOOK;
  try {
    make_smem_desc(em, operands, num_operands, attrs, num_attrs, results, max_results, num_results);
    return WW_OK;
  } catch (const std::exception& e) {
    // A failed emitter call has already recorded the core's reason; do not overwrite it with ours.
    if (dynamic_cast<const wp::HookError*>(&e) && std::string(e.what()) == "the core's emitter refused an operation")
      return WW_ERROR;
    em.fail(e.what());
    return WW_ERROR;
  }
}

// --- host_call("encode_tma_descriptor") ----------------------------------------------------------------------
// Bytes per element of the driver's CUtensorMapDataType values 0..12 (13..15 are sm_100 packed types).
const int kElementBytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};

void encode_tma_descriptor(const ww_host_services_v1* services, const ww_attr* attrs, size_t n, void* out,
                           size_t out_size, char* error, size_t error_size, int& rc) {
  std::set<std::string> known = {"data_type", "rank", "address", "interleave", "swizzle", "l2_promotion", "oob_fill"};
  for (int i = 0; i < 5; ++i)
    for (const char* p : {"dim", "stride", "box", "elem_stride"}) known.insert(p + std::to_string(i));
  check_known_attrs(attrs, n, known, "encode_tma_descriptor");
  if (out_size < 128) throw wp::HookError("needs a 128-byte output buffer, got " + std::to_string(out_size));
  int64_t data_type = enum_attr(attrs, n, "data_type",
                                {"u8", "u16", "u32", "s32", "u64", "s64", "f16", "f32", "f64", "bf16", "f32_ftz",
                                 "tf32", "tf32_ftz"},
                                -1);
  if (data_type < 0 || data_type > 15) throw wp::HookError("needs data_type (a CUtensorMapDataType, 0..15, or a name)");
  int64_t rank = int_attr(attrs, n, "rank");
  if (rank < 1 || rank > 5) throw wp::HookError("rank=" + std::to_string(rank) + " must be 1..5");
  uint64_t address = static_cast<uint64_t>(int_attr(attrs, n, "address"));
  uint64_t dims[5] = {}, strides[5] = {};
  uint32_t box[5] = {}, elem_strides[5] = {};
  for (int64_t i = 0; i < rank; ++i) {
    std::string s = std::to_string(i);
    int64_t d = int_attr(attrs, n, "dim" + s);
    if (d < 1) throw wp::HookError("dim" + s + "=" + std::to_string(d) + " must be positive");
    dims[i] = static_cast<uint64_t>(d);
    int64_t b = int_attr(attrs, n, "box" + s);
    if (b < 1 || b > 256) throw wp::HookError("box" + s + "=" + std::to_string(b) + " must be 1..256");
    box[i] = static_cast<uint32_t>(b);
    int64_t e = int_attr(attrs, n, "elem_stride" + s, 1);
    if (e < 1 || e > 8) throw wp::HookError("elem_stride" + s + "=" + std::to_string(e) + " must be 1..8");
    elem_strides[i] = static_cast<uint32_t>(e);
    if (i == 0) {
      // Dimension 0 is contiguous by definition; a stride0 that says otherwise is a layout mistake.
      if (find_attr(attrs, n, "stride0") && data_type <= 12 &&
          int_attr(attrs, n, "stride0") != kElementBytes[data_type])
        throw wp::HookError("stride0=" + std::to_string(int_attr(attrs, n, "stride0")) +
                            ": dimension 0 must be contiguous (stride = element size " +
                            std::to_string(kElementBytes[data_type]) + " bytes)");
    } else {
      int64_t st = int_attr(attrs, n, "stride" + s);
      if (st <= 0) throw wp::HookError("stride" + s + "=" + std::to_string(st) + " must be positive (bytes)");
      strides[i - 1] = static_cast<uint64_t>(st);
    }
  }
  for (int64_t i = rank; i < 5; ++i)
    for (const char* p : {"dim", "stride", "box", "elem_stride"})
      if (find_attr(attrs, n, p + std::to_string(i)))
        throw wp::HookError(std::string(p) + std::to_string(i) + " is given but rank is " + std::to_string(rank));
  int64_t interleave = enum_attr(attrs, n, "interleave", {"none", "16B", "32B"}, 0);
  int64_t swizzle = enum_attr(attrs, n, "swizzle", {"none", "32B", "64B", "128B"}, 0);
  int64_t l2 = enum_attr(attrs, n, "l2_promotion", {"none", "64B", "128B", "256B"}, 0);
  int64_t oob = enum_attr(attrs, n, "oob_fill", {"none", "nan"}, 0);
  if (!services || !services->encode_tensor_map_tiled)
    throw wp::HookError("the core lent no encode_tensor_map_tiled service");
  rc = services->encode_tensor_map_tiled(services->ctx, static_cast<int>(data_type), static_cast<uint32_t>(rank),
                                         address, dims, strides, box, elem_strides, static_cast<int>(interleave),
                                         static_cast<int>(swizzle), static_cast<int>(l2), static_cast<int>(oob), out,
                                         error, error_size);
  if (rc != WW_OK && error_size && !error[0]) std::snprintf(error, error_size, "cuTensorMapEncodeTiled failed");
}

int host_call(const char* name, const ww_host_services_v1* services, const ww_attr* attrs, size_t num_attrs,
              void* out, size_t out_size, char* error, size_t error_size) {
  std::string h = name ? name : "";
  if (h != "encode_tma_descriptor") return WW_UNKNOWN_HOOK;
  try {
    int rc = WW_ERROR;
    encode_tma_descriptor(services, attrs, num_attrs, out, out_size, error, error_size, rc);
    return rc == WW_OK ? WW_OK : WW_ERROR;
  } catch (const std::exception& e) {
    if (error_size) std::snprintf(error, error_size, "%s", e.what());
    return WW_ERROR;
  }
}

const ww_plugin_v1 plugin = {WW_PLUGIN_ABI_VERSION, "hopper", ww_manifest_text, ww_manifest_size, lower, host_call};

}  // namespace

WARPWEAVE_PLUGIN(plugin)
