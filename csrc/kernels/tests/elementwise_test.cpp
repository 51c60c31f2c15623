// unary/threshold_backward against double-precision reference loops (binary arithmetic is
// tested with the pointwise engine).
#include "kernels/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::expand;
using testing::for_each_index;
using testing::get;
using testing::make_tensor;
using testing::permute;
using testing::round_to;
using testing::set;
using testing::slice;

using Index = std::vector<int64_t>;

TEST(Unary, ReluAndNegAcrossDtypes) {
  for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float16, DType::Int32, DType::Int64,
                      DType::Float64}) {
    std::mt19937 rng(5);
    auto in = make_tensor(dtype, {7, 41});
    testing::fill_random(in.view, rng, -10, 10);
    auto out = make_tensor(dtype, {41, 7});
    const TensorView out_t = permute(out.view, {1, 0});
    unary(UnaryOp::Relu, out_t, in.view);
    for_each_index(in.view, [&](const Index& i) {
      EXPECT_EQ(get(out_t, i), std::max(0.0, get(in.view, i))) << dtype_name(dtype);
    });
    auto before = make_tensor(dtype, {7, 41});
    before.storage = in.storage;
    unary(UnaryOp::Neg, in.view, in.view);  // in place
    for_each_index(in.view, [&](const Index& i) {
      EXPECT_EQ(get(in.view, i), -get(before.view, i)) << dtype_name(dtype);
    });
  }
}

TEST(Unary, ReluKeepsNaNAndNegativeZero) {
  auto in = make_tensor(DType::Float32, {3});
  auto out = make_tensor(DType::Float32, {3});
  set(in.view, {0}, std::nan(""));
  set(in.view, {1}, -0.0);
  set(in.view, {2}, -2.0);
  unary(UnaryOp::Relu, out.view, in.view);
  EXPECT_TRUE(std::isnan(get(out.view, {0})));
  EXPECT_TRUE(std::signbit(get(out.view, {1})));
  EXPECT_EQ(get(out.view, {2}), 0.0);
  auto scalar_in = make_tensor(DType::BFloat16, {});
  auto scalar_out = make_tensor(DType::BFloat16, {});
  set(scalar_in.view, {}, 3.0);
  unary(UnaryOp::Neg, scalar_out.view, scalar_in.view);
  EXPECT_EQ(get(scalar_out.view, {}), -3.0);
}

TEST(ThresholdBackward, PassesGradientWhereInputAboveThreshold) {
  for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float16}) {
    std::mt19937 rng(11);
    auto grad_out = make_tensor(dtype, {5, 300});
    auto self = make_tensor(dtype, {5, 300});
    auto grad_in = make_tensor(dtype, {5, 300});
    testing::fill_random(grad_out.view, rng, -4, 4);
    testing::fill_random(self.view, rng, -1, 1);
    set(self.view, {0, 0}, std::nan(""));
    set(self.view, {0, 1}, 0.0);
    threshold_backward(grad_in.view, grad_out.view, self.view, Scalar::from_double(0.0));
    for_each_index(self.view, [&](const Index& i) {
      const double x = get(self.view, i);
      const double expected = x <= 0.0 ? 0.0 : get(grad_out.view, i);
      EXPECT_EQ(get(grad_in.view, i), expected);
    });
    // Broadcast self (stride 0) and in-place on grad_out.
    const TensorView row = expand(slice(self.view, 0, 1, 1), {5, 300});
    auto expected = make_tensor(dtype, {5, 300});
    expected.storage = grad_out.storage;
    threshold_backward(grad_out.view, grad_out.view, row, Scalar::from_double(0.25));
    for_each_index(row, [&](const Index& i) {
      const double want = get(row, i) <= 0.25 ? 0.0 : get(expected.view, i);
      EXPECT_EQ(get(grad_out.view, i), want);
    });
  }
}

}  // namespace
}  // namespace openneuron::kernels
