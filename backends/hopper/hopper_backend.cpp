// The Hopper backend plugin (sm_90a). Most instructions lower through their manifest's PTX template; this library
// adds three hooks:
//   lower("make_smem_desc"): the 64-bit wgmma shared-memory matrix descriptor, as integer IR, so that the address
//     part stays a runtime value while the offsets and the swizzle mode (static attributes) fold into constants;
//   host_call("encode_tma_descriptor"): a TMA tensor map (CUtensorMap, 128 bytes) through the driver function the
//     core lends, so that this library never loads the driver itself;
//   host_call(WW_OPTIONS_HOOK): how modules using its instructions are built (setmaxnreg needs ptxas).
// The attributes of the first two are documented in hopper.textproto (hopper.wgmma.make_smem_desc, hopper.tma.*).
#include <cstdio>
#include <string>
#include <warpweave/plugin.hpp>
#include <warpweave/plugin_attrs.hpp>
#include <warpweave/tma_encoding.hpp>

namespace {

namespace wp = warpweave::plugin;

// --- lower("make_smem_desc") ---------------------------------------------------------------------------------
// Descriptor bits (PTX ISA, wgmma "Matrix Descriptor Format"): [0,14) start address >> 4 (the address modulo
// 2^18), [16,30) leading dimension byte offset >> 4, [32,46) stride dimension byte offset >> 4, [49,52) base
// offset, [62,64) swizzle mode: 0 none, 1 128B, 2 64B, 3 32B.
void make_smem_desc(const wp::Emitter& em, const ww_value* operands, size_t num_operands, const wp::Attrs& at,
                    ww_value* results, size_t max_results, size_t* num_results) {
  at.check_known({"leading_byte_offset", "stride_byte_offset", "swizzle", "base_offset"}, "make_smem_desc");
  if (num_operands != 1) throw wp::HookError("make_smem_desc takes one operand (the 32-bit shared address)");
  if (max_results < 1) throw wp::HookError("make_smem_desc produces one result");
  std::string t = em.type_of(operands[0]);
  if (t != "i32") throw wp::HookError("the address must be an i32 shared address, got " + t);
  int64_t lbo = at.integer("leading_byte_offset", 16);
  int64_t sbo = at.required("stride_byte_offset");
  int64_t swizzle = at.integer("swizzle", 0);
  int64_t base = at.integer("base_offset", 0);
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
int lower(const char* hook, const char* /*id*/, const ww_emitter_v1* em, const ww_value* operands, size_t num_operands,
          const ww_attr* attrs, size_t num_attrs, ww_value* results, size_t max_results, size_t* num_results) {
  if (!hook || std::string(hook) != "make_smem_desc") return WW_UNKNOWN_HOOK;
  return wp::run_lowering_hook(em, [&](const wp::Emitter& e) {
    make_smem_desc(e, operands, num_operands, wp::Attrs(attrs, num_attrs), results, max_results, num_results);
  });
}

// --- host_call("encode_tma_descriptor") ----------------------------------------------------------------------
// Hopper's TMA: the four classic swizzle modes, no packed sub-byte element types.
// --- host_call(WW_OPTIONS_HOOK) ----------------------------------------------------------------------------
// nvJitLink drops setmaxnreg ("ignored to maintain compatibility across compilation units"), which silently undoes
// a warp-specialized register split: a module that uses it is assembled with ptxas.
int options(const wp::Attrs& at, char* out, size_t out_size) {
  if (at.text("stage", "") != "compile") return WW_UNKNOWN_HOOK;
  if (at.text("instruction", "").rfind("hopper.setmaxnreg.", 0) != 0) return WW_UNKNOWN_HOOK;
  std::snprintf(static_cast<char*>(out), out_size, "cubin_tool=ptxas\n");
  return WW_OK;
}

int host_call(const char* name, const ww_host_services_v1* services, const ww_attr* attrs, size_t num_attrs,
              void* out, size_t out_size, char* error, size_t error_size) {
  if (name && std::string(name) == WW_OPTIONS_HOOK) {
    int rc = WW_ERROR;
    int status = wp::run_host_hook(error, error_size, [&] {
      rc = options(wp::Attrs(attrs, num_attrs), static_cast<char*>(out), out_size);
    });
    return status == WW_OK ? rc : status;
  }
  if (!name || std::string(name) != "encode_tma_descriptor") return WW_UNKNOWN_HOOK;
  return wp::run_host_hook(error, error_size, [&] {
    wp::encode_tma_tiled(services, wp::Attrs(attrs, num_attrs), out, out_size, wp::TmaLimits{});
  });
}

}  // namespace

WARPWEAVE_DEFINE_PLUGIN("hopper", lower, host_call)
