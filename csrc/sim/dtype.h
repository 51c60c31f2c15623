// Element types a NeuronCore stores, and their conversion to and from fp32 (the ALU's type).
#pragma once

#include <cstdint>
#include <string>

namespace openneuron::sim {

enum class DType : uint8_t {
  kBool,
  kInt8,
  kInt16,
  kInt32,
  kUInt8,
  kUInt16,
  kUInt32,
  kFloat16,
  kBFloat16,
  kFloat32,
  kTFloat32,  // stored as 32 bits; tensor-engine reads keep 10 mantissa bits
  kFloat8E4M3,
  kFloat8E5M2,
  // Microscaling data (trn3): four values packed in one element, moved as opaque bits and read
  // only by kMatmulMx (fp8: one byte a value; fp4: a nibble, the low one first).
  kFloat8E4M3x4,
  kFloat8E5M2x4,
  kFloat4E2M1x4,
  kCount
};

// Whether `dtype` is one of the packed microscaling types.
bool is_packed_mx(DType dtype);

// Bytes one element occupies.
int dtype_size(DType dtype);
// The name NKI uses ("float32", "bfloat16", "float8_e4m3", ...).
const char* dtype_name(DType dtype);
bool is_float(DType dtype);
// The DType called `name`; throws std::invalid_argument otherwise.
DType dtype_from_name(const std::string& name);

// Reads one element at `ptr` as fp32.
float load_element(DType dtype, const void* ptr);
// Rounds `value` to `dtype` (nearest-even for floats; integers round to nearest and saturate;
// fp8 e4m3 saturates at ±448) and writes it at `ptr`.
void store_element(DType dtype, void* ptr, float value);
// `value` rounded to `dtype` and read back as fp32.
float round_to(DType dtype, float value);

// Converts `count` contiguous elements; the fast executor's row conversions.
void load_row(DType dtype, const uint8_t* src, float* dst, int64_t count);
void store_row(DType dtype, const float* src, uint8_t* dst, int64_t count);

}  // namespace openneuron::sim
