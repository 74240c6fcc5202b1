// An element taken out of a vector is taken out right before its first use in the block, not where the optimiser left
// it (with all the vector's other elements, right after the vector was made).
//
// A register fragment loaded with wide accesses and then converted element by element (SROA turns the fragment into
// vectors, and every element's extraction follows the load) reached the PTX with all its elements unpacked before the
// first conversion: the code generator schedules a block in the IR's order, and ptxas kept that order's live values.
// CuTe DSL's fp16_gemm_6 tutorial dequantises 128 Int8 values per thread (eight 16-byte loads, then conversion,
// scaling and packing to Float16): 128 unpacked bytes lived at once, 75 registers where CuTe DSL takes 56; unpacked as
// each conversion needs them, 48. An extraction has no side effects and its operands are defined before its old
// place, so any later place before its first use computes the same. Only extractions whose uses all lie in their own
// block (no phi) move. Runs after the last optimisation pass, which would schedule them back to no purpose.
#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>

#include "internal.hpp"

namespace ww::compiler::detail {

void sink_vector_extracts(llvm::Module& module) {
  for (llvm::Function& function : module) {
    for (llvm::BasicBlock& block : function) {
      llvm::DenseMap<const llvm::Instruction*, unsigned> order;
      llvm::SmallVector<llvm::ExtractElementInst*> extracts;
      for (llvm::Instruction& inst : block) {
        order[&inst] = order.size();
        if (auto* extract = llvm::dyn_cast<llvm::ExtractElementInst>(&inst)) extracts.push_back(extract);
      }
      for (llvm::ExtractElementInst* extract : extracts) {
        // The first user in the block's order (every user follows the extraction, which dominates it); none where a
        // use lies elsewhere or in a phi.
        llvm::Instruction* first = nullptr;
        for (llvm::User* user : extract->users()) {
          auto* inst = llvm::dyn_cast<llvm::Instruction>(user);
          if (inst == nullptr || inst->getParent() != &block || llvm::isa<llvm::PHINode>(inst)) {
            first = nullptr;
            break;
          }
          if (first == nullptr || order.lookup(inst) < order.lookup(first)) first = inst;
        }
        if (first != nullptr && first != extract->getNextNode()) extract->moveBefore(first->getIterator());
      }
    }
  }
}

}  // namespace ww::compiler::detail
