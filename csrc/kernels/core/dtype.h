// Element types the kernel library understands, and their sizes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace openneuron::kernels {

// float64 is not a NeuronCore type: kernels accept it only for copies and casts,
// so that host-fallback ops can move such tensors on and off the device.
enum class DType : uint8_t {
  Bool,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  Float8E4M3,
  Float8E5M2,
};

// Bytes per element of `dtype`.
size_t element_size(DType dtype);

// Printable name, e.g. "float32".
const char* dtype_name(DType dtype);

inline bool is_floating(DType dtype) {
  return dtype == DType::Float16 || dtype == DType::BFloat16 || dtype == DType::Float32 ||
         dtype == DType::Float64 || dtype == DType::Float8E4M3 || dtype == DType::Float8E5M2;
}

}  // namespace openneuron::kernels
