// Every byte's value in a float8 format, so widening a float8 matrix to fp32 is one table load
// per element (shared by the scaled and the MX products).
#pragma once

#include <array>
#include <cstdint>

#include "kernels/core/float_conversions.h"

namespace openneuron::kernels {

using ByteValueTable = std::array<float, 256>;

// The 256 values of float8_e5m2 when `e5m2`, else of float8_e4m3fn.
inline const ByteValueTable& float8_byte_values(bool e5m2) {
  static const ByteValueTable e4m3_values = [] {
    ByteValueTable table;
    for (int bits = 0; bits < 256; ++bits) table[bits] = e4m3fn_bits_to_float(uint8_t(bits));
    return table;
  }();
  static const ByteValueTable e5m2_values = [] {
    ByteValueTable table;
    for (int bits = 0; bits < 256; ++bits) table[bits] = e5m2_bits_to_float(uint8_t(bits));
    return table;
  }();
  return e5m2 ? e5m2_values : e4m3_values;
}

}  // namespace openneuron::kernels
