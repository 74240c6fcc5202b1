// Extern functions (the frontend's cute.extern) defined in LLVM bitcode files, linked into the kernels' module
// before it is optimised, the way clang links a CUDA program's device libraries: only what the module uses, made
// internal to it, so that library functions nobody calls disappear and the called ones may be inlined into the
// kernels. LLVM headers only.
#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/StringSet.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Module.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/IPO/Internalize.h>

#include "internal.hpp"

namespace ww::compiler::detail {
namespace {

// Functions the CUDA toolchain provides to every kernel (ptxas resolves them): declaring one extern is no error.
bool provided_by_cuda(llvm::StringRef name) {
  return name == "vprintf" || name == "malloc" || name == "free" || name == "__assertfail";
}

Diagnostic at_first_call(const ExternFunction& fn, std::string message) {
  Diagnostic d = error_diag(std::move(message));
  d.file = fn.file;
  d.line = fn.line;
  d.col = fn.col;
  return d;
}

std::string defining_file(const ExternFunction& fn) {
  return fn.bitcode.empty() ? std::string("a linked bitcode file") : "'" + fn.bitcode + "'";
}

std::string type_text(const llvm::Type* type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type->print(os);
  return text;
}

// Read as bitcode, or as LLVM assembly text; null + `why` if the file cannot be read or is not LLVM IR for the GPU.
std::unique_ptr<llvm::Module> read_library(const std::string& path, llvm::Module& into, std::string& why) {
  llvm::SMDiagnostic error;
  std::unique_ptr<llvm::Module> library = llvm::parseIRFile(path, error, into.getContext());
  if (!library) {
    why = error.getMessage().str();
    if (error.getLineNo() > 0) why += " (line " + std::to_string(error.getLineNo()) + ")";
    return nullptr;
  }
  const std::string triple = library->getTargetTriple().str();
  if (!triple.empty() && triple.rfind("nvptx64", 0) != 0) {
    why = "it is compiled for '" + triple + "', not for the GPU (nvptx64-nvidia-cuda: clang -emit-llvm "
          "--cuda-device-only, or -target nvptx64-nvidia-cuda)";
    return nullptr;
  }
  // Compiled again for the module's target: the same layout (the linker would warn of any other), and no CPU or
  // features of its own on its functions, which would keep the inliner from inlining them into the kernels (whose
  // functions name none).
  library->setTargetTriple(into.getTargetTriple());
  library->setDataLayout(into.getDataLayout());
  for (llvm::Function& fn : *library) {
    fn.removeFnAttr("target-cpu");
    fn.removeFnAttr("target-features");
    fn.removeFnAttr("tune-cpu");
  }
  return library;
}

}  // namespace

bool link_extern_bitcode(llvm::Module& module, const std::vector<ExternFunction>& externs, Failure& failure) {
  auto fail = [&](Diagnostic d) {
    failure.stage = Stage::llvm;
    failure.diagnostics.insert(failure.diagnostics.begin(), std::move(d));
    return false;
  };
  // What the module defines itself (the kernels) stays visible; what the declarations' types were, before a
  // library's definition replaces them.
  llvm::StringSet<> own;
  for (llvm::GlobalValue& value : module.global_values())
    if (!value.isDeclaration() && value.hasName()) own.insert(value.getName());
  llvm::StringMap<llvm::FunctionType*> declared;
  for (const ExternFunction& fn : externs)
    if (llvm::Function* f = module.getFunction(fn.symbol)) declared[fn.symbol] = f->getFunctionType();

  llvm::Linker linker(module);
  llvm::StringSet<> linked;
  bool any = false;
  for (const ExternFunction& fn : externs) {
    if (fn.bitcode.empty() || !linked.insert(fn.bitcode).second) continue;
    std::string why;
    std::unique_ptr<llvm::Module> library = read_library(fn.bitcode, module, why);
    if (!library) {
      return fail(at_first_call(fn, "cannot link the bitcode file '" + fn.bitcode + "' of the extern function '" +
                                        fn.symbol + "' (read as LLVM bitcode or assembly): " + why));
    }
    // Only the definitions the module needs so far (and what they need in turn).
    if (linker.linkInModule(std::move(library), llvm::Linker::Flags::LinkOnlyNeeded)) {
      return fail(at_first_call(fn, "linking the bitcode file '" + fn.bitcode + "' of the extern function '" +
                                        fn.symbol + "' failed"));
    }
    any = true;
  }
  if (any) {
    llvm::internalizeModule(module, [&](const llvm::GlobalValue& value) {
      return !value.hasName() || own.contains(value.getName());
    });
  }

  for (const ExternFunction& fn : externs) {
    llvm::GlobalValue* value = module.getNamedValue(fn.symbol);
    if (!value) continue;  // declared, never called (the optimiser has not run yet, so this is rare)
    auto* f = llvm::dyn_cast<llvm::Function>(value);
    if (!f) {
      return fail(at_first_call(fn, "the extern function '" + fn.symbol + "' is defined as a variable, not a "
                                    "function, by " + defining_file(fn)));
    }
    if (f->isDeclaration()) {
      if (provided_by_cuda(fn.symbol)) continue;
      if (fn.bitcode.empty()) {
        return fail(at_first_call(fn, "the extern function '" + fn.symbol + "' is not defined: its declaration "
                                      "names no bitcode file (source=BitCode(path)) and no other extern's file "
                                      "defines it"));
      }
      return fail(at_first_call(fn, "the extern function '" + fn.symbol + "' is not defined by its bitcode file '" +
                                    fn.bitcode + "'"));
    }
    auto it = declared.find(fn.symbol);
    if (it != declared.end() && it->second != f->getFunctionType()) {
      return fail(at_first_call(fn, "the extern function '" + fn.symbol + "' is declared as '" +
                                    type_text(it->second) + "' but " + defining_file(fn) + " defines it as '" +
                                    type_text(f->getFunctionType()) + "'"));
    }
  }
  return true;
}

}  // namespace ww::compiler::detail
