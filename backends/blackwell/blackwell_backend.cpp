// The Blackwell backend plugin. Most instructions lower through their manifest's PTX template; the library adds
// what a template cannot do:
//   lowering hooks  tcgen05_instr_desc  the 32-bit tcgen05.mma instruction descriptor, a constant from attributes
//                   umma_smem_desc      the 64-bit UMMA shared-memory matrix descriptor of a run-time address
//   host hook       encode_tma_descriptor  a TMA tensor map, through the driver function the core lends
// The bit layouts are the hardware's (PTX ISA, "Instruction descriptor" and "Shared memory descriptor" of
// tcgen05); blackwell.textproto's descriptions repeat them for users of the manifest.
#include <warpweave/plugin.hpp>
#include <warpweave/plugin_attrs.hpp>
#include <warpweave/tma_encoding.hpp>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace wp = warpweave::plugin;
using wp::HookError;

using wp::Attrs;

std::string lower_case(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// --- tcgen05.mma instruction descriptor ------------------------------------------------------------------------

struct OperandFormat {
  const char* name;
  const char* kind;  // the .kind of tcgen05.mma that takes it
  uint32_t code;     // the 3-bit A/B format field
};

// Every kind here transposes its A and B (the descriptor's MN-major bits), kind::f8f6f4 whatever its formats (PTX
// ISA, tcgen05.mma's "Transpose and Negate operations"); the 6- and 4-bit ones are read one a byte either way.
const OperandFormat kFormats[] = {
    {"f16", "f16", 0},    {"bf16", "f16", 1},   {"tf32", "tf32", 2}, {"e4m3", "f8f6f4", 0}, {"e5m2", "f8f6f4", 1},
    {"e2m3", "f8f6f4", 3}, {"e3m2", "f8f6f4", 4}, {"e2m1", "f8f6f4", 5}, {"u8", "i8", 0},     {"s8", "i8", 1},
};

const OperandFormat& operand_format(const std::string& t, const char* which) {
  for (auto& f : kFormats)
    if (t == f.name) return f;
  throw HookError(std::string(which) + " \"" + t +
                  "\" is not an input type of tcgen05.mma (f16 bf16 tf32 e4m3 e5m2 e2m3 e3m2 e2m1 s8 u8)");
}

uint32_t d_format(const std::string& t) {
  if (t == "f16") return 0;
  if (t == "f32") return 1;
  if (t == "s32") return 2;
  throw HookError("d_type \"" + t + "\" is not an accumulator type of tcgen05.mma (f16 f32 s32)");
}

uint32_t major_bit(const Attrs& at, const char* name) {
  std::string v = at.text(name, "K");
  if (v == "K" || v == "k" || v == "0") return 0;
  if (v == "MN" || v == "mn" || v == "1") return 1;
  throw HookError(std::string(name) + " must be \"K\" or \"MN\" (or 0 / 1), not \"" + v + "\"");
}

uint32_t flag(const Attrs& at, const char* name) {
  int64_t v = at.integer(name, 0);
  if (v != 0 && v != 1) throw HookError(std::string(name) + " must be 0 or 1");
  return static_cast<uint32_t>(v);
}

// What an MMA atom id (blackwell.tcgen05.mma.cta<g>.<kind>.m<M>n<N>k<K>.<ab>.<acc>[.<scale type>].<ss|ts>) says;
// the scale type is there for the block-scaled kinds only.
struct AtomShape {
  int cta_group = 0;
  std::string kind, ab, acc, sf;
  int64_t m = 0, n = 0, k = 0;
  bool a_in_tmem = false;
};

AtomShape parse_atom(const std::string& id) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= id.size(); ++i)
    if (i == id.size() || id[i] == '.') parts.push_back(id.substr(start, i - start)), start = i + 1;
  AtomShape s;
  long long m = 0, n = 0, k = 0;
  const bool scaled = parts.size() == 10;
  const std::string& src = parts.empty() ? id : parts.back();
  if ((parts.size() != 9 && !scaled) || parts[0] != "blackwell" || parts[1] != "tcgen05" || parts[2] != "mma" ||
      (parts[3] != "cta1" && parts[3] != "cta2") || std::sscanf(parts[5].c_str(), "m%lldn%lldk%lld", &m, &n, &k) != 3 ||
      (src != "ss" && src != "ts"))
    throw HookError("atom \"" + id + "\" is not a tcgen05.mma atom of this backend");
  s.cta_group = parts[3] == "cta1" ? 1 : 2;
  s.kind = parts[4];
  s.m = m, s.n = n, s.k = k;
  s.ab = parts[6];
  s.acc = parts[7];
  if (scaled) s.sf = parts[8];
  s.a_in_tmem = src == "ts";
  return s;
}

// The block-scaled kinds' descriptor (PTX ISA, tcgen05 "Instruction descriptor", the .kind::mxf8f6f4 / mxf4 /
// mxf4nvf4 form): no D format (D is f32), the scale factors' type and the byte ids of SFA and SFB instead, and M
// in units of 128 at bits 27-28 (bits 24-26 reserved); for the 4-bit kinds bit 31 is K: 0 for 64, 1 for 96 (the
// dense K = 96 of sm_103a's atoms, "K Dimension" of the .kind::mxf4 / mxf4nvf4 descriptor).
bool is_block_scaled(const std::string& kind) { return kind == "mxf4nvf4" || kind == "mxf4" || kind == "mxf8f6f4"; }

uint32_t id_attr(const Attrs& at, const char* name) {
  int64_t v = at.integer(name, 0);
  if (v < 0 || v > 3) throw HookError(std::string(name) + " must be 0..3 (a byte of a 32-bit column)");
  return static_cast<uint32_t>(v);
}

// A's and B's format codes in the block-scaled form: kind::mxf8f6f4 numbers its types as kind::f8f6f4 does (e4m3
// 0, e5m2 1, e2m3 3, e3m2 4, e2m1 5), and its A and B may differ (an atom of two formats names them <a>x<b>); the
// 4-bit kinds have E2M1 only, code 1.
std::pair<uint32_t, uint32_t> block_scaled_formats(const AtomShape& atom) {
  if (atom.kind == "mxf8f6f4") {
    const size_t x = atom.ab.find('x');
    const std::string a = atom.ab.substr(0, x), b = x == std::string::npos ? a : atom.ab.substr(x + 1);
    auto code = [&](const std::string& t) {
      for (auto& f : kFormats)
        if (t == f.name && std::string(f.kind) == "f8f6f4") return f.code;
      throw HookError("kind::mxf8f6f4 takes e4m3, e5m2, e2m3, e3m2 or e2m1 inputs, the atom has " + atom.ab);
    };
    return {code(a), code(b)};
  }
  if (atom.ab != "e2m1") throw HookError("kind::" + atom.kind + " takes e2m1 inputs, the atom has " + atom.ab);
  return {1, 1};
}

uint32_t block_scaled_instr_desc(const Attrs& at, const AtomShape& atom) {
  const auto [a_format, b_format] = block_scaled_formats(atom);
  if (atom.acc != "f32") throw HookError("kind::" + atom.kind + " accumulates in f32");
  uint32_t scale;
  if (atom.sf == "e4m3" || atom.sf == "ue4m3") scale = 0;
  else if (atom.sf == "ue8m0") scale = 1;
  else throw HookError("scale type \"" + atom.sf + "\" is not one of kind::" + atom.kind + " (e4m3 ue8m0)");
  if (atom.kind != "mxf4nvf4" && scale != 1) throw HookError("kind::" + atom.kind + " takes ue8m0 scale factors");
  int64_t m = atom.m, n = atom.n;
  if (m != 128 && m != 256) throw HookError("block-scaled m must be 128 or 256 (the pair's M with cta_group 2)");
  if (n < 8 || n > 256 || n % 8) throw HookError("n must be a multiple of 8 from 8 to 256");
  const uint32_t a_mn = major_bit(at, "a_major"), b_mn = major_bit(at, "b_major");
  // PTX ISA, "Transpose and Negate operations": kind::mxf8f6f4 transposes (its 6- and 4-bit formats too), the
  // 4-bit kinds do not.
  if ((a_mn || b_mn) && atom.kind != "mxf8f6f4")
    throw HookError("kind::" + atom.kind + " cannot transpose A or B: both are K-major (a_major, b_major K)");
  if (flag(at, "saturate")) throw HookError("saturate exists for kind::i8 only");
  uint32_t neg_a = flag(at, "negate_a"), neg_b = flag(at, "negate_b");
  uint32_t d = 0;
  d |= id_attr(at, "sfb_id") << 4;
  d |= a_format << 7;
  d |= b_format << 10;
  d |= neg_a << 13;
  d |= neg_b << 14;
  d |= a_mn << 15;
  d |= b_mn << 16;
  d |= static_cast<uint32_t>(n >> 3) << 17;
  d |= scale << 23;
  d |= static_cast<uint32_t>(m >> 7) << 27;  // bits 24-26 are reserved in this form: M in units of 128
  d |= id_attr(at, "sfa_id") << 29;
  if (atom.k == 96) {
    if (atom.kind == "mxf8f6f4") throw HookError("K = 96 is a shape of the 4-bit kinds (mxf4, mxf4nvf4) only");
    d |= uint32_t{1} << 31;
  }
  return d;
}

uint32_t instr_desc(const Attrs& at) {
  AtomShape atom;
  bool from_atom = at.has("atom");
  if (from_atom) atom = parse_atom(at.text("atom", ""));
  if (from_atom && is_block_scaled(atom.kind)) return block_scaled_instr_desc(at, atom);
  if (at.integer("sfa_id", 0) || at.integer("sfb_id", 0))
    throw HookError("sfa_id and sfb_id are fields of the block-scaled kinds' descriptor only");
  auto type_attr = [&](const char* name, const std::string& dflt) {
    if (at.has(name)) return at.text(name, "");
    if (dflt.empty()) throw HookError(std::string("needs the attribute ") + name + " (or atom)");
    return dflt;
  };
  std::string a_type = type_attr("a_type", atom.ab), b_type = type_attr("b_type", atom.ab);
  std::string d_type = type_attr("d_type", atom.acc);
  const OperandFormat& fa = operand_format(a_type, "a_type");
  const OperandFormat& fb = operand_format(b_type, "b_type");
  uint32_t df = d_format(d_type);
  std::string kind = fa.kind;
  if (kind != fb.kind)
    throw HookError("a_type " + a_type + " and b_type " + b_type + " belong to different kinds of tcgen05.mma (" +
                    fa.kind + ", " + fb.kind + ")");
  // The atom fixes the kind in its PTX; types may vary only within it (f8f6f4 and i8 take mixed A and B).
  if (from_atom && kind != atom.kind)
    throw HookError("a_type " + a_type + " is not of kind::" + atom.kind + ", the kind of the atom");
  if (kind == "f16" && a_type != b_type) throw HookError("kind::f16 needs A and B of one type (f16 or bf16)");
  bool ok_d = kind == "i8" ? d_type == "s32"
              : kind == "tf32" ? d_type == "f32"
              : kind == "f16" ? (d_type == "f32" || (d_type == "f16" && a_type == "f16"))
                              : (d_type == "f32" || d_type == "f16");
  if (!ok_d) throw HookError("kind::" + kind + " with " + a_type + " inputs cannot accumulate in " + d_type);

  int64_t m = from_atom ? atom.m : at.required("m");
  int64_t n = from_atom ? atom.n : at.required("n");
  if (from_atom && ((at.has("m") && at.integer("m", 0) != m) || (at.has("n") && at.integer("n", 0) != n)))
    throw HookError("m and n must match the atom's shape " + std::to_string(m) + "x" + std::to_string(n));
  if (m != 64 && m != 128 && m != 256) throw HookError("m must be 64, 128 or 256 (the pair's M with cta_group 2)");
  if (n < 8 || n > 256 || n % 8) throw HookError("n must be a multiple of 8 from 8 to 256");

  uint32_t a_major = major_bit(at, "a_major"), b_major = major_bit(at, "b_major");
  if (from_atom && atom.a_in_tmem && a_major) throw HookError("A in tensor memory is K-major; a_major must be K");
  // CuTe's F8F6F4 traits: an MN-major B needs N in steps of 16.
  if (kind == "f8f6f4" && b_major && n % 16) throw HookError("kind::f8f6f4 with an MN-major B needs n % 16 == 0");
  uint32_t neg_a = flag(at, "negate_a"), neg_b = flag(at, "negate_b"), sat = flag(at, "saturate");
  if (kind == "i8" && (neg_a || neg_b)) throw HookError("kind::i8 cannot negate its inputs");
  if (kind != "i8" && sat) throw HookError("saturate exists for kind::i8 only");

  uint32_t d = 0;
  d |= sat << 3;
  d |= df << 4;
  d |= fa.code << 7;
  d |= fb.code << 10;
  d |= neg_a << 13;
  d |= neg_b << 14;
  d |= a_major << 15;
  d |= b_major << 16;
  d |= static_cast<uint32_t>(n >> 3) << 17;
  d |= static_cast<uint32_t>(m >> 4) << 24;
  return d;
}

// --- UMMA shared-memory descriptor -----------------------------------------------------------------------------

uint64_t layout_code(const Attrs& at) {
  const ww_attr* a = at.find("swizzle");
  if (!a) return 0;
  if (!a->str_value) {
    switch (a->int_value) {  // the swizzle span in bytes
      case 0: return 0;
      case 32: return 6;
      case 64: return 4;
      case 128: return 2;
    }
    throw HookError("swizzle " + std::to_string(a->int_value) + ": give 0, 32, 64 or 128 (bytes) or a name");
  }
  std::string s = lower_case(a->str_value);
  if (s.rfind("swizzle_", 0) == 0) s = s.substr(8);
  if (s == "none" || s == "0") return 0;
  if (s == "128b_base32b") return 1;
  if (s == "128b" || s == "128") return 2;
  if (s == "64b" || s == "64") return 4;
  if (s == "32b" || s == "32") return 6;
  throw HookError(std::string("swizzle \"") + a->str_value + "\" is not one of NONE 128B_BASE32B 128B 64B 32B");
}

// Every field but the start address: the constant half of the descriptor. `absolute`: the leading field is an
// address the caller ORs in (LBO mode 1), so 0 here.
uint64_t smem_desc_fields(const Attrs& at, bool absolute = false) {
  auto offset = [&](const char* name, int64_t v) {
    if (v < 0 || v % 16 || v >= (int64_t{1} << 18))
      throw HookError(std::string(name) + " " + std::to_string(v) + " must be a multiple of 16 below 2^18 bytes");
    return static_cast<uint64_t>(v >> 4);
  };
  uint64_t lbo = absolute ? 0 : offset("leading_byte_offset", at.integer("leading_byte_offset", 16));
  uint64_t sbo = offset("stride_byte_offset", at.required("stride_byte_offset"));
  int64_t base = at.integer("base_offset", 0);
  if (base < 0 || base > 7) throw HookError("base_offset must be 0..7");
  uint64_t lbo_mode = absolute ? 1 : flag(at, "lbo_mode");
  return lbo << 16 | sbo << 32 | uint64_t{1} << 46 /* version 1: Blackwell */ | static_cast<uint64_t>(base) << 49 |
         lbo_mode << 52 | (absolute ? 2 : layout_code(at)) << 61;
}

// (addr >> 4) mod 2^14 as an i64: how a descriptor holds a shared-memory address.
ww_value encoded_address(const wp::Emitter& em, ww_value addr, const char* name) {
  std::string t = em.type_of(addr);
  if (t == "i64") {
    addr = em.op("arith.trunci", {addr}, "i32");
  } else if (t != "i32") {
    throw HookError(std::string(name) + " must be a 32-bit shared-memory address (i32), not " + t);
  }
  ww_value shifted = em.op("arith.shrui", {addr, em.constant(4, "i32")}, "i32");
  ww_value start = em.op("arith.andi", {shifted, em.constant(0x3FFF, "i32")}, "i32");
  return em.op("arith.extui", {start}, "i64");
}

ww_value smem_desc(const wp::Emitter& em, ww_value addr, const Attrs& at) {
  uint64_t fields = smem_desc_fields(at);
  return em.op("arith.ori", {encoded_address(em, addr, "addr"), em.constant(static_cast<int64_t>(fields), "i64")},
               "i64");
}

// sm_103a's descriptor whose leading field is the address where the rows go on (LBO mode 1, "byte address
// absolute"): the PTX ISA allows it with the 128-byte swizzle, K-major operands and base offset 0 only.
ww_value smem_desc_next(const wp::Emitter& em, ww_value addr, ww_value next, const Attrs& at) {
  if (at.has("leading_byte_offset") || at.integer("base_offset", 0) || at.has("lbo_mode"))
    throw HookError("with next_addr the leading field is next_addr's address (LBO mode 1) and the base offset 0: "
                    "give stride_byte_offset and swizzle only");
  if (at.has("swizzle") && layout_code(at) != 2) throw HookError("with next_addr the swizzle must be 128B");
  uint64_t fields = smem_desc_fields(at, true);
  ww_value lead = em.op("arith.shli", {encoded_address(em, next, "next_addr"), em.constant(16, "i64")}, "i64");
  ww_value both = em.op("arith.ori", {encoded_address(em, addr, "addr"), lead}, "i64");
  return em.op("arith.ori", {both, em.constant(static_cast<int64_t>(fields), "i64")}, "i64");
}

// --- lowering --------------------------------------------------------------------------------------------------

int lower(const char* hook, const char*, const ww_emitter_v1* emitter, const ww_value* operands, size_t num_operands,
          const ww_attr* attrs, size_t num_attrs, ww_value* results, size_t max_results, size_t* num_results) {
  std::string h = hook ? hook : "";
  if (h != "tcgen05_instr_desc" && h != "umma_smem_desc") return WW_UNKNOWN_HOOK;
  Attrs at(attrs, num_attrs);
  return wp::run_lowering_hook(emitter, [&](const wp::Emitter& em) {  // the core names plugin, hook and instruction
    if (max_results < 1) throw HookError("the hook returns one value");
    if (h == "tcgen05_instr_desc") {
      if (num_operands != 0) throw HookError("takes no operands, only attributes");
      results[0] = em.constant(static_cast<int32_t>(instr_desc(at)), "i32");
    } else {
      if (num_operands == 2) {
        results[0] = smem_desc_next(em, operands[0], operands[1], at);
      } else {
        if (num_operands != 1) throw HookError("takes addr (and, on sm_103a, next_addr)");
        results[0] = smem_desc(em, operands[0], at);
      }
    }
    *num_results = 1;
  });
}

// --- host: TMA tensor maps -------------------------------------------------------------------------------------
// Blackwell's TMA adds the 128B swizzles with 32B/64B atoms and the packed sub-byte element types (13..15).
const wp::TmaLimits kTma{{"none", "32B", "64B", "128B", "128B_atom_32B", "128B_atom_32B_flip_8B", "128B_atom_64B"},
                         true};

int host_call(const char* name, const ww_host_services_v1* services, const ww_attr* attrs, size_t num_attrs, void* out,
              size_t out_size, char* error, size_t error_size) {
  if (!name || std::strcmp(name, "encode_tma_descriptor") != 0) return WW_UNKNOWN_HOOK;
  return wp::run_host_hook(error, error_size,
                           [&] { wp::encode_tma_tiled(services, Attrs(attrs, num_attrs), out, out_size, kTma); });
}

}  // namespace

WARPWEAVE_DEFINE_PLUGIN("blackwell", lower, host_call)
