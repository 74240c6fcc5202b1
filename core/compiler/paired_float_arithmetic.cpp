// Independent f32 multiplies, adds, subtracts and fused multiply-adds of a block made into operations on vectors of
// two lanes, where the target's code generator has such vectors as a legal type with those operations legal on it
// (NVPTX: sm_100 and later, which execute one instruction for both lanes).
//
// Programs write element-wise math on Float32 register fragments one element at a time (a `vectorize=True` loop
// unrolled while tracing, a TensorSSA expression): LLVM's SLP vectorizer leaves them scalar on NVPTX, whose cost
// model counts 32-bit vector registers only. Executed in pairs, a softmax's scale-and-subtract or an accumulator's
// rescale issues half the instructions, and the register allocator sees pairs of consecutive registers, as NVIDIA's
// compiler builds CuTe DSL's programs (the mixed-input FMHA's 256 scale-and-subtracts become 128 paired ones).
//
// Two units pair only where they are the same step of two elements: in each operand slot, both read the same value,
// or both read constants, or both read results of the same operation (the same opcode or intrinsic; a lane of a
// pair counts as the paired operation). Programs interleave the steps of element-wise chains (element k's
// exp(c - a[k]) * d[k] * b[k], then element k + 1's): pairing the next free unit instead joins element k's last
// step with element k + 1's first, packing a computed value with a constant (one register of the constant per
// pair) and chaining every pair to the previous one; the mamba2 SSD's pre-inter warps needed 20 registers more than
// CuTe DSL's build and spilled. A unit whose operands are computed after its partner's root in the block has them
// computed earlier (its cheap, pure operands, a few instructions deep, move up with it), as a vectorizer schedules
// a bundle: element k + 1's step then pairs with element k's.
//
// Each lane rounds as the scalar operation did, so the values are unchanged. Fusion is kept as it was: a multiply
// whose only user is an add or subtract is paired with that user as one unit (the code generator then fuses the two
// vector operations as it fused the scalar ones); a multiply or add that the code generator might fuse in another
// way (a multiply with several users of which one adds, an add of two single-use products) stays scalar.
//
// Runs after the last optimisation pass (which would split the vectors back into lanes). On targets without the
// vector type or its operations nothing changes.
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/CodeGen/ISDOpcodes.h>
#include <llvm/CodeGen/TargetLowering.h>
#include <llvm/CodeGen/TargetSubtargetInfo.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "internal.hpp"

namespace ww::compiler::detail {
namespace {

// What the code generator accepts on <2 x float>, per function (its subtarget decides).
struct PairLegality {
  bool mul = false, add = false, sub = false, fma = false;
};

PairLegality pair_legality(const llvm::Function& function, const llvm::TargetMachine& machine) {
  const llvm::TargetSubtargetInfo* subtarget = machine.getSubtargetImpl(function);
  const llvm::TargetLowering* lowering = subtarget ? subtarget->getTargetLowering() : nullptr;
  PairLegality legal;
  if (lowering == nullptr || !lowering->isTypeLegal(llvm::MVT::v2f32)) return legal;
  legal.mul = lowering->isOperationLegal(llvm::ISD::FMUL, llvm::MVT::v2f32);
  legal.add = lowering->isOperationLegal(llvm::ISD::FADD, llvm::MVT::v2f32);
  legal.sub = lowering->isOperationLegal(llvm::ISD::FSUB, llvm::MVT::v2f32);
  legal.fma = lowering->isOperationLegal(llvm::ISD::FMA, llvm::MVT::v2f32);
  return legal;
}

bool is_f32(const llvm::Value* value) { return value->getType()->isFloatTy(); }

bool is_f32_binary(const llvm::Value* value, unsigned opcode) {
  auto* op = llvm::dyn_cast<llvm::BinaryOperator>(value);
  return op != nullptr && op->getOpcode() == opcode && is_f32(op);
}

bool is_add_or_sub(const llvm::User* user) {
  return is_f32_binary(user, llvm::Instruction::FAdd) || is_f32_binary(user, llvm::Instruction::FSub);
}

// A pairable unit: a root instruction (whose result the program uses) and the product it adds when fused.
struct Unit {
  llvm::Instruction* root = nullptr;
  llvm::BinaryOperator* product = nullptr;  // the single-use multiply that root adds or subtracts; else null
  // The pairing key: units pair only with units of the same shape and flags.
  unsigned opcode = 0;
  int product_slot = -1;
  unsigned root_flags = 0, product_flags = 0;

  auto key() const { return std::make_tuple(opcode, product_slot, root_flags, product_flags); }
};

unsigned flags_of(const llvm::Instruction* inst) {
  if (!llvm::isa<llvm::FPMathOperator>(inst)) return 0;
  llvm::FastMathFlags f = inst->getFastMathFlags();
  unsigned bits = 0;
  for (bool flag : {f.allowReassoc(), f.noNaNs(), f.noInfs(), f.noSignedZeros(), f.allowReciprocal(),
                    f.allowContract(), f.approxFunc()})
    bits = bits << 1 | static_cast<unsigned>(flag);
  return bits;
}

std::optional<Unit> unit_of(llvm::Instruction& inst, const PairLegality& legal) {
  if (!is_f32(&inst)) return std::nullopt;
  Unit unit;
  unit.root = &inst;
  unit.root_flags = flags_of(&inst);
  if (auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(&inst)) {
    llvm::Intrinsic::ID id = call->getIntrinsicID();
    if ((id != llvm::Intrinsic::fma && id != llvm::Intrinsic::fmuladd) || !legal.fma) return std::nullopt;
    unit.opcode = 1000 + id;
    return unit;
  }
  auto* op = llvm::dyn_cast<llvm::BinaryOperator>(&inst);
  if (op == nullptr) return std::nullopt;
  unit.opcode = op->getOpcode();
  if (unit.opcode == llvm::Instruction::FMul) {
    // A product that an add reads may be fused into it by the code generator: it goes with its add, or stays.
    if (!legal.mul || llvm::any_of(op->users(), [](const llvm::User* u) { return is_add_or_sub(u); }))
      return std::nullopt;
    return unit;
  }
  if (unit.opcode != llvm::Instruction::FAdd && unit.opcode != llvm::Instruction::FSub) return std::nullopt;
  if (!(unit.opcode == llvm::Instruction::FAdd ? legal.add : legal.sub)) return std::nullopt;
  bool product0 = is_f32_binary(op->getOperand(0), llvm::Instruction::FMul);
  bool product1 = is_f32_binary(op->getOperand(1), llvm::Instruction::FMul);
  if (!product0 && !product1) return unit;
  unit.product_slot = product0 ? 0 : 1;
  if (product0 && product1) {
    // The code generator fuses the product with fewer users (x * scale + c, c a product shared by the row); with
    // as many users each, the choice is its own and the add stays scalar.
    bool single0 = op->getOperand(0)->hasOneUse(), single1 = op->getOperand(1)->hasOneUse();
    if (single0 == single1) return std::nullopt;
    unit.product_slot = single0 ? 0 : 1;
  }
  auto* product = llvm::cast<llvm::BinaryOperator>(op->getOperand(unit.product_slot));
  if (!product->hasOneUse() || product->getParent() != op->getParent() || !legal.mul || !legal.fma)
    return std::nullopt;
  unit.product = product;
  unit.product_flags = flags_of(product);
  return unit;
}

// What the unit reads, in the order the vector operations take it. Read from the instructions each time: a leaf
// that was itself paired since the unit was seen is now a lane of that pair.
std::vector<llvm::Value*> leaves(const Unit& unit) {
  if (unit.product)
    return {unit.product->getOperand(0), unit.product->getOperand(1), unit.root->getOperand(1 - unit.product_slot)};
  if (auto* call = llvm::dyn_cast<llvm::CallBase>(unit.root)) return {call->arg_begin(), call->arg_end()};
  return {unit.root->getOperand(0), unit.root->getOperand(1)};
}

// What makes an operand: the operation that computes it (a lane of a pair counts as the paired operation), or
// that it is a constant or an argument.
std::tuple<int, unsigned, unsigned> operand_kind(const llvm::Value* value) {
  if (llvm::isa<llvm::Constant>(value)) return {0, 0, 0};
  if (auto* lane = llvm::dyn_cast<llvm::ExtractElementInst>(value))
    if (llvm::isa<llvm::Instruction>(lane->getVectorOperand())) value = lane->getVectorOperand();
  auto* inst = llvm::dyn_cast<llvm::Instruction>(value);
  if (inst == nullptr) return {1, 0, 0};
  unsigned id = 0;
  if (auto* call = llvm::dyn_cast<llvm::CallBase>(inst))
    if (const llvm::Function* callee = call->getCalledFunction()) id = callee->getIntrinsicID();
  return {2, inst->getOpcode(), id};
}

// The two units are the same step of two elements: per operand slot, the same value, or operands of one kind.
bool same_step(const Unit& first, const Unit& second) {
  std::vector<llvm::Value*> a = leaves(first), b = leaves(second);
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (a[k] != b[k] && operand_kind(a[k]) != operand_kind(b[k])) return false;
  return true;
}

class BlockPairer {
 public:
  BlockPairer(llvm::BasicBlock& block, const PairLegality& legal) : block_(block), legal_(legal) {
    int64_t index = 0;
    for (llvm::Instruction& inst : block) position_[&inst] = 2 * index++;
  }

  void run() {
    std::vector<llvm::Instruction*> order;
    for (llvm::Instruction& inst : block_) order.push_back(&inst);
    for (llvm::Instruction* inst : order) {
      if (erased_.count(inst)) continue;
      std::optional<Unit> unit = unit_of(*inst, legal_);
      if (!unit) continue;
      auto& waiting = pending_[unit->key()];
      bool paired = false;
      // Earliest first: the trips of an unrolled loop pair in their order (k with k + 1).
      for (size_t i = 0; i < waiting.size(); ++i) {
        if (!same_step(waiting[i], *unit)) continue;
        std::optional<llvm::Instruction*> anchor = placement(waiting[i], *unit);
        if (!anchor) continue;
        emit(waiting[i], *unit, *anchor);
        waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(i));
        paired = true;
        break;
      }
      if (paired) continue;
      waiting.push_back(*unit);
      // A unit that found no partner among the next ones is given up: it would only slow down the later ones.
      if (waiting.size() > kWindow) waiting.pop_front();
    }
  }

 private:
  // How many units wait for a partner: keeps a long unrolled block linear.
  static constexpr size_t kWindow = 16;
  // How deep the operands that a unit computes earlier, to pair, may go.
  static constexpr int kDepth = 4;

  int64_t position(const llvm::Value* value) const {
    auto* inst = llvm::dyn_cast<llvm::Instruction>(value);
    if (inst == nullptr || inst->getParent() != &block_) return -1;  // defined before the block runs
    return position_.lookup(inst);
  }

  // Where the pair's vector operations can go: before the first root if the second unit's leaves are ready there
  // (the second is hoisted), else before the second root if nothing up to it reads the first (the first sinks; a
  // second unit that reads the first, through its product too, depends on it).
  std::optional<llvm::Instruction*> placement(const Unit& first, const Unit& second) {
    int64_t at = position(first.root);
    if (llvm::all_of(leaves(second), [&](llvm::Value* v) { return position(v) < at; })) return first.root;
    // The second unit's operands computed earlier, before the first root, where they can be.
    llvm::SmallVector<llvm::Instruction*, 8> moved;
    if (llvm::all_of(leaves(second), [&](llvm::Value* v) { return earlier(v, at, kDepth, moved); })) {
      llvm::sort(moved, [&](const llvm::Instruction* x, const llvm::Instruction* y) {
        return position_.lookup(x) < position_.lookup(y);
      });
      for (llvm::Instruction* inst : moved) {
        inst->moveBefore(first.root->getIterator());
        position_[inst] = at - 1;
      }
      return first.root;
    }
    int64_t until = position(second.root);
    for (const llvm::User* user : first.root->users())
      if (position(user) >= 0 && position(user) <= until) return std::nullopt;
    return second.root;
  }

  // `value` is ready before position `at`, or can be computed there: a movable instruction of the block, after `at`,
  // whose operands are (at most `depth` instructions deep); those to move go to `moved`, once each.
  bool earlier(llvm::Value* value, int64_t at, int depth, llvm::SmallVectorImpl<llvm::Instruction*>& moved) const {
    int64_t p = position(value);
    if (p < at) return true;
    auto* inst = llvm::cast<llvm::Instruction>(value);
    if (p == at || depth == 0 || !cheap_and_pure(*inst)) return false;
    if (llvm::is_contained(moved, inst)) return true;
    for (llvm::Value* operand : inst->operands())
      if (!earlier(operand, at, depth - 1, moved)) return false;
    moved.push_back(inst);
    return true;
  }

  llvm::Value* lanes(llvm::IRBuilder<>& builder, llvm::Value* a, llvm::Value* b) {
    auto* type = llvm::FixedVectorType::get(builder.getFloatTy(), 2);
    llvm::Value* v = builder.CreateInsertElement(llvm::PoisonValue::get(type), a, uint64_t{0});
    return builder.CreateInsertElement(v, b, uint64_t{1});
  }

  void emit(const Unit& first, const Unit& second, llvm::Instruction* anchor) {
    llvm::Instruction* before = anchor->getPrevNode();
    llvm::IRBuilder<> builder(anchor);
    std::vector<llvm::Value*> vectors, a = leaves(first), b = leaves(second);
    for (size_t k = 0; k < a.size(); ++k) vectors.push_back(lanes(builder, a[k], b[k]));
    llvm::Value* result = nullptr;
    if (auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(first.root)) {
      result = builder.CreateIntrinsic(call->getIntrinsicID(), {vectors[0]->getType()}, vectors);
    } else if (first.product == nullptr) {
      result = builder.CreateBinOp(static_cast<llvm::Instruction::BinaryOps>(first.opcode), vectors[0], vectors[1]);
    } else {
      llvm::Value* product = builder.CreateFMul(vectors[0], vectors[1]);
      llvm::cast<llvm::Instruction>(product)->copyFastMathFlags(first.product);
      llvm::Value* lhs = first.product_slot == 0 ? product : vectors[2];
      llvm::Value* rhs = first.product_slot == 0 ? vectors[2] : product;
      result = builder.CreateBinOp(static_cast<llvm::Instruction::BinaryOps>(first.opcode), lhs, rhs);
    }
    llvm::cast<llvm::Instruction>(result)->copyFastMathFlags(first.root);
    llvm::Value* lane0 = builder.CreateExtractElement(result, uint64_t{0});
    llvm::Value* lane1 = builder.CreateExtractElement(result, uint64_t{1});
    // New instructions sit just before the anchor: between it and whatever precedes it.
    int64_t at = position_.lookup(anchor) - 1;
    for (llvm::Instruction* inst = before ? before->getNextNode() : &block_.front(); inst != anchor;
         inst = inst->getNextNode())
      position_[inst] = at;
    for (auto [unit, lane] : {std::pair{&first, lane0}, std::pair{&second, lane1}}) {
      unit->root->replaceAllUsesWith(lane);
      erase(unit->root);
      if (unit->product) erase(unit->product);
    }
  }

  void erase(llvm::Instruction* inst) {
    position_.erase(inst);
    erased_.insert(inst);
    inst->eraseFromParent();
  }

  llvm::BasicBlock& block_;
  const PairLegality& legal_;
  llvm::DenseMap<const llvm::Instruction*, int64_t> position_;
  llvm::SmallPtrSet<const llvm::Instruction*, 16> erased_;
  std::map<decltype(Unit{}.key()), std::deque<Unit>> pending_;
};

}  // namespace

void pair_float_arithmetic(llvm::Module& module, const llvm::TargetMachine& machine) {
  for (llvm::Function& function : module) {
    if (function.isDeclaration()) continue;
    PairLegality legal = pair_legality(function, machine);
    if (!legal.mul && !legal.add && !legal.sub && !legal.fma) continue;
    for (llvm::BasicBlock& block : function) BlockPairer(block, legal).run();
  }
}

}  // namespace ww::compiler::detail
