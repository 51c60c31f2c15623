// Spellings of pointwise ops ("AddAlpha") and dtypes ("f32", "bf16") in the IR's text form.
#pragma once

#include <string>

#include "kernels/core/dtype.h"
#include "kernels/pointwise/pointwise.h"

namespace openneuron::compiler {

using kernels::DType;
using kernels::PointwiseOp;

// The enum's own name; throws std::invalid_argument for a value outside the enum.
const char* pointwise_op_name(PointwiseOp op);
// False when `name` is no pointwise op.
bool parse_pointwise_op(const std::string& name, PointwiseOp* op);

const char* dtype_short_name(DType dtype);
bool parse_dtype(const std::string& name, DType* dtype);

}  // namespace openneuron::compiler
