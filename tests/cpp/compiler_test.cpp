// Tests of the compiler driver (core/compiler): MLIR text as the tracer emits it -> PTX -> cubin, for the
// architectures the core ships with, and every way a compile can fail without taking the process down.
// No GPU needed. The cubin tests need libww_nvptxcompiler, ptxas or libnvJitLink (a CUDA 13 toolkit or the pip
// wheels); the SASS test
// needs nvdisasm or cuobjdump (WARPWEAVE_NVDISASM). Where a tool is missing they skip and say so.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "ww/compiler/compiler.hpp"

namespace wc = ww::compiler;

namespace {

// scf.for carrying two values, scf.if and scf.while with results, index arithmetic, math in both branches.
constexpr const char* kControlFlow = R"mlir(
module {
  llvm.func @loop_sum(%a: !llvm.ptr<1>, %out: !llvm.ptr<1>, %n: i32) attributes {nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1 : i32
    %nidx = arith.index_cast %n : i32 to index
    %sum, %cnt = scf.for %i = %c0 to %nidx step %c1 iter_args(%acc = %zero, %k = %one) -> (f32, i32) {
      %ii = arith.index_cast %i : index to i32
      %p = llvm.getelementptr %a[%ii] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
      %v = llvm.load %p : !llvm.ptr<1> -> f32
      %s = arith.addf %acc, %v : f32
      %k2 = arith.muli %k, %ii : i32
      scf.yield %s, %k2 : f32, i32
    }
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %c0_i32 = arith.constant 0 : i32
    %is0 = arith.cmpi eq, %tid, %c0_i32 : i32
    %r = scf.if %is0 -> (f32) {
      %e = math.exp %sum : f32
      scf.yield %e : f32
    } else {
      %f = arith.sitofp %cnt : i32 to f32
      %t = math.tanh %f : f32
      scf.yield %t : f32
    }
    %w:2 = scf.while (%x = %c0_i32, %y = %r) : (i32, f32) -> (i32, f32) {
      %c = arith.cmpi slt, %x, %n : i32
      scf.condition(%c) %x, %y : i32, f32
    } do {
    ^bb0(%x: i32, %y: f32):
      %x1 = arith.addi %x, %one : i32
      %y1 = arith.mulf %y, %y : f32
      scf.yield %x1, %y1 : i32, f32
    }
    %q = llvm.getelementptr %out[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    llvm.store %w#1, %q : f32, !llvm.ptr<1>
    llvm.return
  }
}
)mlir";

// 128-bit vector<8xf16> global loads and stores plus the vector ops the tracer uses on register fragments.
constexpr const char* kVector = R"mlir(
module {
  llvm.func @vec(%in: !llvm.ptr<1>, %out: !llvm.ptr<1>, %sum: !llvm.ptr<1>) attributes {nvvm.kernel} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %p = llvm.getelementptr %in[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, vector<8xf16>
    %v = llvm.load %p {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xf16>
    %two = arith.constant 2.0 : f16
    %s = vector.broadcast %two : f16 to vector<8xf16>
    %m = arith.mulf %v, %s : vector<8xf16>
    %e = vector.extract %m[3] : f16 from vector<8xf16>
    %i = vector.insert %e, %m[0] : f16 into vector<8xf16>
    %f = vector.fma %i, %i, %m : vector<8xf16>
    %sh = vector.shuffle %f, %f [7, 6, 5, 4, 3, 2, 1, 0] : vector<8xf16>, vector<8xf16>
    %r = vector.reduction <add>, %sh : vector<8xf16> into f16
    %q = llvm.getelementptr %out[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, vector<8xf16>
    llvm.store %sh, %q {alignment = 16 : i64} : vector<8xf16>, !llvm.ptr<1>
    %t = llvm.getelementptr %sum[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f16
    llvm.store %r, %t : f16, !llvm.ptr<1>
    llvm.return
  }
}
)mlir";

// Inline PTX with one output and with two outputs (returned as a struct).
constexpr const char* kInlineAsm = R"mlir(
module {
  llvm.func @asm(%out: !llvm.ptr<1>, %a: i32, %b: i32) attributes {nvvm.kernel} {
    %lane = llvm.inline_asm has_side_effects "mov.u32 $0, %laneid;", "=r" : () -> i32
    %pair = llvm.inline_asm "add.s32 $0, $2, $3;\n\tsub.s32 $1, $2, $3;", "=r,=r,r,r" %a, %b : (i32, i32) -> !llvm.struct<(i32, i32)>
    %x = llvm.extractvalue %pair[0] : !llvm.struct<(i32, i32)>
    %y = llvm.extractvalue %pair[1] : !llvm.struct<(i32, i32)>
    %xy = llvm.mul %x, %y : i32
    %r = llvm.add %xy, %lane : i32
    %p = llvm.getelementptr %out[%lane] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    llvm.store %r, %p : i32, !llvm.ptr<1>
    llvm.return
  }
}
)mlir";

// A static shared-memory tile, dynamic shared memory, a barrier, and an NVVM op that MLIR lowers to inline PTX
// with a shared pointer (it needs 32-bit shared pointers).
constexpr const char* kSharedMemory = R"mlir(
module {
  llvm.mlir.global internal @tile() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<256 x f32>
  llvm.mlir.global external @dyn_smem() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  llvm.func @smem(%in: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {nvvm.kernel, nvvm.reqntid = array<i32: 256, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %base = llvm.mlir.addressof @tile : !llvm.ptr<3>
    %src = llvm.getelementptr %in[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    %v = llvm.load %src : !llvm.ptr<1> -> f32
    %slot = llvm.getelementptr %base[0, %tid] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, !llvm.array<256 x f32>
    llvm.store %v, %slot : f32, !llvm.ptr<3>
    %dyn = llvm.mlir.addressof @dyn_smem : !llvm.ptr<3>
    %dslot = llvm.getelementptr %dyn[%tid] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
    llvm.store %v, %dslot : f32, !llvm.ptr<3>
    nvvm.barrier0
    %c255 = llvm.mlir.constant(255 : i32) : i32
    %other = llvm.sub %c255, %tid : i32
    %oslot = llvm.getelementptr %base[0, %other] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, !llvm.array<256 x f32>
    %w = llvm.load %oslot : !llvm.ptr<3> -> f32
    %dother = llvm.getelementptr %dyn[%other] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
    %dw = llvm.load %dother : !llvm.ptr<3> -> f32
    %sum = llvm.fadd %w, %dw : f32
    %dst = llvm.getelementptr %out[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    llvm.store %sum, %dst : f32, !llvm.ptr<1>
    llvm.return
  }
}
)mlir";

// Kernel attributes, and a TMA-descriptor-like parameter passed by value as a grid constant.
constexpr const char* kAttributes = R"mlir(
module {
  llvm.func @tma_like(%desc: !llvm.ptr {llvm.byval = !llvm.array<128 x i8>, llvm.align = 64 : i64, nvvm.grid_constant}, %out: !llvm.ptr<1>) attributes {nvvm.kernel, nvvm.reqntid = array<i32: 128, 1, 1>, nvvm.minctasm = 2 : i32, nvvm.cluster_dim = array<i32: 2, 1, 1>} {
    %v = llvm.load %desc {alignment = 8 : i64} : !llvm.ptr -> i64
    %p = llvm.ptrtoint %desc : !llvm.ptr to i64
    %s = llvm.add %v, %p : i64
    llvm.store %s, %out : i64, !llvm.ptr<1>
    llvm.return
  }
  llvm.func @bounded(%out: !llvm.ptr<1>) attributes {nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>, nvvm.maxnreg = 64 : i32} {
    %c = llvm.mlir.constant(7 : i32) : i32
    llvm.store %c, %out : i32, !llvm.ptr<1>
    llvm.return
  }
}
)mlir";

// cf branches with index-typed block arguments, ub.poison, arith.select.
constexpr const char* kUnstructured = R"mlir(
module {
  llvm.func @branches(%out: !llvm.ptr<1>, %n: i32) attributes {nvvm.kernel} {
    %c0 = arith.constant 0 : i32
    %u = ub.poison : i32
    %c = arith.cmpi sgt, %n, %c0 : i32
    %ni = arith.index_cast %n : i32 to index
    %zi = arith.constant 0 : index
    cf.cond_br %c, ^bb1(%ni : index), ^bb2(%zi : index)
  ^bb1(%x: index):
    %x2 = arith.addi %x, %x : index
    cf.br ^bb2(%x2 : index)
  ^bb2(%y: index):
    %yi = arith.index_cast %y : index to i32
    %z = arith.select %c, %yi, %u : i32
    llvm.store %z, %out : i32, !llvm.ptr<1>
    llvm.return
  }
}
)mlir";

// Every math function the tracer may emit, on f32 and f16.
std::string math_kernel(const std::string& type) {
  const char* unary[] = {"exp", "exp2", "log", "log2", "log1p", "expm1", "tanh", "sin", "cos", "tan", "sqrt", "rsqrt",
                         "erf", "atan", "asin", "acos", "sinh", "cosh", "cbrt", "absf", "floor", "ceil", "round",
                         "trunc", "roundeven"};
  std::string body;
  int slot = 0;
  auto store = [&](const std::string& value) {
    body += "    %p" + std::to_string(slot) + " = llvm.getelementptr %out[" + std::to_string(slot) +
            "] : (!llvm.ptr<1>) -> !llvm.ptr<1>, " + type + "\n";
    body += "    llvm.store " + value + ", %p" + std::to_string(slot) + " : " + type + ", !llvm.ptr<1>\n";
    ++slot;
  };
  for (const char* op : unary) {
    std::string name = std::string("%") + op;
    body += "    " + name + " = math." + op + " %x : " + type + "\n";
    store(name);
  }
  body += "    %pw = math.powf %x, %y : " + type + "\n";
  store("%pw");
  body += "    %a2 = math.atan2 %x, %y : " + type + "\n";
  store("%a2");
  body += "    %fm = math.fma %x, %y, %x : " + type + "\n";
  store("%fm");
  body += "    %cs = math.copysign %x, %y : " + type + "\n";
  store("%cs");
  return "module {\n  llvm.func @math(%out: !llvm.ptr<1>, %x: " + type + ", %y: " + type +
         ") attributes {nvvm.kernel} {\n" + body + "    llvm.return\n  }\n}\n";
}

wc::CompileResult compile_ok(const std::string& mlir, const std::string& arch, wc::CompileOptions options = {}) {
  try {
    return wc::compile(mlir, wc::default_target(arch), options);
  } catch (const wc::CompileError& e) {
    ADD_FAILURE() << "compile for " << arch << " failed: " << e.what();
    return {};
  }
}

std::string ptx_ok(const std::string& mlir, const std::string& arch, wc::CompileOptions options = {},
                   wc::CompileResult* extra = nullptr) {
  try {
    return wc::mlir_to_ptx(mlir, wc::default_target(arch), options, extra);
  } catch (const wc::CompileError& e) {
    ADD_FAILURE() << "mlir_to_ptx for " << arch << " failed: " << e.what();
    return {};
  }
}

// Runs `fn`, expecting a CompileError of `stage`; returns it for further checks.
template <typename Fn>
wc::CompileError expect_error(wc::Stage stage, Fn&& fn) {
  try {
    fn();
  } catch (const wc::CompileError& e) {
    EXPECT_EQ(e.stage(), stage) << "got stage " << wc::stage_name(e.stage()) << ": " << e.what();
    EXPECT_FALSE(e.diagnostics().empty());
    return e;
  }
  ADD_FAILURE() << "expected a CompileError at stage " << wc::stage_name(stage);
  return wc::CompileError(stage, {});
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

int count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (auto at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + needle.size())) ++n;
  return n;
}

bool is_elf(const std::vector<uint8_t>& bytes) {
  return bytes.size() > 4 && bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F';
}

bool any_cubin_tool() {
  // A trivial PTX either tool accepts; a CompileError means neither is there.
  try {
    wc::compile("module {}", wc::default_target("sm_80"), {});
    return true;
  } catch (const wc::CompileError&) {
    return false;
  }
}

// A valid module that LLVM accepts but ptxas rejects: an unknown instruction in inline PTX.
constexpr const char* kBadPtx = R"mlir(
module {
  llvm.func @k(%p: !llvm.ptr<1>) attributes {nvvm.kernel} {
    %0 = llvm.inline_asm has_side_effects "bogus.instr $0;", "=r" : () -> i32
    llvm.store %0, %p : i32, !llvm.ptr<1>
    llvm.return
  }
}
)mlir";

}  // namespace

// --- targets -----------------------------------------------------------------------------------------------------

TEST(Target, DefaultsForTheShippedArchitectures) {
  for (const char* name : {"sm_80", "sm_89", "sm_90a", "sm_100a"}) {
    wc::Target t = wc::default_target(name);
    EXPECT_EQ(t.name, name);
    EXPECT_EQ(t.llvm_cpu, name);
    EXPECT_EQ(t.jit_arch, name);
    EXPECT_EQ(t.triple, "nvptx64-nvidia-cuda");
    EXPECT_EQ(t.ptx_features, "+ptx86");
  }
}

TEST(Target, UnknownNamesAreRejected) {
  for (const char* name : {"", "gfx90a", "sm_", "sm_9x", "sm_90b", "compute_90"})
    expect_error(wc::Stage::target, [&] { wc::default_target(name); });
}

TEST(Target, UnknownCpuOrFeatureIsACompileError) {
  wc::Target t = wc::default_target("sm_999");  // well-formed name, no such GPU
  auto e = expect_error(wc::Stage::target, [&] { wc::mlir_to_ptx("module {}", t); });
  EXPECT_TRUE(contains(e.what(), "sm_999"));
  wc::Target f = wc::default_target("sm_90a");
  f.ptx_features = "+ptx999";
  e = expect_error(wc::Stage::target, [&] { wc::mlir_to_ptx("module {}", f); });
  EXPECT_TRUE(contains(e.what(), "+ptx999"));
  wc::Target empty;
  expect_error(wc::Stage::target, [&] { wc::mlir_to_ptx("module {}", empty); });
  expect_error(wc::Stage::target, [&] { wc::ptx_to_cubin("", empty); });
}

// --- what the tracer emits, per architecture -----------------------------------------------------------------------

class PerArch : public testing::TestWithParam<std::string> {};

TEST_P(PerArch, ScfLoopsAndIfsWithResults) {
  std::string ptx = ptx_ok(kControlFlow, GetParam());
  EXPECT_TRUE(contains(ptx, ".entry loop_sum"));
  EXPECT_TRUE(contains(ptx, ".maxntid 128, 1, 1"));
  EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(@%p\d+ bra)"))) << "expected a conditional branch (loop)";
  // math.exp / math.tanh become inline approximations: NVPTX has no libm to call.
  EXPECT_FALSE(contains(ptx, "call")) << ptx;
}

TEST_P(PerArch, VectorOfEightHalvesIsOne128BitAccess) {
  std::string ptx = ptx_ok(kVector, GetParam());
  EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(ld\.global(\.nc)?\.v4\.(b32|u32))"))) << ptx;
  EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(st\.global\.v4\.(b32|u32))"))) << ptx;
}

TEST_P(PerArch, InlineAsmWithOutputs) {
  std::string ptx = ptx_ok(kInlineAsm, GetParam());
  EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(mov\.u32 %r\d+, %laneid;)"))) << ptx;
  EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(sub\.s32 %r\d+, %r\d+, %r\d+;)"))) << ptx;
}

TEST_P(PerArch, SharedMemoryGlobals) {
  std::string ptx = ptx_ok(kSharedMemory, GetParam());
  EXPECT_TRUE(contains(ptx, ".shared .align 16 .b8 tile[1024]")) << ptx;
  EXPECT_TRUE(contains(ptx, ".extern .shared .align 16 .b8 dyn_smem[]")) << ptx;
  EXPECT_TRUE(contains(ptx, "st.shared")) << ptx;
  EXPECT_TRUE(contains(ptx, "ld.shared")) << ptx;
  EXPECT_TRUE(contains(ptx, "bar.sync")) << ptx;
  EXPECT_TRUE(contains(ptx, ".reqntid 256, 1, 1")) << ptx;
}

TEST_P(PerArch, UnstructuredControlFlowAndPoison) {
  std::string ptx = ptx_ok(kUnstructured, GetParam());
  EXPECT_TRUE(contains(ptx, ".entry branches"));
}

TEST_P(PerArch, MathFunctionsOnF32AndF16) {
  for (const char* type : {"f32", "f16", "bf16"}) {
    std::string ptx = ptx_ok(math_kernel(type), GetParam());
    EXPECT_TRUE(contains(ptx, ".entry math")) << type;
  }
}

TEST_P(PerArch, FastMathExpUsesTheHardwareExp2) {
  const char* text = R"mlir(
module {
  llvm.func @k(%p: !llvm.ptr<1>, %x: f32, %h: vector<2xf16>) attributes {nvvm.kernel} {
    %0 = math.exp %x fastmath<afn> : f32
    llvm.store %0, %p : f32, !llvm.ptr<1>
    %1 = math.exp %h fastmath<fast> : vector<2xf16>
    %q = llvm.getelementptr %p[1] : (!llvm.ptr<1>) -> !llvm.ptr<1>, f32
    llvm.store %1, %q : vector<2xf16>, !llvm.ptr<1>
    llvm.return
  }
}
)mlir";
  std::string ptx = ptx_ok(text, GetParam());
  EXPECT_TRUE(contains(ptx, "ex2.approx.f32") || contains(ptx, "ex2.approx.ftz.f32")) << ptx;
  EXPECT_TRUE(contains(ptx, "ex2.approx.f16")) << ptx;
  EXPECT_FALSE(contains(ptx, "fma.rn.f32")) << "no polynomial expected:\n" << ptx;
}

TEST_P(PerArch, CubinFromEachKernel) {
  if (!any_cubin_tool()) GTEST_SKIP() << "neither libnvJitLink.so.13 nor ptxas found";
  for (const char* kernel : {kControlFlow, kVector, kInlineAsm, kSharedMemory, kUnstructured}) {
    wc::CompileResult r = compile_ok(kernel, GetParam());
    EXPECT_TRUE(is_elf(r.cubin));
    EXPECT_FALSE(r.cubin_tool.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Compiler, PerArch, testing::Values("sm_80", "sm_90a", "sm_100a"),
                         [](const auto& info) { return info.param; });

TEST(Compiler, KernelAttributesAndGridConstants) {
  for (const char* arch : {"sm_90a", "sm_100a"}) {
    std::string ptx = ptx_ok(kAttributes, arch);
    EXPECT_TRUE(contains(ptx, ".reqntid 128, 1, 1")) << ptx;
    EXPECT_TRUE(contains(ptx, ".minnctapersm 2")) << ptx;
    EXPECT_TRUE(contains(ptx, ".reqnctapercluster 2, 1, 1")) << ptx;
    EXPECT_TRUE(contains(ptx, ".maxntid 256, 1, 1")) << ptx;
    EXPECT_TRUE(contains(ptx, ".maxnreg 64")) << ptx;
    EXPECT_TRUE(contains(ptx, ".param .align 64 .b8 tma_like_param_0[128]")) << ptx;
    // Taking the grid constant's address must not copy it to local memory.
    EXPECT_TRUE(contains(ptx, "cvta.param")) << ptx;
    EXPECT_FALSE(contains(ptx, ".local")) << ptx;
  }
}

// Thread 0 initialises, then the whole block meets at a cluster barrier, then thread 0 goes on alone. Without
// convergent calls LLVM duplicates the barrier's inline asm into both arms of the first branch: thread 0 and the
// rest of its warp would then execute different copies of an `.aligned` instruction (a hang on the GPU).
const char* const kBarrierBetweenBranches = R"(module {
  llvm.func @k(%out: !llvm.ptr<1>) attributes {nvvm.kernel} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %is0 = llvm.icmp "eq" %tid, %c0 : i32
    llvm.cond_br %is0, ^init, ^join
  ^init:
    llvm.inline_asm has_side_effects "mbarrier.init.shared::cta.b64 [$0], 1;", "r" %c0 : (i32) -> ()
    llvm.br ^join
  ^join:
    llvm.inline_asm has_side_effects "barrier.cluster.arrive.aligned;", "" : () -> ()
    llvm.inline_asm has_side_effects "barrier.cluster.wait.aligned;", "" : () -> ()
    llvm.cond_br %is0, ^issue, ^done
  ^issue:
    llvm.store %tid, %out : i32, !llvm.ptr<1>
    llvm.br ^done
  ^done:
    llvm.return
  }
}
)";

TEST(Compiler, InlineAsmIsNeverDuplicatedIntoDivergentBranches) {
  for (int opt : {1, 2, 3}) {
    wc::CompileOptions options;
    options.opt_level = opt;
    std::string ptx = ptx_ok(kBarrierBetweenBranches, "sm_90a", options);
    EXPECT_EQ(count(ptx, "barrier.cluster.arrive.aligned"), 1) << "-O" << opt << "\n" << ptx;
    EXPECT_EQ(count(ptx, "barrier.cluster.wait.aligned"), 1) << "-O" << opt << "\n" << ptx;
  }
}

TEST(Compiler, EmptyModuleGivesAnEmptyPtxModule) {
  std::string ptx = ptx_ok("module {}", "sm_90a");
  EXPECT_TRUE(contains(ptx, ".target sm_90a"));
  EXPECT_TRUE(contains(ptx, ".version 8.6"));
}

// --- options -------------------------------------------------------------------------------------------------------

TEST(Options, IntermediateOutputsOnRequest) {
  wc::CompileOptions options;
  wc::CompileResult r;
  ptx_ok(kControlFlow, "sm_90a", options, &r);
  EXPECT_TRUE(r.mlir.empty());
  EXPECT_TRUE(r.llvm_ir.empty());
  options.want_llvm_ir = true;
  options.want_optimized_mlir = true;
  ptx_ok(kControlFlow, "sm_90a", options, &r);
  EXPECT_TRUE(contains(r.mlir, "llvm.func @loop_sum"));
  EXPECT_FALSE(contains(r.mlir, "scf.")) << "SCF should be lowered";
  EXPECT_TRUE(contains(r.llvm_ir, "define ptx_kernel void @loop_sum"));
  EXPECT_TRUE(contains(r.llvm_ir, "target triple = \"nvptx64-nvidia-cuda\""));
  EXPECT_FALSE(r.ptx.empty());
  EXPECT_GT(r.timings.parse_ms, 0);
  EXPECT_GT(r.timings.codegen_ms, 0);
}

TEST(Options, OptimisationLevels) {
  for (int level : {0, 1, 2, 3}) {
    wc::CompileOptions options;
    options.opt_level = level;
    EXPECT_TRUE(contains(ptx_ok(kControlFlow, "sm_80", options), ".entry loop_sum")) << "O" << level;
  }
}

TEST(Options, LineInfoFromMlirLocations) {
  wc::CompileOptions options;
  options.line_info = true;
  options.source_name = "kernel.py";
  std::string ptx = ptx_ok(kVector, "sm_90a", options);
  EXPECT_TRUE(contains(ptx, ".file")) << ptx;
  EXPECT_TRUE(contains(ptx, "kernel.py")) << ptx;
  EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(\.loc\s+\d+ \d+ \d+)"))) << ptx;
  if (!any_cubin_tool()) GTEST_SKIP() << "no cubin tool";
  EXPECT_TRUE(is_elf(compile_ok(kVector, "sm_90a", options).cubin));
}

// --- cubin tools ---------------------------------------------------------------------------------------------------

class CubinTool : public testing::TestWithParam<std::string> {};

TEST_P(CubinTool, ProducesACubinAndAResourceReport) {
  wc::CompileOptions options;
  options.cubin_tool = GetParam();
  options.verbose_ptxas = true;
  std::string ptx = ptx_ok(kControlFlow, "sm_90a");
  std::vector<uint8_t> cubin;
  std::string log, tool;
  try {
    cubin = wc::ptx_to_cubin(ptx, wc::default_target("sm_90a"), options, &log, &tool);
  } catch (const wc::CompileError& e) {
    if (contains(e.what(), "cannot load") || contains(e.what(), "no ptxas found"))
      GTEST_SKIP() << GetParam() << " not available: " << e.what();
    FAIL() << e.what();
  }
  EXPECT_TRUE(is_elf(cubin));
  const std::map<std::string, std::string> names = {
      {"nvptxcompiler", "nvPTXCompiler"}, {"ptxas", "ptxas"}, {"nvjitlink", "nvJitLink"}};
  EXPECT_EQ(tool, names.at(GetParam()));
  EXPECT_TRUE(std::regex_search(log, std::regex(R"(Used \d+ registers)"))) << log;
  EXPECT_TRUE(contains(log, "spill")) << log;
}

TEST_P(CubinTool, RejectedPtxIsACompileErrorWithTheToolsLog) {
  wc::CompileOptions options;
  options.cubin_tool = GetParam();
  std::string ptx = ptx_ok(kBadPtx, "sm_90a");
  try {
    wc::ptx_to_cubin(ptx, wc::default_target("sm_90a"), options);
    FAIL() << "expected ptxas to reject the PTX";
  } catch (const wc::CompileError& e) {
    if (contains(e.what(), "cannot load") || contains(e.what(), "no ptxas found"))
      GTEST_SKIP() << GetParam() << " not available";
    EXPECT_EQ(e.stage(), wc::Stage::ptxas);
    EXPECT_TRUE(contains(e.log(), "bogus")) << e.log();
    // The PTX line of the error is kept, so that a caller can show the offending line.
    bool located = false;
    for (const auto& d : e.diagnostics()) located |= d.file == "<ptx>" && d.line > 0;
    EXPECT_TRUE(located) << e.what();
  }
}

TEST_P(CubinTool, UnknownArchIsRejected) {
  wc::CompileOptions options;
  options.cubin_tool = GetParam();
  wc::Target t = wc::default_target("sm_90a");
  std::string ptx = ptx_ok(kVector, "sm_90a");
  t.jit_arch = "sm_999";
  try {
    wc::ptx_to_cubin(ptx, t, options);
    FAIL() << "expected an error for -arch=sm_999";
  } catch (const wc::CompileError& e) {
    if (contains(e.what(), "cannot load") || contains(e.what(), "no ptxas found")) GTEST_SKIP();
    EXPECT_EQ(e.stage(), wc::Stage::ptxas);
  }
}

// Warps 0-3 give registers back, warps 4-7 take them: a warp-specialized kernel's register split. nvJitLink drops
// the instruction, so the module asks for ptxas (as the IR builder does for a manifest entry with cubin_tool):
// a whole-program assembler, the ptxas program or the same as a library.
constexpr const char* kRegisterSplit = R"mlir(
module attributes {ww.cubin_tool = "ptxas"} {
  llvm.func @split(%out: !llvm.ptr<1>) attributes {nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>,
                                                   nvvm.minctasm = 1 : i32} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %c128 = llvm.mlir.constant(128 : i32) : i32
    %producer = llvm.icmp "ult" %tid, %c128 : i32
    llvm.cond_br %producer, ^give, ^take
  ^give:
    llvm.inline_asm has_side_effects "setmaxnreg.dec.sync.aligned.u32 40;", "" : () -> ()
    llvm.store %tid, %out : i32, !llvm.ptr<1>
    llvm.br ^done
  ^take:
    llvm.inline_asm has_side_effects "setmaxnreg.inc.sync.aligned.u32 232;", "" : () -> ()
    llvm.store %c128, %out : i32, !llvm.ptr<1>
    llvm.br ^done
  ^done:
    llvm.return
  }
}
)mlir";

TEST(CubinTool, AModuleThatAsksForPtxasGetsIt) {
  wc::CompileOptions ptxas_only;
  ptxas_only.cubin_tool = "ptxas";
  wc::CompileResult r;
  std::string ptx = ptx_ok(kRegisterSplit, "sm_90a", {}, &r);
  EXPECT_EQ(r.requested_cubin_tool, "ptxas");
  try {
    wc::ptx_to_cubin(ptx, wc::default_target("sm_90a"), ptxas_only);
  } catch (const wc::CompileError& e) {
    GTEST_SKIP() << "no ptxas here: " << e.what();
  }
  r = compile_ok(kRegisterSplit, "sm_90a");
  EXPECT_TRUE(r.cubin_tool == "ptxas" || r.cubin_tool == "nvPTXCompiler") << r.cubin_tool << "\n" << r.jit_log;
  if (wc::sass_tool_available()) {
    std::string sass = wc::disassemble_sass(r.cubin);
    EXPECT_TRUE(contains(sass, "USETMAXREG.DEALLOC")) << sass;
    EXPECT_TRUE(contains(sass, "USETMAXREG.TRY_ALLOC")) << sass;
  }
}

TEST(CubinTool, ForcedNvJitLinkOnCodeThatAsksForPtxasSaysSo) {
  wc::CompileOptions options;
  options.cubin_tool = "nvjitlink";
  options.prefer_ptxas = true;
  std::string log, tool;
  try {
    wc::ptx_to_cubin(ptx_ok(kRegisterSplit, "sm_90a"), wc::default_target("sm_90a"), options, &log, &tool);
  } catch (const wc::CompileError& e) {
    GTEST_SKIP() << "no nvJitLink here: " << e.what();
  }
  EXPECT_EQ(tool, "nvJitLink");
  EXPECT_TRUE(contains(log, "warning: nvJitLink assembled code that asks for ptxas")) << log;
}

TEST(CubinTool, AModuleCanAskOnlyForPtxas) {
  std::string text = kRegisterSplit;
  text.replace(text.find("\"ptxas\""), 7, "\"nvcc\"");
  wc::CompileError e = expect_error(wc::Stage::parse, [&] { wc::mlir_to_ptx(text, wc::default_target("sm_90a")); });
  EXPECT_TRUE(contains(e.what(), "ww.cubin_tool must be \"ptxas\"")) << e.what();
}

INSTANTIATE_TEST_SUITE_P(Compiler, CubinTool, testing::Values("nvptxcompiler", "ptxas", "nvjitlink"),
                         [](const auto& info) { return info.param; });

// A kernel that calls a function kept out of line. Assembled as relocatable code (nvJitLink's way, ptxas -c) the
// call follows the ABI and the kernel takes 24 registers; assembled as a whole program, 10.
constexpr const char* kOutOfLineCall = R"mlir(
module {
  llvm.func internal @helper(%a: f32, %b: f32) -> f32 attributes {no_inline} {
    %m = llvm.fmul %a, %b : f32
    %s = llvm.fadd %m, %a : f32
    llvm.return %s : f32
  }
  llvm.func @calls(%a: !llvm.ptr<1>, %b: !llvm.ptr<1>) attributes {nvvm.kernel} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %pa = llvm.getelementptr %a[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    %pb = llvm.getelementptr %b[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    %x = llvm.load %pa : !llvm.ptr<1> -> f32
    %y = llvm.load %pb : !llvm.ptr<1> -> f32
    %r = llvm.call @helper(%x, %y) : (f32, f32) -> f32
    llvm.store %r, %pa : f32, !llvm.ptr<1>
    llvm.return
  }
}
)mlir";

// Per function of a cubin: (registers, stack frame bytes), from its .nv.info section's attributes, as the driver
// reads them. Records are (format, attribute, ...): format 4 carries a 16-bit size and that many bytes.
std::map<std::string, std::pair<int, int>> cubin_resources(const std::vector<uint8_t>& elf) {
  auto u16 = [&](size_t at) { uint16_t v; std::memcpy(&v, elf.data() + at, 2); return size_t(v); };
  auto u32 = [&](size_t at) { uint32_t v; std::memcpy(&v, elf.data() + at, 4); return size_t(v); };
  auto u64 = [&](size_t at) { uint64_t v; std::memcpy(&v, elf.data() + at, 8); return size_t(v); };
  size_t shoff = u64(0x28), shentsize = u16(0x3a), shnum = u16(0x3c), shstrndx = u16(0x3e);
  auto section = [&](size_t i) { return shoff + i * shentsize; };
  auto name_at = [&](size_t strtab, size_t off) {
    return std::string(reinterpret_cast<const char*>(elf.data() + strtab + off));
  };
  size_t shstr = u64(section(shstrndx) + 0x18);
  size_t symtab = 0, strtab = 0, symsize = 0;
  for (size_t i = 0; i < shnum; ++i) {
    if (u32(section(i) + 4) == 2) {  // SHT_SYMTAB; its sh_link names the string table
      symtab = u64(section(i) + 0x18);
      symsize = u64(section(i) + 0x20);
      strtab = u64(section(u32(section(i) + 0x28)) + 0x18);
    }
  }
  std::map<std::string, std::pair<int, int>> out;
  for (size_t i = 0; i < shnum; ++i) {
    if (name_at(shstr, u32(section(i))) != ".nv.info") continue;
    size_t at = u64(section(i) + 0x18), end = at + u64(section(i) + 0x20);
    while (at < end) {
      uint8_t format = elf[at], attribute = elf[at + 1];
      size_t size = format == 4 ? u16(at + 2) : 0;
      if (format == 4 && (attribute == 0x2f || attribute == 0x11) && size == 8 && u32(at + 4) * 24 < symsize) {
        std::string function = name_at(strtab, u32(symtab + u32(at + 4) * 24));
        (attribute == 0x2f ? out[function].first : out[function].second) = int(u32(at + 8));  // REGCOUNT, FRAME_SIZE
      }
      at += 4 + size;
    }
  }
  return out;
}

TEST(CubinTool, TheDefaultAssemblerMatchesPtxasWholeProgram) {
  std::string ptx = ptx_ok(kOutOfLineCall, "sm_80");
  wc::CompileOptions ptxas_only;
  ptxas_only.cubin_tool = "ptxas";
  std::vector<uint8_t> reference;
  try {
    reference = wc::ptx_to_cubin(ptx, wc::default_target("sm_80"), ptxas_only);
  } catch (const wc::CompileError& e) {
    GTEST_SKIP() << "no ptxas to compare with: " << e.what();
  }
  std::string log, tool;
  std::vector<uint8_t> cubin = wc::ptx_to_cubin(ptx, wc::default_target("sm_80"), {}, &log, &tool);
  auto want = cubin_resources(reference), got = cubin_resources(cubin);
  ASSERT_TRUE(want.count("calls")) << "no register count for the kernel in ptxas's cubin";
  ASSERT_TRUE(got.count("calls")) << "no register count for the kernel in " << tool << "'s cubin";
  EXPECT_EQ(got["calls"].first, want["calls"].first) << tool << " against ptxas: registers\n" << log;
  EXPECT_EQ(got["calls"].second, want["calls"].second) << tool << " against ptxas: stack frame\n" << log;
  wc::CompileOptions relocatable;
  relocatable.cubin_tool = "ptxas";
  relocatable.ptxas_options = {"-c"};
  // The kernel is one where relocatable code costs registers, or the test proves nothing.
  EXPECT_GT(cubin_resources(wc::ptx_to_cubin(ptx, wc::default_target("sm_80"), relocatable))["calls"].first,
            want["calls"].first);
}

TEST(CubinTool, UnknownToolNameIsAnError) {
  wc::CompileOptions options;
  options.cubin_tool = "nvcc";
  expect_error(wc::Stage::ptxas, [&] { wc::ptx_to_cubin("", wc::default_target("sm_90a"), options); });
}

TEST(CubinTool, ThePtxasOfAKernelNeedingArchFeaturesRejectsOtherArchs) {
  // PTX for sm_90a given to the cubin tool as sm_80: the tool must refuse, not the process die.
  std::string ptx = ptx_ok(kVector, "sm_90a");
  if (!any_cubin_tool()) GTEST_SKIP() << "no cubin tool";
  expect_error(wc::Stage::ptxas, [&] { wc::ptx_to_cubin(ptx, wc::default_target("sm_80"), {}); });
}

// --- bad input never aborts the process --------------------------------------------------------------------------

TEST(Errors, ParseErrorCarriesLineAndColumn) {
  const char* text = "module {\n  llvm.func @k() attributes {nvvm.kernel} {\n"
                     "    %0 = llvm.mlir.constant(1 : i32) : i32\n    %1 = llvm.add %0, %zz : i32\n"
                     "    llvm.return\n  }\n}\n";
  wc::CompileOptions options;
  options.source_name = "kernel.mlir";
  auto e = expect_error(wc::Stage::parse, [&] { wc::mlir_to_ptx(text, wc::default_target("sm_90a"), options); });
  ASSERT_FALSE(e.diagnostics().empty());
  EXPECT_EQ(e.diagnostics()[0].file, "kernel.mlir");
  EXPECT_EQ(e.diagnostics()[0].line, 4);
  EXPECT_EQ(e.diagnostics()[0].col, 23);
  EXPECT_TRUE(contains(e.what(), "kernel.mlir:4:23: error:")) << e.what();
}

TEST(Errors, GarbageAndUnknownDialects) {
  for (const char* text : {"this is not MLIR", "module { \"foo.bar\"() : () -> () }", "module {", "\x01\xff\xfe"})
    expect_error(wc::Stage::parse, [&] { wc::mlir_to_ptx(text, wc::default_target("sm_80")); });
}

TEST(Errors, VerifierFailure) {
  const char* text = "module {\n  llvm.func @k() attributes {nvvm.kernel} {\n"
                     "    %0 = llvm.mlir.constant(1 : i32) : i32\n    \"llvm.return\"(%0) : (i32) -> ()\n"
                     "  }\n}\n";
  auto e = expect_error(wc::Stage::verify, [&] { wc::mlir_to_ptx(text, wc::default_target("sm_90a")); });
  EXPECT_EQ(e.diagnostics()[0].line, 4);
}

TEST(Errors, TracerLocationsAreReported) {
  // The tracer's locations: the user's line inside call-site and name locations. f64 transcendental functions
  // have no lowering (no libdevice), which must be reported at the user's line.
  const char* text = R"mlir(
module {
  llvm.func @k(%p: !llvm.ptr<1>, %x: f64) attributes {nvvm.kernel} {
    %0 = math.exp %x : f64 loc(#user)
    llvm.store %0, %p : f64, !llvm.ptr<1>
    llvm.return
  }
}
#user = loc("softmax"(callsite("user.py":42:7 at "warpweave/cute/math.py":100:3)))
)mlir";
  auto e = expect_error(wc::Stage::lower, [&] { wc::mlir_to_ptx(text, wc::default_target("sm_90a")); });
  EXPECT_EQ(e.diagnostics()[0].file, "user.py");
  EXPECT_EQ(e.diagnostics()[0].line, 42);
  EXPECT_EQ(e.diagnostics()[0].col, 7);
  EXPECT_TRUE(contains(e.what(), "math.exp")) << e.what();
}

TEST(Errors, OpWithoutLoweringIsNamed) {
  // f8E8M0FNU has no LLVM type: arith-to-llvm leaves the truncf in place, and the error must name it at its line.
  const char* text = R"mlir(
module {
  llvm.func @k(%p: !llvm.ptr<1>, %x: f32) attributes {nvvm.kernel} {
    %0 = arith.truncf %x : f32 to f8E8M0FNU
    %1 = arith.scaling_extf %x, %0 : f32, f8E8M0FNU to f64
    llvm.store %1, %p : f64, !llvm.ptr<1>
    llvm.return
  }
}
)mlir";
  auto e = expect_error(wc::Stage::lower, [&] { wc::mlir_to_ptx(text, wc::default_target("sm_90a")); });
  EXPECT_TRUE(contains(e.what(), "'arith.truncf' was not lowered")) << e.what();
  EXPECT_EQ(e.diagnostics()[0].line, 4);
}

TEST(Errors, FatalErrorInInstructionSelectionIsRecoverable) {
  // An f64 exp intrinsic reaches NVPTX instruction selection, which has no libcall for it: in LLVM this is
  // report_fatal_error ("Cannot select"), i.e. exit(). It must become a CompileError, and the compiler must work
  // afterwards.
  const char* text = R"mlir(
module {
  llvm.func @k(%p: !llvm.ptr<1>, %x: f64) attributes {nvvm.kernel} {
    %0 = llvm.intr.exp(%x) : (f64) -> f64
    llvm.store %0, %p : f64, !llvm.ptr<1>
    llvm.return
  }
}
)mlir";
  for (int i = 0; i < 2; ++i) {
    auto e = expect_error(wc::Stage::codegen, [&] { wc::mlir_to_ptx(text, wc::default_target("sm_90a")); });
    EXPECT_TRUE(contains(e.what(), "LLVM fatal error")) << e.what();
    EXPECT_TRUE(contains(e.what(), "Cannot select")) << e.what();
    EXPECT_TRUE(contains(ptx_ok(kVector, "sm_90a"), "ld.global")) << "the compiler must recover";
  }
}

TEST(Errors, InlineAsmConstraintLlvmCannotSatisfy) {
  const char* text = R"mlir(
module {
  llvm.func @k(%p: !llvm.ptr<1>) attributes {nvvm.kernel} {
    %0 = llvm.inline_asm has_side_effects "mov.u32 $0, 1;", "=Q" : () -> i32
    llvm.store %0, %p : i32, !llvm.ptr<1>
    llvm.return
  }
}
)mlir";
  auto e = expect_error(wc::Stage::codegen, [&] { wc::mlir_to_ptx(text, wc::default_target("sm_90a")); });
  EXPECT_TRUE(contains(e.what(), "constraint")) << e.what();
}

TEST(Errors, CompileErrorMessageNamesTheStage) {
  wc::CompileError e(wc::Stage::ptxas, {wc::Diagnostic{wc::Diagnostic::Severity::error, "boom", "x.py", 3, 4}},
                     "tool log");
  EXPECT_STREQ(e.what(), "warpweave compile error (ptxas)\nx.py:3:4: error: boom\ntool log");
}

// --- SASS ----------------------------------------------------------------------------------------------------------

TEST(Sass, DisassemblyShowsThe128BitLoad) {
  if (!wc::sass_tool_available())
    GTEST_SKIP() << "no nvdisasm/cuobjdump (pip install nvidia-cuda-nvdisasm; WARPWEAVE_NVDISASM=<site-packages>)";
  if (!any_cubin_tool()) GTEST_SKIP() << "no cubin tool";
  wc::CompileResult r = compile_ok(kVector, "sm_90a");
  std::string sass = wc::disassemble_sass(r.cubin);
  EXPECT_TRUE(contains(sass, "LDG.E.128")) << sass;
  EXPECT_TRUE(contains(sass, "STG.E.128")) << sass;
}

TEST(Sass, MissingToolIsAnExceptionNotACrash) {
  if (wc::sass_tool_available()) GTEST_SKIP() << "a SASS tool is installed here";
  EXPECT_THROW(wc::disassemble_sass({1, 2, 3}), std::runtime_error);
}

// --- concurrency and speed -----------------------------------------------------------------------------------------

TEST(Compiler, ConcurrentCompilesAgree) {
  std::string expected = ptx_ok(kControlFlow, "sm_90a");
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 3; ++i) {
        const char* kernel = (i + t) % 2 ? kControlFlow : kVector;
        std::string ptx = wc::mlir_to_ptx(kernel, wc::default_target("sm_90a"));
        if (kernel == kControlFlow && ptx != expected) ++mismatches[t];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

TEST(Compiler, WarmCompileIsFast) {
  if (!any_cubin_tool()) GTEST_SKIP() << "no cubin tool";
  compile_ok(kVector, "sm_90a");  // warm up
  double best_front = 1e9, best_total = 1e9;
  for (int i = 0; i < 5; ++i) {
    wc::CompileResult r = compile_ok(kVector, "sm_90a");
    const auto& t = r.timings;
    double front = t.parse_ms + t.lower_ms + t.llvm_opt_ms + t.codegen_ms;
    best_front = std::min(best_front, front);
    best_total = std::min(best_total, front + t.cubin_ms);
  }
  std::printf("warm compile: MLIR+LLVM %.2f ms, total with cubin %.2f ms\n", best_front, best_total);
  RecordProperty("warm_mlir_llvm_ms", std::to_string(best_front));
  RecordProperty("warm_total_ms", std::to_string(best_total));
  EXPECT_LT(best_front, 250.0);  // ~5 ms measured; the bound only catches a pathology (e.g. rebuilding contexts)
}
