// Values that the optimiser hoisted out of an outer loop, made only of kernel arguments, constants and special
// registers (thread and block indices, the launch's extents), are computed again inside the loop that uses them,
// instead of living across all of it.
//
// LICM moves every loop-invariant computation to the loop's preheader. A persistent GEMM's tile loop then keeps,
// through every tile's main loop, the thread's shared-memory addresses that only its epilogue uses: CuTe DSL's
// sm_120 pingpong GEMM kept 32 stmatrix addresses (one swizzled base plus a constant each, passed to inline
// assembly as plain registers, so nothing folds the constant into the address) live across its MMA loop and
// spilled 16-104 bytes where NVIDIA's compiler, which computes them in the epilogue, spills nothing. The assembler
// does not rematerialise them: it sees registers live across a loop.
//
// A value is recomputed when it is free of memory and side effects, cheap (no division by a variable), and made of
// kernel arguments, constants and such values. Each use of it in a loop that the value is outside of gets a copy in
// that loop: in the use's block, or, for a use in an innermost loop (the hot one, which a copy must stay out of), at
// the end of the block that dominates that loop's header; the copies for one loop go to the nearest common dominator of
// their places, before the first use there. A copy is made only where it pays: where it is dead across one of the
// loop's inner loops, which the original, live across all of the loop, is not. That is so where the inner loop cannot
// be reached from the copy within an iteration (typically the main loop, before the epilogue that uses the value), or
// where no use of the copy can be reached from the inner loop (the copy only feeds a value made before it: a thread's
// shared-memory base plus the current stage's offset, which the inner loop then reads). CuTe DSL's mamba2_ssd kept two
// such bases (the thread's addresses of its epilogue's shared-memory reads of the deltas and of X, each stage's buffer
// an offset from them) across its epilogue role's loops, at a ceiling of 88 registers, and spilled them; NVIDIA's
// compiler computes them again from the thread's index inside the loop and spills nothing. Where a use has no such
// place (a use in an innermost loop right below the value, a copy live across every inner loop, a use outside the
// loops), the value stays as it is for all its uses: it lives across the loop anyway, and copies would only add
// instructions. So copies run once per iteration of an outer loop (a tile), never in an innermost loop. A copy's
// operands are copied with it, down to arguments, constants and values that the loop reads anyway (an operand left
// outside would live across the loop in the copy's stead); copies in one block are shared. Runs after the last
// optimisation pass, which would hoist the copies again.
#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/PostOrderIterator.h>
#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/IR/CFG.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>

#include "internal.hpp"

namespace ww::compiler::detail {
namespace {

// A use of a value and the block its copy goes to.
struct Place {
  llvm::Use* use;
  llvm::BasicBlock* block;
};

class Recomputer {
 public:
  explicit Recomputer(llvm::Function& function) : dominators_(function), loops_(dominators_) {}

  bool any_loops() const { return !loops_.empty(); }

  // Made of arguments, constants and cheap pure instructions only (memoised).
  bool recomputable(const llvm::Value* value) {
    if (llvm::isa<llvm::Argument>(value) || llvm::isa<llvm::Constant>(value)) return true;
    auto* inst = llvm::dyn_cast<llvm::Instruction>(value);
    if (!inst) return false;
    if (auto it = known_.find(inst); it != known_.end()) return it->second;
    known_[inst] = false;  // cycles go through phis, which are not recomputable
    bool ok = cheap_and_pure(*inst) &&
              llvm::all_of(inst->operands(), [&](const llvm::Use& op) { return recomputable(op.get()); });
    known_[inst] = ok;
    return ok;
  }

  void recompute(llvm::Instruction& inst) {
    llvm::BasicBlock* home = inst.getParent();
    llvm::SmallDenseMap<llvm::Loop*, llvm::SmallVector<Place, 8>, 4> by_loop;
    for (llvm::Use& use : inst.uses()) {
      llvm::BasicBlock* block = placement(home, reading_block(use));
      if (block == nullptr) return;
      by_loop[loops_.getLoopFor(block)].push_back({&use, block});
    }
    // The copies' places first: a failure leaves the function as it was.
    struct Copy {
      llvm::Instruction* before;
      llvm::SmallVector<Place, 8>* places;
      const llvm::Loop* loop;
    };
    llvm::SmallVector<Copy, 4> copies;
    for (auto& [loop, places] : by_loop) {
      llvm::BasicBlock* block = places.front().block;
      for (const Place& place : places) block = dominators_.findNearestCommonDominator(block, place.block);
      // The common dominator of places after an innermost loop may be that loop's exit test: go above the loop.
      while (loops_.getLoopFor(block) != loop) block = dominators_.getNode(block)->getIDom()->getBlock();
      if (!dominators_.dominates(home, block) || !dead_across_an_inner_loop(*loop, block, places)) return;
      copies.push_back({insertion_point(block, places), &places, loop});
    }
    for (auto& [before, places, loop] : copies) {
      llvm::Instruction* copy = copy_chain(inst, before, *loop);
      for (const Place& place : *places) place.use->set(copy);
    }
    if (inst.use_empty()) inst.eraseFromParent();
  }

  // A copy of `inst` before `before` (in `loop`), its operands copied too, down to arguments, constants and values
  // that live across the loop anyway (read in it by something that stays): an operand left outside would live
  // across the loop in the copy's stead. Copies in one block are shared.
  llvm::Instruction* copy_chain(llvm::Instruction& inst, llvm::Instruction* before, const llvm::Loop& loop) {
    for (llvm::Instruction* copy : copies_[{&inst, before->getParent()}])
      if (copy->comesBefore(before)) return copy;
    llvm::Instruction* copy = inst.clone();
    copy->setName(inst.getName());
    copy->insertBefore(before->getIterator());
    for (llvm::Use& operand : copy->operands())
      if (auto* value = llvm::dyn_cast<llvm::Instruction>(operand.get()); value && !read_in(*value, loop))
        operand.set(copy_chain(*value, copy, loop));
    copies_[{&inst, before->getParent()}].push_back(copy);
    return copy;
  }

 private:
  static bool read_in(llvm::Instruction& value, const llvm::Loop& loop) {
    return llvm::any_of(value.uses(), [&](llvm::Use& use) { return loop.contains(reading_block(use)); });
  }

  static llvm::BasicBlock* reading_block(llvm::Use& use) {
    auto* user = llvm::cast<llvm::Instruction>(use.getUser());
    if (auto* phi = llvm::dyn_cast<llvm::PHINode>(user)) return phi->getIncomingBlock(use);
    return user->getParent();
  }

  // Where a copy for a use read in `block` goes: that block, or, out of each innermost loop that `home` is outside
  // of, the block that dominates the loop's header. Null when that is in no loop that `home` is outside of.
  llvm::BasicBlock* placement(llvm::BasicBlock* home, llvm::BasicBlock* block) {
    if (!dominators_.isReachableFromEntry(block)) return nullptr;
    llvm::Loop* loop = loops_.getLoopFor(block);
    while (loop != nullptr && loop->isInnermost() && !loop->contains(home)) {
      block = dominators_.getNode(loop->getHeader())->getIDom()->getBlock();
      loop = loops_.getLoopFor(block);
    }
    if (loop == nullptr || loop->contains(home)) return nullptr;
    return block;
  }

  // Whether a copy in `block`, read where `places` say, is dead across one of `loop`'s inner loops, where the
  // original is live: that inner loop cannot be reached from `block` within an iteration of `loop` (the value is
  // used after it, typically the main loop before the epilogue that uses the value), or none of the places' reads
  // can be reached from it (the value is used before it only, to make another that the inner loop reads). A copy
  // live across every inner loop would gain nothing and only add instructions to each iteration.
  static bool dead_across_an_inner_loop(const llvm::Loop& loop, llvm::BasicBlock* block, llvm::ArrayRef<Place> places) {
    if (loop.isInnermost()) return false;
    auto from_block = reached_in_an_iteration(loop, block);
    return llvm::any_of(loop.getSubLoops(), [&](const llvm::Loop* inner) {
      if (inner->contains(block)) return false;
      if (!from_block.contains(inner->getHeader())) return true;
      // A place moved out of an innermost loop reads in that loop: what counts is the block that reads.
      auto from_inner = reached_in_an_iteration(loop, inner->getHeader());
      return llvm::none_of(places, [&](const Place& place) { return from_inner.contains(reading_block(*place.use)); });
    });
  }

  // The blocks of `loop` that `start` reaches without going round `loop` (through its header), `start` included.
  static llvm::SmallPtrSet<const llvm::BasicBlock*, 32> reached_in_an_iteration(const llvm::Loop& loop,
                                                                               const llvm::BasicBlock* start) {
    llvm::SmallPtrSet<const llvm::BasicBlock*, 32> reached{start};
    llvm::SmallVector<const llvm::BasicBlock*, 32> work{start};
    while (!work.empty()) {
      const llvm::BasicBlock* at = work.pop_back_val();
      for (const llvm::BasicBlock* next : llvm::successors(at))
        if (next != loop.getHeader() && loop.contains(next) && reached.insert(next).second) work.push_back(next);
    }
    return reached;
  }

  // Before the first of the uses that reads in `block` itself, else at its end.
  static llvm::Instruction* insertion_point(llvm::BasicBlock* block, llvm::ArrayRef<Place> places) {
    llvm::Instruction* first = block->getTerminator();
    for (const Place& place : places) {
      auto* user = llvm::cast<llvm::Instruction>(place.use->getUser());
      if (user->getParent() != block || llvm::isa<llvm::PHINode>(user)) continue;
      if (user->comesBefore(first)) first = user;
    }
    return first;
  }

  llvm::DominatorTree dominators_;
  llvm::LoopInfo loops_;
  llvm::DenseMap<const llvm::Instruction*, bool> known_;
  llvm::DenseMap<std::pair<const llvm::Instruction*, const llvm::BasicBlock*>, llvm::SmallVector<llvm::Instruction*, 1>>
      copies_;
};

}  // namespace

void recompute_invariant_values_in_loops(llvm::Module& module) {
  for (llvm::Function& function : module) {
    if (function.isDeclaration()) continue;
    Recomputer recomputer(function);
    if (!recomputer.any_loops()) continue;
    // Users before their operands: blocks in post order (a block's dominated blocks first), each from its end; a
    // copy's operands are still the originals, which are visited later and copied above it.
    llvm::SmallVector<llvm::Instruction*> order;
    for (llvm::BasicBlock* block : llvm::post_order(&function.getEntryBlock()))
      for (llvm::Instruction& inst : llvm::reverse(*block))
        if (!llvm::isa<llvm::Constant>(&inst) && recomputer.recomputable(&inst)) order.push_back(&inst);
    for (llvm::Instruction* inst : order) recomputer.recompute(*inst);
  }
}

}  // namespace ww::compiler::detail
