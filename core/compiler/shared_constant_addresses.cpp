// A load, store or atomic at a constant shared-memory address (a shared array's symbol plus an offset) that only some
// lanes of a warp execute (a block behind a branch on the lane's index) takes the array's address from a register,
// with the offset in the instruction (`[%r+C]`), as the other shared-memory accesses do; the code generator would
// otherwise write the symbol itself into the instruction (`[symbol+C]`).
//
// ptxas (CUDA 13.0) treats the two forms differently there. In CuTe DSL's dense_blockscaled_gemm_persistent_amax,
// the first epilogue warp's first lane reads the four warps' partial maxima from fixed words of shared memory; read
// as `[symbol+C]` inside that one-lane branch, the warp's index stayed in a per-thread register for the whole kernel
// instead of a uniform one, and the tile scheduler's values, loop counters and tensor-memory addresses derived from
// it with it: 61 registers, against 42 for the same PTX with `[%r+C]` (the CUDA 13.5 PTX compiler: 42 either way).
// CuTe DSL's PTX never has the symbol in an address (it takes the array's address once, through a warp shuffle).
// Only those blocks: rewriting every constant access (the tensor-memory address word each warp role reads, in
// blocks the whole warp runs) moved other kernels' registers both ways, once into spills (blockwise
// masked_grouped_gemm under the PTX compiler: 0 -> 20 bytes).
//
// The register is the array's address through the NVVM move intrinsic (a register-to-register move), which the code
// generator cannot fold back into the instruction. Runs after the last optimisation pass.
#include <llvm/ADT/APInt.h>
#include <llvm/ADT/DenseMap.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

#include "internal.hpp"

namespace ww::compiler::detail {
namespace {

constexpr unsigned kSharedAddressSpace = 3;

// The index of the address operand of a load, store or atomic; -1 for any other instruction.
int address_operand(const llvm::Instruction& inst) {
  if (llvm::isa<llvm::LoadInst>(inst)) return static_cast<int>(llvm::LoadInst::getPointerOperandIndex());
  if (llvm::isa<llvm::StoreInst>(inst)) return static_cast<int>(llvm::StoreInst::getPointerOperandIndex());
  if (llvm::isa<llvm::AtomicRMWInst>(inst)) return static_cast<int>(llvm::AtomicRMWInst::getPointerOperandIndex());
  if (llvm::isa<llvm::AtomicCmpXchgInst>(inst))
    return static_cast<int>(llvm::AtomicCmpXchgInst::getPointerOperandIndex());
  return -1;
}

// Whether `value` may differ between the lanes of a warp because it is computed from the lane's position: the
// thread's index (other than divided by a multiple of the warp's width), the lane's index, a one-lane election.
// A warp-wide broadcast (a shuffle from a fixed lane) and anything read from memory or carried by a phi count as
// not: the rule only needs the branches a program writes on its lane (`lane == 0`, `warp == 0 and lane == 0`).
bool lane_dependent(const llvm::Value* value, int depth = 0) {
  if (depth > 12) return false;
  if (auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(value)) {
    switch (call->getIntrinsicID()) {
      case llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x:
      case llvm::Intrinsic::nvvm_read_ptx_sreg_laneid:
      case llvm::Intrinsic::nvvm_elect_sync:
        return true;
      default:
        return false;
    }
  }
  if (auto* extract = llvm::dyn_cast<llvm::ExtractValueInst>(value))  // an election's predicate
    return lane_dependent(extract->getAggregateOperand(), depth + 1);
  if (auto* op = llvm::dyn_cast<llvm::BinaryOperator>(value)) {
    if (auto* amount = llvm::dyn_cast<llvm::ConstantInt>(op->getOperand(1))) {
      bool by_warps = false;
      switch (op->getOpcode()) {
        case llvm::Instruction::LShr:
        case llvm::Instruction::AShr:
          by_warps = amount->getZExtValue() >= 5;
          break;
        case llvm::Instruction::UDiv:
        case llvm::Instruction::SDiv:
          by_warps = !amount->isZero() && amount->getZExtValue() % 32 == 0;
          break;
        default:
          break;
      }
      if (by_warps) return false;
    }
    return lane_dependent(op->getOperand(0), depth + 1) || lane_dependent(op->getOperand(1), depth + 1);
  }
  if (auto* cast = llvm::dyn_cast<llvm::CastInst>(value)) return lane_dependent(cast->getOperand(0), depth + 1);
  if (auto* cmp = llvm::dyn_cast<llvm::CmpInst>(value))
    return lane_dependent(cmp->getOperand(0), depth + 1) || lane_dependent(cmp->getOperand(1), depth + 1);
  if (auto* select = llvm::dyn_cast<llvm::SelectInst>(value))
    return lane_dependent(select->getCondition(), depth + 1) || lane_dependent(select->getTrueValue(), depth + 1) ||
           lane_dependent(select->getFalseValue(), depth + 1);
  return false;
}

// Whether `block` runs only for the lanes that took one side of a branch on a lane-dependent condition: some block
// above it in the dominator tree branches so, and `block` lies below the side that only that branch enters.
bool behind_lane_branch(const llvm::BasicBlock* block, const llvm::DominatorTree& dominators) {
  for (const llvm::DomTreeNode* node = dominators.getNode(block); node && node->getIDom(); node = node->getIDom()) {
    const llvm::BasicBlock* above = node->getIDom()->getBlock();
    auto* br = llvm::dyn_cast<llvm::BranchInst>(above->getTerminator());
    if (!br || !br->isConditional() || !lane_dependent(br->getCondition())) continue;
    for (const llvm::BasicBlock* side : br->successors())
      if (side->getSinglePredecessor() == above && dominators.dominates(side, block)) return true;
  }
  return false;
}

// The shared array's address in a register, made just before `before`.
llvm::Value* address_in_register(llvm::GlobalVariable* array, llvm::Instruction* before) {
  const llvm::DataLayout& layout = before->getModule()->getDataLayout();
  unsigned bits = layout.getPointerSizeInBits(kSharedAddressSpace);
  llvm::IRBuilder<> b(before);
  llvm::IntegerType* word = b.getIntNTy(bits);
  llvm::Intrinsic::ID move = bits == 32 ? llvm::Intrinsic::nvvm_move_i32 : llvm::Intrinsic::nvvm_move_i64;
  llvm::Value* copy = b.CreateIntrinsic(move, {}, {b.CreatePtrToInt(array, word)});
  return b.CreateIntToPtr(copy, array->getType());
}

}  // namespace

void address_shared_constants_from_registers(llvm::Module& module) {
  const llvm::DataLayout& layout = module.getDataLayout();
  unsigned bits = layout.getPointerSizeInBits(kSharedAddressSpace);
  if (bits != 32 && bits != 64) return;
  for (llvm::Function& function : module) {
    if (function.isDeclaration()) continue;
    llvm::DominatorTree dominators(function);
    for (llvm::BasicBlock& block : function) {
      llvm::DenseMap<llvm::GlobalVariable*, llvm::Value*> registers;  // this block's copies, by array
      int behind = -1;                                               // behind_lane_branch, once asked
      for (llvm::Instruction& inst : block) {
        int operand = address_operand(inst);
        if (operand < 0) continue;
        auto* address = llvm::dyn_cast<llvm::Constant>(inst.getOperand(operand));
        if (!address || address->getType()->getPointerAddressSpace() != kSharedAddressSpace) continue;
        llvm::APInt offset(layout.getIndexTypeSizeInBits(address->getType()), 0);
        auto* array = llvm::dyn_cast<llvm::GlobalVariable>(
            address->stripAndAccumulateConstantOffsets(layout, offset, /*AllowNonInbounds=*/true));
        if (!array || array->getAddressSpace() != kSharedAddressSpace) continue;
        if (behind < 0) behind = behind_lane_branch(&block, dominators) ? 1 : 0;
        if (!behind) continue;
        llvm::Value*& base = registers[array];
        if (!base) base = address_in_register(array, &inst);
        llvm::IRBuilder<> b(&inst);
        llvm::Value* at = offset.isZero() ? base : b.CreateInBoundsGEP(b.getInt8Ty(), base, b.getInt(offset));
        inst.setOperand(operand, at);
      }
    }
  }
}

}  // namespace ww::compiler::detail
