// A host scalar operand (alpha, fill value, clamp bound), kept exact for integers.
#pragma once

#include <cstdint>

namespace openneuron::kernels {

struct Scalar {
  bool is_integral = false;
  double f = 0.0;
  int64_t i = 0;

  static Scalar from_double(double v) { return Scalar{false, v, static_cast<int64_t>(v)}; }
  static Scalar from_int(int64_t v) { return Scalar{true, static_cast<double>(v), v}; }
  double to_double() const { return is_integral ? static_cast<double>(i) : f; }
};

}  // namespace openneuron::kernels
