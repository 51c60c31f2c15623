// frexp against std::frexp in double, its special values, and 16-bit inputs split exactly.
#include "kernels/pointwise/frexp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::get;
using testing::make_tensor;
using testing::set;

TEST(Frexp, SplitsIntoMantissaAndPowerOfTwo) {
  const double values[] = {1.5, -0.0, INFINITY, NAN, 3e-39, 65504.0, -6e-8, 0.0};
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
    auto in = make_tensor(dtype, {8});
    for (int64_t i = 0; i < 8; ++i) set(in.view, {i}, values[i]);
    auto mantissa = make_tensor(dtype, {8});
    auto exponent = make_tensor(DType::Int32, {8});
    frexp(mantissa.view, exponent.view, in.view);
    for (int64_t i = 0; i < 8; ++i) {
      const double x = get(in.view, {i});
      const double m = get(mantissa.view, {i});
      if (!std::isfinite(x)) {
        EXPECT_TRUE(std::isnan(x) ? std::isnan(m) : m == x);
        EXPECT_EQ(get(exponent.view, {i}), 0);
        continue;
      }
      int power = 0;
      EXPECT_EQ(m, std::frexp(x, &power)) << dtype_name(dtype) << " " << x;
      EXPECT_EQ(get(exponent.view, {i}), power);
      EXPECT_EQ(std::signbit(m), std::signbit(x));
    }
  }
  auto ints = make_tensor(DType::Int32, {1});
  EXPECT_THROW(frexp(ints.view, ints.view, ints.view), std::invalid_argument);
}

}  // namespace
}  // namespace openneuron::kernels
