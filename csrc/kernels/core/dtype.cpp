#include "kernels/core/dtype.h"

namespace openneuron::kernels {

size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8:
    case DType::Float8E4M3:
    case DType::Float8E5M2:
      return 1;
    case DType::Int16:
    case DType::Float16:
    case DType::BFloat16:
      return 2;
    case DType::Int32:
    case DType::Float32:
      return 4;
    case DType::Int64:
    case DType::Float64:
      return 8;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Bool:
      return "bool";
    case DType::UInt8:
      return "uint8";
    case DType::Int8:
      return "int8";
    case DType::Int16:
      return "int16";
    case DType::Int32:
      return "int32";
    case DType::Int64:
      return "int64";
    case DType::Float16:
      return "float16";
    case DType::BFloat16:
      return "bfloat16";
    case DType::Float32:
      return "float32";
    case DType::Float64:
      return "float64";
    case DType::Float8E4M3:
      return "float8_e4m3fn";
    case DType::Float8E5M2:
      return "float8_e5m2";
  }
  return "unknown";
}

}  // namespace openneuron::kernels
