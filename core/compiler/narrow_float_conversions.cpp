// Small integers converted to a 16-bit float (bf16, f16) go through a 32-bit integer and f32: a widening, a
// conversion of each to f32, then one rounding of each pair to the 16-bit type.
//
// LLVM keeps `sitofp i8 %x to bfloat` as one conversion, which the NVPTX back end emits as a direct conversion from
// a 16-bit integer to the 16-bit float; the assembler makes that a general integer-to-float conversion of each
// element (on the slower conversion unit) and packs the halves into pairs with byte permutes. From a 32-bit integer
// to f32 the conversion is a full-rate ALU instruction, and two elements round to a packed pair in one instruction,
// which is also how NVIDIA's compiler builds CuTe DSL's programs. The register allocation of conversion loops that
// follows is tighter: CuTe DSL's mixed_input_fmha_decode, whose conversion warpgroup runs at its ceiling of 128
// registers, spilled 32 bytes (56 reloaded) with the direct conversions and spills nothing this way (CuTe DSL's own
// build spills 16).
//
// The result is the same: an integer of at most 24 significant bits is exact in f32, so the value is rounded once,
// to the 16-bit type, in both forms. Wider integers keep their direct conversion (two roundings could differ from
// one). Runs after the last optimisation pass, which would fold the chain back into one conversion.
#include <llvm/ADT/STLExtras.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>

#include "internal.hpp"

namespace ww::compiler::detail {
namespace {

bool through_f32(llvm::CastInst& cast) {
  if (cast.getOpcode() != llvm::Instruction::SIToFP && cast.getOpcode() != llvm::Instruction::UIToFP) return false;
  llvm::Type* to = cast.getDestTy()->getScalarType();
  if (!to->isBFloatTy() && !to->isHalfTy()) return false;
  // sitofp reads the sign bit as such: 24 bits of magnitude need 25 bits of integer.
  unsigned exact_bits = cast.getOpcode() == llvm::Instruction::SIToFP ? 25 : 24;
  return cast.getSrcTy()->getScalarSizeInBits() <= exact_bits;
}

}  // namespace

void convert_small_integers_through_f32(llvm::Module& module) {
  for (llvm::Function& function : module) {
    for (llvm::Instruction& inst : llvm::make_early_inc_range(llvm::instructions(function))) {
      auto* cast = llvm::dyn_cast<llvm::CastInst>(&inst);
      if (cast == nullptr || !through_f32(*cast)) continue;
      llvm::IRBuilder<> builder(cast);
      bool is_signed = cast->getOpcode() == llvm::Instruction::SIToFP;
      llvm::Value* word = builder.CreateIntCast(cast->getOperand(0),
                                                cast->getSrcTy()->getWithNewType(builder.getInt32Ty()), is_signed);
      llvm::Value* wide = builder.CreateCast(cast->getOpcode(), word,
                                             cast->getDestTy()->getWithNewType(builder.getFloatTy()),
                                             cast->getName() + ".f32");
      cast->replaceAllUsesWith(builder.CreateFPTrunc(wide, cast->getDestTy(), cast->getName()));
      cast->eraseFromParent();
    }
  }
}

}  // namespace ww::compiler::detail
