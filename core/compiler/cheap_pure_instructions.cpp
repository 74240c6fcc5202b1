// Which instructions a pass that computes values again (loop_invariant_values.cpp) or earlier in their block
// (paired_float_arithmetic.cpp) may move or copy: one rule for both, so that what one pass may copy the other may
// move.
#include <llvm/IR/Constants.h>
#include <llvm/IR/InstrTypes.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>

#include "internal.hpp"

namespace ww::compiler::detail {

bool cheap_and_pure(const llvm::Instruction& inst) {
  if (llvm::isa<llvm::PHINode>(inst) || inst.isTerminator() || inst.isEHPad() || llvm::isa<llvm::AllocaInst>(inst))
    return false;
  if (inst.mayReadOrWriteMemory() || inst.mayHaveSideEffects()) return false;
  if (auto* call = llvm::dyn_cast<llvm::CallBase>(&inst))
    return llvm::isa<llvm::IntrinsicInst>(call) && !call->isConvergent();
  switch (inst.getOpcode()) {
    // An integer division by a variable costs tens of instructions, and is undefined where the divisor is zero,
    // which a branch or an exit between its old and new place may rule out.
    case llvm::Instruction::UDiv:
    case llvm::Instruction::SDiv:
    case llvm::Instruction::URem:
    case llvm::Instruction::SRem:
      return llvm::isa<llvm::Constant>(inst.getOperand(1));
    default:
      return true;
  }
}

}  // namespace ww::compiler::detail
