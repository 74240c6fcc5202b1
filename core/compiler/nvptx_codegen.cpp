// llvm::Module -> PTX with LLVM's NVPTX back end: triple and data layout, the new pass manager's O<n> pipeline,
// then assembly emission. LLVM headers only, no MLIR.
#include <algorithm>
#include <map>
#include <mutex>

#include <llvm/ADT/StringExtras.h>
#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Triple.h>

#include "internal.hpp"

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace ww::compiler::detail {
namespace {

void initialize_nvptx() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Only NVPTX: InitializeAllTargets() would drag every back end into the link.
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    // 32-bit shared-memory pointers, as nvcc and CUTLASS use: fewer registers for shared addresses, and MLIR's
    // NVVM-to-PTX lowering gives shared pointers the 32-bit "r" constraint in inline asm. The option is global,
    // but this LLVM is ours alone (linked statically, symbols hidden), so nobody else sees it.
    auto& registered = llvm::cl::getRegisteredOptions();
    auto it = registered.find("nvptx-short-ptr");
    if (it != registered.end()) static_cast<llvm::cl::opt<bool>*>(it->second)->setValue(true);
  });
}

llvm::CodeGenOptLevel codegen_level(int opt_level) {
  switch (opt_level) {
    case 0: return llvm::CodeGenOptLevel::None;
    case 1: return llvm::CodeGenOptLevel::Less;
    case 2: return llvm::CodeGenOptLevel::Default;
    default: return llvm::CodeGenOptLevel::Aggressive;
  }
}

llvm::OptimizationLevel pass_level(int opt_level) {
  switch (opt_level) {
    case 0: return llvm::OptimizationLevel::O0;
    case 1: return llvm::OptimizationLevel::O1;
    case 2: return llvm::OptimizationLevel::O2;
    default: return llvm::OptimizationLevel::O3;
  }
}

// TargetMachines are reused across compiles (creating one costs about a millisecond). Callers hold the compile
// lock, which also guards this cache.
std::map<std::string, std::unique_ptr<llvm::TargetMachine>>& machines() {
  static auto* cache = new std::map<std::string, std::unique_ptr<llvm::TargetMachine>>;
  return *cache;
}

llvm::TargetMachine* target_machine(const Target& target, int opt_level, Failure& failure) {
  initialize_nvptx();
  std::string key = target.triple + '|' + target.llvm_cpu + '|' + target.ptx_features + '|' +
                    std::to_string(opt_level);
  auto& cache = machines();
  if (auto it = cache.find(key); it != cache.end()) return it->second.get();

  auto fail = [&](std::string message) -> llvm::TargetMachine* {
    failure.stage = Stage::target;
    failure.diagnostics = {error_diag("target '" + target.name + "': " + message)};
    return nullptr;
  };
  llvm::Triple triple(target.triple);
  std::string error;
  const llvm::Target* llvm_target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!llvm_target) return fail("triple '" + target.triple + "': " + error);

  // LLVM only warns (on stderr) about an unknown CPU or feature and then emits PTX for a default; refuse instead.
  // The tables come from a subtarget with neither, which LLVM creates without a warning.
  std::unique_ptr<llvm::MCSubtargetInfo> info(llvm_target->createMCSubtargetInfo(triple, "", ""));
  if (!info || !info->isCPUStringValid(target.llvm_cpu))
    return fail("LLVM's NVPTX back end does not know the CPU '" + target.llvm_cpu + "'");
  llvm::SmallVector<llvm::StringRef> features;
  llvm::StringRef(target.ptx_features).split(features, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef feature : features) {
    llvm::StringRef name = feature.trim().ltrim("+-");
    bool known = llvm::any_of(info->getAllProcessorFeatures(),
                              [&](const llvm::SubtargetFeatureKV& kv) { return name == kv.Key; });
    if (!known) return fail("LLVM's NVPTX back end does not know the feature '" + feature.str() + "'");
  }

  llvm::TargetOptions target_options;
  // A multiply feeding an add may become one fused multiply-add, as nvcc (--fmad=true) and CuTe DSL compile
  // kernels: without it LLVM fuses nothing and gives each multiply and add an explicit rounding mode, which forbids
  // ptxas to fuse them either; QuACK's norm backward lost 5% to it.
  target_options.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  std::unique_ptr<llvm::TargetMachine> machine(llvm_target->createTargetMachine(
      triple, target.llvm_cpu, target.ptx_features, target_options, std::nullopt, std::nullopt,
      codegen_level(opt_level)));
  if (!machine) return fail("LLVM could not create a TargetMachine");
  return cache.emplace(std::move(key), std::move(machine)).first->second.get();
}

// LLVMContext's default diagnostic handler prints, and exits the process on an error (e.g. an inline asm
// constraint it cannot satisfy). Collect instead, straight into the compile's failure and warnings, so that what
// was said before a fatal error survives it.
struct LlvmDiagnostics {
  std::vector<Diagnostic>* errors;
  std::vector<Diagnostic>* warnings;
  int error_count = 0;

  static void handle(const llvm::DiagnosticInfo* info_ptr, void* self) {
    const llvm::DiagnosticInfo& info = *info_ptr;
    auto* diags = static_cast<LlvmDiagnostics*>(self);
    Diagnostic d;
    switch (info.getSeverity()) {
      case llvm::DS_Error: d.severity = Diagnostic::Severity::error; break;
      case llvm::DS_Warning: d.severity = Diagnostic::Severity::warning; break;
      case llvm::DS_Note: d.severity = Diagnostic::Severity::note; break;
      case llvm::DS_Remark: return;  // optimisation remarks: noise here
    }
    llvm::raw_string_ostream os(d.message);
    llvm::DiagnosticPrinterRawOStream printer(os);
    info.print(printer);
    os.flush();
    if (d.severity == Diagnostic::Severity::error) {
      ++diags->error_count;
      diags->errors->push_back(std::move(d));
    } else {
      diags->warnings->push_back(std::move(d));
    }
  }
};

bool optimize(llvm::Module& module, llvm::TargetMachine& machine, int opt_level) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  // Constructed with the TargetMachine, the PassBuilder picks up NVPTX's own passes and cost model.
  llvm::PassBuilder builder(&machine);
  if (opt_level > 0) add_loop_iteration_fences(builder);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager passes = opt_level == 0
                                        ? builder.buildO0DefaultPipeline(llvm::OptimizationLevel::O0)
                                        : builder.buildPerModuleDefaultPipeline(pass_level(opt_level));
  passes.run(module, mam);
  return true;
}

bool emit_ptx(llvm::Module& module, llvm::TargetMachine& machine, std::string& ptx) {
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager passes;
  passes.add(llvm::createTargetTransformInfoWrapperPass(machine.getTargetIRAnalysis()));
  if (machine.addPassesToEmitFile(passes, os, nullptr, llvm::CodeGenFileType::AssemblyFile)) return false;
  passes.run(module);
  ptx.assign(buffer.data(), buffer.size());
  return true;
}

}  // namespace

void abandon_target_machines() {
  // After a fatal error inside code generation a machine's state is unknown: leak them, build new ones.
  for (auto& [key, machine] : machines()) (void)machine.release();
  machines().clear();
}

bool generate_ptx(std::string_view mlir_text, const Target& target, const CompileOptions& options,
                  CompileResult& result, std::string& ptx, Failure& failure, Stage& stage) {
  stage = Stage::target;
  int opt_level = std::clamp(options.opt_level, 0, 3);
  llvm::TargetMachine* machine = target_machine(target, opt_level, failure);
  if (!machine) return false;

  LlvmDiagnostics diags{&failure.diagnostics, &result.warnings};
  llvm::LLVMContext context;
  context.setDiagnosticHandlerCallBack(&LlvmDiagnostics::handle, &diags);
  auto fail = [&](Stage at, std::string message) {
    failure.stage = at;
    if (!message.empty()) failure.diagnostics.insert(failure.diagnostics.begin(), error_diag(std::move(message)));
    return false;
  };

  std::vector<ExternFunction> externs;
  std::unique_ptr<llvm::Module> module =
      lower_to_llvm_ir(mlir_text, options, context, result, externs, failure, stage);
  if (!module) return false;

  Stopwatch watch;
  stage = Stage::llvm;
  module->setTargetTriple(machine->getTargetTriple());
  module->setDataLayout(machine->createDataLayout());
  // Before anything looks at the module: the library's functions are then optimised with the kernels'.
  if (!externs.empty() && !link_extern_bitcode(*module, externs, failure)) return false;
  if (diags.error_count) return fail(Stage::llvm, {});
  std::string broken;
  llvm::raw_string_ostream broken_os(broken);
  if (llvm::verifyModule(*module, &broken_os)) return fail(Stage::llvm, "invalid LLVM IR: " + broken);
  mark_calls_convergent(*module);
  optimize(*module, *machine, opt_level);
  if (diags.error_count) return fail(Stage::llvm, {});
  read_sub_byte_elements_as_bits(*module);
  if (opt_level > 0) merge_warp_broadcasts(*module);
  if (opt_level > 0) forward_values_past_other_roles(*module);
  if (opt_level > 0) recompute_values_in_warp_roles(*module);
  rematerialize_launch_constants(*module);
  if (opt_level > 0) {
    // Before the loops' values are placed: the addresses' bases are what is left to place.
    fold_offsets_into_asm_addresses(*module);
    // After the launch constants' reads are placed: it may move them, with what they feed, further into a loop.
    recompute_invariant_values_in_loops(*module);
  }
  convert_small_integers_through_f32(*module);
  if (opt_level > 0) pair_float_arithmetic(*module, *machine);
  if (opt_level > 0) address_shared_constants_from_registers(*module);
  if (opt_level > 0) sink_vector_extracts(*module);
  // Last: the passes above recognise the special registers' reads by their intrinsics.
  if (opt_level > 0) keep_role_values_in_place(*module);
  if (options.want_llvm_ir) {
    result.llvm_ir.clear();
    llvm::raw_string_ostream os(result.llvm_ir);
    module->print(os, nullptr);
  }
  result.timings.llvm_opt_ms = watch.lap_ms();

  stage = Stage::codegen;
  if (!emit_ptx(*module, *machine, ptx)) return fail(Stage::codegen, "the NVPTX back end cannot emit assembly");
  if (diags.error_count) return fail(Stage::codegen, {});
  result.timings.codegen_ms = watch.lap_ms();
  return true;
}

}  // namespace ww::compiler::detail
