// binary/unary/threshold_backward against double-precision reference loops.
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

// The reference evaluates in double from the stored operands; integer outputs use
// truncating division and bool outputs are "nonzero".
double reference_binary(BinaryOp op, double x, double y, double alpha, DType out) {
  const bool integral = !is_floating(out);
  switch (op) {
    case BinaryOp::Add:
      return x + alpha * y;
    case BinaryOp::Sub:
      return x - alpha * y;
    case BinaryOp::Mul:
      return x * y;
    case BinaryOp::Div:
      return integral ? std::trunc(x / y) : x / y;
  }
  return 0;
}

void expect_binary_matches(BinaryOp op, const TensorView& out, const TensorView& a,
                           const TensorView& b, double alpha, const TensorView& a_before,
                           const TensorView& b_before) {
  for_each_index(out, [&](const Index& index) {
    const double expected = round_to(
        out.dtype,
        reference_binary(op, get(a_before, index), get(b_before, index), alpha, out.dtype));
    EXPECT_TRUE(testing::close(out.dtype, get(out, index), expected))
        << dtype_name(out.dtype) << " op " << static_cast<int>(op) << " got " << get(out, index)
        << " want " << expected;
  });
}

struct BinaryCase {
  BinaryOp op;
  double alpha;
};

const BinaryCase kBinaryCases[] = {{BinaryOp::Add, 1.0},
                                   {BinaryOp::Add, 2.0},
                                   {BinaryOp::Sub, 3.0},
                                   {BinaryOp::Mul, 1.0},
                                   {BinaryOp::Div, 1.0}};

class BinaryByDtype : public ::testing::TestWithParam<DType> {};

TEST_P(BinaryByDtype, ContiguousBroadcastAndStrided) {
  const DType dtype = GetParam();
  std::mt19937 rng(1234);
  for (const BinaryCase& c : kBinaryCases) {
    if (dtype == DType::Bool && c.op == BinaryOp::Div) continue;
    const double alpha = dtype == DType::Bool ? 1.0 : c.alpha;
    const Scalar scalar_alpha = is_floating(dtype) ? Scalar::from_double(alpha)
                                                   : Scalar::from_int(static_cast<int64_t>(alpha));
    // Divisors are kept away from zero so integer division is defined.
    const double low = dtype == DType::Bool ? 0 : 1, high = dtype == DType::Bool ? 2 : 9;

    // Contiguous, large enough for several chunks of the buffered path.
    auto a = make_tensor(dtype, {3, 347});
    auto b = make_tensor(dtype, {3, 347});
    auto out = make_tensor(dtype, {3, 347});
    testing::fill_random(a.view, rng, dtype == DType::Bool ? 0 : -9, high);
    testing::fill_random(b.view, rng, low, high);
    binary(c.op, out.view, a.view, b.view, scalar_alpha);
    expect_binary_matches(c.op, out.view, a.view, b.view, alpha, a.view, b.view);

    // Broadcast: a is [4,1,5] -> [4,3,5], b is [1,3,1] -> [4,3,5]; out is transposed.
    auto a_small = make_tensor(dtype, {4, 1, 5});
    auto b_small = make_tensor(dtype, {1, 3, 1});
    testing::fill_random(a_small.view, rng, -9, high);
    testing::fill_random(b_small.view, rng, low, high);
    auto out_storage = make_tensor(dtype, {5, 3, 4});
    const TensorView out_t = permute(out_storage.view, {2, 1, 0});
    const TensorView a_b = expand(a_small.view, {4, 3, 5});
    const TensorView b_b = expand(b_small.view, {4, 3, 5});
    binary(c.op, out_t, a_b, b_b, scalar_alpha);
    expect_binary_matches(c.op, out_t, a_b, b_b, alpha, a_b, b_b);

    // Sliced (every other column) operands.
    auto wide = make_tensor(dtype, {6, 10});
    testing::fill_random(wide.view, rng, low, high);
    const TensorView every_other = slice(wide.view, 1, 1, 5, 2);
    const TensorView transposed = permute(slice(slice(wide.view, 0, 0, 5), 1, 0, 6), {1, 0});
    auto out_small = make_tensor(dtype, {6, 5});
    binary(c.op, out_small.view, every_other, transposed, scalar_alpha);
    expect_binary_matches(c.op, out_small.view, every_other, transposed, alpha, every_other,
                          transposed);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, BinaryByDtype,
                         ::testing::Values(DType::Float32, DType::BFloat16, DType::Float16,
                                           DType::Float64, DType::Int32, DType::Int64, DType::Bool),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(Binary, InPlaceAliasing) {
  for (DType dtype : {DType::Float32, DType::BFloat16, DType::Int64}) {
    std::mt19937 rng(7);
    auto a = make_tensor(dtype, {2, 300});
    auto b = make_tensor(dtype, {2, 300});
    testing::fill_random(a.view, rng, 1, 5);
    testing::fill_random(b.view, rng, 1, 5);
    auto a_copy = make_tensor(dtype, {2, 300});
    auto b_copy = make_tensor(dtype, {2, 300});
    a_copy.storage = a.storage;
    b_copy.storage = b.storage;
    // out aliases a (a += 2 * b), then out aliases b (b = a * b).
    binary(BinaryOp::Add, a.view, a.view, b.view, Scalar::from_int(2));
    expect_binary_matches(BinaryOp::Add, a.view, a.view, b.view, 2.0, a_copy.view, b_copy.view);
    a_copy.storage = a.storage;
    binary(BinaryOp::Mul, b.view, a.view, b.view, Scalar::from_int(1));
    expect_binary_matches(BinaryOp::Mul, b.view, a.view, b.view, 1.0, a_copy.view, b_copy.view);
  }
}

TEST(Binary, MixedDtypesComputeInOutputType) {
  auto a = make_tensor(DType::Int64, {5});
  auto b = make_tensor(DType::BFloat16, {5});
  auto out = make_tensor(DType::Float32, {5});
  for (int64_t i = 0; i < 5; ++i) {
    set(a.view, {i}, static_cast<double>(i) * 1000003);
    set(b.view, {i}, 1.5 + i);
  }
  binary(BinaryOp::Mul, out.view, a.view, b.view, Scalar::from_int(1));
  expect_binary_matches(BinaryOp::Mul, out.view, a.view, b.view, 1.0, a.view, b.view);
  // bf16 output: 1 + 1/256 rounds to 1 once, from an fp32 result.
  auto x = make_tensor(DType::Float32, {});
  auto y = make_tensor(DType::Float32, {});
  auto z = make_tensor(DType::BFloat16, {});
  set(x.view, {}, 1.0);
  set(y.view, {}, 0.00390625);
  binary(BinaryOp::Add, z.view, x.view, y.view, Scalar::from_double(1.0));
  EXPECT_EQ(get(z.view, {}), 1.0);
  set(y.view, {}, 0.01171875);
  binary(BinaryOp::Add, z.view, x.view, y.view, Scalar::from_double(1.0));
  EXPECT_EQ(get(z.view, {}), 1.015625);
}

TEST(Binary, ZeroSizeAndZeroDim) {
  auto empty = make_tensor(DType::Float32, {3, 0});
  binary(BinaryOp::Add, empty.view, empty.view, empty.view, Scalar::from_int(1));
  auto a = make_tensor(DType::Float32, {});
  auto b = make_tensor(DType::Float16, {});
  auto out = make_tensor(DType::Float32, {});
  set(a.view, {}, 6.0);
  set(b.view, {}, 4.0);
  binary(BinaryOp::Div, out.view, a.view, b.view, Scalar::from_int(1));
  EXPECT_EQ(get(out.view, {}), 1.5);
}

TEST(Binary, FloatSpecialsAndIntegerDivision) {
  auto a = make_tensor(DType::Float32, {3});
  auto b = make_tensor(DType::Float32, {3});
  auto out = make_tensor(DType::Float32, {3});
  set(a.view, {0}, 1.0);
  set(a.view, {1}, 0.0);
  set(a.view, {2}, -7.0);
  binary(BinaryOp::Div, out.view, a.view, b.view, Scalar::from_int(1));
  EXPECT_EQ(get(out.view, {0}), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(get(out.view, {1})));
  auto ia = make_tensor(DType::Int64, {2});
  auto ib = make_tensor(DType::Int64, {2});
  auto iout = make_tensor(DType::Int64, {2});
  set(ia.view, {0}, -7);
  set(ib.view, {0}, 2);
  set(ia.view, {1}, 7);
  set(ib.view, {1}, -2);
  binary(BinaryOp::Div, iout.view, ia.view, ib.view, Scalar::from_int(1));
  EXPECT_EQ(get(iout.view, {0}), -3);  // truncation toward zero
  EXPECT_EQ(get(iout.view, {1}), -3);
}

TEST(Binary, LargeFloat32FastPathWithScalarOperand) {
  std::mt19937 rng(99);
  auto a = make_tensor(DType::Float32, {10007});
  auto s = make_tensor(DType::Float32, {1});
  auto out = make_tensor(DType::Float32, {10007});
  testing::fill_random(a.view, rng, -3, 3);
  set(s.view, {0}, 0.75);
  const TensorView scalar = expand(s.view, {10007});
  binary(BinaryOp::Sub, out.view, a.view, scalar, Scalar::from_double(0.5));
  expect_binary_matches(BinaryOp::Sub, out.view, a.view, scalar, 0.5, a.view, scalar);
  binary(BinaryOp::Mul, out.view, scalar, a.view, Scalar::from_double(1.0));
  expect_binary_matches(BinaryOp::Mul, out.view, scalar, a.view, 1.0, scalar, a.view);
}

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
