// Calls in kernel code are convergent, as Clang treats every call in CUDA device code.
//
// MLIR's translation leaves inline assembly without the attribute, and LLVM is then free to duplicate such a
// call into both arms of a divergent branch (tail duplication, sinking). For a backend's `.aligned` instruction
// (barriers, warp- and warpgroup-wide matrix operations) that is a hang or undefined behaviour: the threads of a
// warp must execute the *same* instruction, not two copies of it. Intrinsics carry their own attributes and are
// left alone.
#include <llvm/IR/Function.h>
#include <llvm/IR/InstrTypes.h>
#include <llvm/IR/Module.h>

#include "internal.hpp"

namespace ww::compiler::detail {

void mark_calls_convergent(llvm::Module& module) {
  for (llvm::Function& function : module) {
    if (function.isDeclaration()) continue;
    function.addFnAttr(llvm::Attribute::Convergent);
    for (llvm::BasicBlock& block : function)
      for (llvm::Instruction& inst : block) {
        auto* call = llvm::dyn_cast<llvm::CallBase>(&inst);
        if (!call) continue;
        const llvm::Function* callee = call->getCalledFunction();
        if (call->isInlineAsm() || !callee || !callee->isIntrinsic()) call->addFnAttr(llvm::Attribute::Convergent);
      }
  }
}

}  // namespace ww::compiler::detail
