#pragma once
// The IR builder: what tracing writes. It produces MLIR text (builtin, llvm, nvvm, arith, math, scf, vector, ub
// dialects, generic syntax) that the compiler parses; no MLIR header is needed to build or test it, and the
// backends emit through it across the plugin boundary without any MLIR type crossing.
//
// Values are numbered SSA values with a type (MLIR type syntax, e.g. "i32", "vector<8xf16>", "!llvm.ptr<1>").
// Regions nest: begin_region() opens one (with its block arguments), end_region() closes it, and the next op
// created with num_regions = k takes the k regions closed last, in order. Every op carries the location set last,
// so that compile diagnostics point at the user's source line.
//
// Dynamic integers of the layout algebra (ww::Int) become IR through materialize(): each symbol is bound to a
// value, expressions are emitted with arith ops, and a materialized expression is reused within the region that
// holds it (and regions nested in it), never outside.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ww/layout/int.hpp"

namespace ww::ir {

using Value = uint32_t;

struct Location {
  std::string file;
  int line = 0;
  int col = 0;
};

class IRError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Builder {
 public:
  Builder();
  ~Builder();
  Builder(const Builder&) = delete;
  Builder& operator=(const Builder&) = delete;

  // --- Module -----------------------------------------------------------------------------------------------
  // Text placed at module level (e.g. an llvm.mlir.global for shared memory).
  void add_module_text(std::string text);
  // An attribute of the module itself, e.g. ("ww.cubin_tool", "\"ptxas\""); `value` is MLIR attribute text. Setting
  // a name again replaces its value.
  void set_module_attribute(const std::string& name, std::string value);
  // Opens an llvm.func; returns its arguments. `attributes` is an attribute-dictionary body such as
  // "nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>"; `arg_attributes` (one per argument, may be empty) such as
  // "llvm.noalias, llvm.align = 16 : i64".
  std::vector<Value> begin_function(const std::string& name, const std::vector<std::string>& arg_types,
                                    const std::string& attributes = {},
                                    const std::vector<std::string>& arg_attributes = {});
  // Appends an argument to the open function (after those it was opened with): a parameter that the body's tracing
  // discovers it needs (a kernel building a tensor map from a template the host encodes at each call). Visible in
  // the whole body, its prologue included.
  Value add_function_argument(const std::string& type, const std::string& attributes = {});
  void end_function();  // appends llvm.return
  bool in_function() const;
  std::string str() const;  // the module

  // --- Operations -------------------------------------------------------------------------------------------
  // Creates an op in generic syntax. `properties` is the body of <{...}>, `attributes` of {...}.
  std::vector<Value> op(std::string_view name, std::span<const Value> operands,
                        std::span<const std::string> result_types, std::string_view properties = {},
                        std::string_view attributes = {}, int num_regions = 0);
  // The same with exactly one result.
  Value op1(std::string_view name, std::span<const Value> operands, const std::string& result_type,
            std::string_view properties = {}, std::string_view attributes = {});
  // An op with no result.
  void op0(std::string_view name, std::span<const Value> operands, std::string_view properties = {},
           std::string_view attributes = {}, int num_regions = 0);
  // Raw PTX through llvm.inline_asm; results as one value each (a struct result is unpacked).
  std::vector<Value> inline_asm(const std::string& asm_text, const std::string& constraints,
                                std::span<const Value> operands, std::span<const std::string> result_types,
                                bool side_effects = true);

  // An op written in its custom syntax, for ops whose generic form is unwieldy (llvm.call). In `format`, $r0,
  // $r1, ... stand for the results and $0, $1, ... for the operands; the location is appended.
  std::vector<Value> custom_op(const std::string& format, std::span<const Value> operands,
                               std::span<const std::string> result_types);

  std::vector<Value> begin_region(std::span<const std::string> arg_types);
  void end_region();
  int region_depth() const;
  // While set, ops go to the function's entry block (ahead of any open region), e.g. allocas of register
  // fragments and reads of thread indices, which must dominate every use.
  void set_emit_at_entry(bool at_entry);

  const std::string& type_of(Value v) const;
  void set_location(Location loc);
  const Location& location() const;

  // --- Constants and integers -------------------------------------------------------------------------------
  // Constants are created once per region scope.
  Value constant_int(int64_t v, const std::string& type);
  Value constant_float(double v, const std::string& type);
  // Binds a symbol of the algebra to a value in the current region (and the regions nested in it).
  void bind_symbol(uint64_t id, Value v);
  bool has_symbol(uint64_t id) const;
  // Emits x as an integer of `type` ("i32" or "i64"); raises IRError naming the symbol if one is not bound here.
  Value materialize(const Int& x, const std::string& type);
  // Fresh symbol ids for values that enter the algebra (disjoint from the ids the host side hands out).
  uint64_t fresh_symbol_id();

  // Counts for tests and diagnostics.
  size_t num_ops() const;
  // How many operands of the ops built so far are v: a region's block argument that nothing in its body read is
  // dead there, whatever the value the region's end would hand it.
  size_t use_count(Value v) const;

  struct Impl;  // opaque; public only so that the builder's own helpers can name it

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ww::ir
