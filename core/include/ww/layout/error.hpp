#pragma once
// Errors of the layout algebra. A violated precondition is a LayoutError (Python: ValueError); an operand of the
// wrong kind is a LayoutTypeError (Python: TypeError). Messages name the operation and its operands.
#include <stdexcept>
#include <string>

namespace ww {

class LayoutError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class LayoutTypeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace ww
