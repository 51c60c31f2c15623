// kernels::pointwise and kernels::fused_adam against double-precision reference loops, over
// dtypes, broadcasting, strided and permuted layouts, large (threaded) sizes and in-place use.
#include "kernels/pointwise/pointwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/nn/fused_adam.h"
#include "kernels/nn/fused_sgd.h"
#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::close;
using testing::expand;
using testing::fill_random;
using testing::for_each_index;
using testing::get;
using testing::make_tensor;
using testing::permute;
using testing::set;

using Index = std::vector<int64_t>;

void run(PointwiseOp op, const TensorView& out, std::vector<TensorView> in, DType compute,
         PointwiseParams params = {}) {
  pointwise(op, out, in.data(), static_cast<int>(in.size()), compute, params);
}

TEST(Pointwise, UnaryFloatOpsMatchReference) {
  std::mt19937 rng(1);
  struct Case {
    PointwiseOp op;
    double (*reference)(double);
    double low, high;
  };
  const Case cases[] = {
      {PointwiseOp::Exp, [](double x) { return std::exp(x); }, -5, 5},
      {PointwiseOp::Log, [](double x) { return std::log(x); }, 0.1, 10},
      {PointwiseOp::Sqrt, [](double x) { return std::sqrt(x); }, 0, 10},
      {PointwiseOp::Tanh, [](double x) { return std::tanh(x); }, -3, 3},
      {PointwiseOp::Sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, -8, 8},
      {PointwiseOp::Erf, [](double x) { return std::erf(x); }, -3, 3},
      {PointwiseOp::Silu, [](double x) { return x / (1 + std::exp(-x)); }, -8, 8},
      {PointwiseOp::Floor, [](double x) { return std::floor(x); }, -5, 5},
  };
  for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float16}) {
    for (const Case& c : cases) {
      auto in = make_tensor(dtype, {7, 33});
      auto out = make_tensor(dtype, {33, 7});
      fill_random(in.view, rng, c.low, c.high);
      // Output transposed relative to input: exercises the strided gather/scatter path.
      const TensorView out_t = permute(out.view, {1, 0});
      run(c.op, out_t, {in.view}, dtype);
      for_each_index(in.view, [&](const Index& i) {
        const double expected = c.reference(get(in.view, i));
        EXPECT_TRUE(close(dtype, get(out_t, i), expected))
            << static_cast<int>(c.op) << " " << dtype_name(dtype) << " got " << get(out_t, i)
            << " expected " << expected;
      });
    }
  }
}

TEST(Pointwise, BinaryBroadcastMixedDtypesAndComparisons) {
  std::mt19937 rng(2);
  auto x = make_tensor(DType::Float32, {4, 1});
  auto y = make_tensor(DType::BFloat16, {1, 5});
  fill_random(x.view, rng, -3, 3);
  fill_random(y.view, rng, -3, 3);
  const TensorView xb = expand(x.view, {4, 5});
  const TensorView yb = expand(y.view, {4, 5});
  auto out = make_tensor(DType::Float32, {4, 5});
  auto mask = make_tensor(DType::Bool, {4, 5});
  run(PointwiseOp::Maximum, out.view, {xb, yb}, DType::Float32);
  run(PointwiseOp::Lt, mask.view, {xb, yb}, DType::Float32);
  for_each_index(out.view, [&](const Index& i) {
    EXPECT_EQ(get(out.view, i), std::max(get(xb, i), get(yb, i)));
    EXPECT_EQ(get(mask.view, i), get(xb, i) < get(yb, i) ? 1.0 : 0.0);
  });
}

TEST(Pointwise, IntegerModulusAndFloorDivisionFollowPython) {
  auto x = make_tensor(DType::Int32, {6});
  auto y = make_tensor(DType::Int64, {6});
  const double xs[] = {7, -7, 7, -7, 0, 5}, ys[] = {3, 3, -3, -3, 2, 1};
  for (int64_t i = 0; i < 6; ++i) {
    set(x.view, {i}, xs[i]);
    set(y.view, {i}, ys[i]);
  }
  auto rem = make_tensor(DType::Int64, {6});
  auto div = make_tensor(DType::Int64, {6});
  run(PointwiseOp::Remainder, rem.view, {x.view, y.view}, DType::Int64);
  run(PointwiseOp::DivFloor, div.view, {x.view, y.view}, DType::Int64);
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(get(div.view, {i}), std::floor(xs[i] / ys[i]));
    EXPECT_EQ(get(rem.view, {i}), xs[i] - ys[i] * std::floor(xs[i] / ys[i]));
  }
}

// 16-bit compute rounds every step of floor/trunc division to the format, as the CPU does; an
// fp32 compute of the same 16-bit operands rounds once. Cases where the two differ.
TEST(Pointwise, SixteenBitDivisionRoundsEachStep) {
  struct Case {
    DType dtype;
    PointwiseOp op;
    double x, y, each_step, once;
  };
  const Case cases[] = {
      {DType::Float16, PointwiseOp::DivTrunc, 57376, 3376, 17, 16},
      {DType::Float16, PointwiseOp::DivFloor, 29392, 12.9375, 2270, 2272},
      {DType::BFloat16, PointwiseOp::DivTrunc, 2.4590717922020944e+38, -8.2079828739718555e+37, -3,
       -2},
      {DType::BFloat16, PointwiseOp::DivFloor, 2.9508861506425132e+38, 9.34613434536269e+35, 314,
       316},
  };
  for (const Case& c : cases) {
    auto x = make_tensor(c.dtype, {1});
    auto y = make_tensor(c.dtype, {1});
    set(x.view, {0}, c.x);
    set(y.view, {0}, c.y);
    ASSERT_EQ(get(x.view, {0}), c.x);  // the operands are exact in the format
    ASSERT_EQ(get(y.view, {0}), c.y);
    auto out = make_tensor(c.dtype, {1});
    run(c.op, out.view, {x.view, y.view}, c.dtype);
    EXPECT_EQ(get(out.view, {0}), c.each_step) << c.x << " / " << c.y;
    run(c.op, out.view, {x.view, y.view}, DType::Float32);
    EXPECT_EQ(get(out.view, {0}), c.once) << c.x << " / " << c.y;
  }
}

TEST(Pointwise, LargeInPlaceRunsThreadedAndExact) {
  const int64_t n = 1 << 18;
  auto a = make_tensor(DType::Float32, {n});
  auto b = make_tensor(DType::Float32, {n});
  for (int64_t i = 0; i < n; ++i) {
    set(a.view, {i}, static_cast<double>(i % 1000) * 0.5);
    set(b.view, {i}, 2.0);
  }
  PointwiseParams value;
  value.values[0] = Scalar::from_double(0.25);
  value.present[0] = true;
  run(PointwiseOp::Addcmul, a.view, {a.view, b.view, b.view}, DType::Float32, value);
  for (int64_t i = 0; i < n; i += 977) {
    EXPECT_EQ(get(a.view, {i}), static_cast<double>(i % 1000) * 0.5 + 1.0);
  }
}

TEST(Pointwise, WhereClampAndMaskedFill) {
  auto cond = make_tensor(DType::Bool, {5});
  auto x = make_tensor(DType::Int64, {5});
  auto y = make_tensor(DType::Int64, {5});
  for (int64_t i = 0; i < 5; ++i) {
    set(cond.view, {i}, i % 2);
    set(x.view, {i}, i);
    set(y.view, {i}, -i);
  }
  auto out = make_tensor(DType::Int64, {5});
  run(PointwiseOp::Where, out.view, {cond.view, x.view, y.view}, DType::Int64);
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(get(out.view, {i}), i % 2 ? i : -i);
  PointwiseParams bounds;
  bounds.values[0] = Scalar::from_int(1);
  bounds.values[1] = Scalar::from_int(3);
  bounds.present[0] = bounds.present[1] = true;
  run(PointwiseOp::Clamp, out.view, {x.view}, DType::Int64, bounds);
  for (int64_t i = 0; i < 5; ++i)
    EXPECT_EQ(get(out.view, {i}), std::min<double>(std::max<double>(i, 1), 3));
}

TEST(Pointwise, FloatOnlyOpRejectsIntegerCompute) {
  auto x = make_tensor(DType::Int64, {3});
  EXPECT_THROW(run(PointwiseOp::Gelu, x.view, {x.view}, DType::Int64), std::invalid_argument);
}

TEST(FusedAdam, MatchesReferenceStep) {
  const int64_t n = 100;
  auto p = make_tensor(DType::Float32, {n});
  auto g = make_tensor(DType::Float32, {n});
  auto m = make_tensor(DType::Float32, {n});
  auto v = make_tensor(DType::Float32, {n});
  std::mt19937 rng(3);
  fill_random(p.view, rng, -1, 1);
  fill_random(g.view, rng, -1, 1);
  std::vector<double> p0(n), g0(n);
  for (int64_t i = 0; i < n; ++i) {
    p0[i] = get(p.view, {i});
    g0[i] = get(g.view, {i});
  }
  AdamHyperparameters hyper;
  hyper.lr = 0.01;
  hyper.weight_decay = 0.1;
  hyper.decoupled_weight_decay = true;
  fused_adam(p.view, g.view, m.view, v.view, v.view, 1.0, hyper, nullptr);
  for (int64_t i = 0; i < n; ++i) {
    const double decayed = p0[i] * (1 - 0.01 * 0.1);
    const double m1 = 0.1 * g0[i], v1 = 0.001 * g0[i] * g0[i];
    const double expected = decayed - (0.01 / 0.1) * m1 / (std::sqrt(v1) / std::sqrt(0.001) + 1e-8);
    EXPECT_NEAR(get(p.view, {i}), expected, 1e-5 * (1 + std::abs(expected)));
  }
}

// Two SGD steps (momentum, nesterov, weight decay, dampening, grad scale) against a double
// reference, on dense fp32 (threaded path) and on strided bf16 (gathered path).
TEST(FusedSgd, MatchesReferenceSteps) {
  for (DType dtype : {DType::Float32, DType::BFloat16}) {
    const int64_t n = 40000;  // above the threading grain
    auto p = make_tensor(dtype, {n});
    auto g = make_tensor(dtype, {2 * n});
    const TensorView grad = testing::slice(g.view, 0, 0, n, 2);  // every other element
    auto m = make_tensor(dtype, {n});
    std::mt19937 rng(4);
    fill_random(p.view, rng, -1, 1);
    fill_random(g.view, rng, -1, 1);
    std::vector<double> param(n), buffer(n, 0.0);
    for (int64_t i = 0; i < n; ++i) param[i] = get(p.view, {i});
    SgdHyperparameters hyper;
    hyper.lr = 0.05;
    hyper.weight_decay = 0.01;
    hyper.momentum = 0.9;
    hyper.dampening = 0.1;
    hyper.nesterov = true;
    const float scale = 4.0f;
    for (int step = 0; step < 2; ++step) {
      hyper.is_first_step = step == 0;
      std::vector<double> scaled(n);
      for (int64_t i = 0; i < n; ++i) scaled[i] = get(grad, {i}) / scale;
      fused_sgd(p.view, grad, m.view, hyper, &scale);
      for (int64_t i = 0; i < n; ++i) {
        double d = scaled[i] + param[i] * 0.01;
        buffer[i] = step == 0 ? d : buffer[i] * 0.9 + d * 0.9;
        d += buffer[i] * 0.9;
        param[i] -= 0.05 * d;
        const double tol = dtype == DType::Float32 ? 1e-5 : 2e-2;
        ASSERT_NEAR(get(p.view, {i}), param[i], tol * (1 + std::abs(param[i]))) << i;
        ASSERT_NEAR(get(grad, {i}), scaled[i], tol * (1 + std::abs(scaled[i])));
      }
      for (int64_t i = 0; i < n; ++i) param[i] = get(p.view, {i});  // continue from rounded
      for (int64_t i = 0; i < n; ++i) buffer[i] = get(m.view, {i});
    }
  }
}

TEST(FusedSgd, WithoutMomentumLeavesTheBufferAlone) {
  auto p = make_tensor(DType::Float32, {5});
  auto g = make_tensor(DType::Float32, {5});
  for (int64_t i = 0; i < 5; ++i) {
    set(p.view, {i}, 1.0);
    set(g.view, {i}, 0.5);
  }
  SgdHyperparameters hyper;
  hyper.lr = 0.1;
  hyper.maximize = true;
  fused_sgd(p.view, g.view, TensorView{}, hyper, nullptr);
  for (int64_t i = 0; i < 5; ++i) EXPECT_FLOAT_EQ(get(p.view, {i}), 1.05f);
}

TEST(Pointwise, ReluAcrossDtypesKeepsNaNAndNegativeZero) {
  for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float16, DType::Int32, DType::Int64,
                      DType::Float64}) {
    std::mt19937 rng(5);
    auto in = make_tensor(dtype, {7, 41});
    fill_random(in.view, rng, -10, 10);
    auto out = make_tensor(dtype, {41, 7});
    const TensorView out_t = permute(out.view, {1, 0});
    run(PointwiseOp::Relu, out_t, {in.view}, dtype);
    for_each_index(in.view, [&](const Index& i) {
      EXPECT_EQ(get(out_t, i), std::max(0.0, get(in.view, i))) << dtype_name(dtype);
    });
  }
  auto in = make_tensor(DType::Float32, {3});
  auto out = make_tensor(DType::Float32, {3});
  set(in.view, {0}, std::nan(""));
  set(in.view, {1}, -0.0);
  set(in.view, {2}, -2.0);
  run(PointwiseOp::Relu, out.view, {in.view}, DType::Float32);
  EXPECT_TRUE(std::isnan(get(out.view, {0})));
  EXPECT_TRUE(std::signbit(get(out.view, {1})));
  EXPECT_EQ(get(out.view, {2}), 0.0);
}

TEST(Pointwise, ThresholdBackwardPassesGradientWhereInputAboveThreshold) {
  for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float16}) {
    std::mt19937 rng(11);
    auto grad_out = make_tensor(dtype, {5, 300});
    auto self = make_tensor(dtype, {5, 300});
    auto grad_in = make_tensor(dtype, {5, 300});
    fill_random(grad_out.view, rng, -4, 4);
    fill_random(self.view, rng, -1, 1);
    set(self.view, {0, 0}, std::nan(""));
    set(self.view, {0, 1}, 0.0);
    PointwiseParams params;
    params.values[0] = Scalar::from_double(0.0);
    params.present[0] = true;
    run(PointwiseOp::ThresholdBackward, grad_in.view, {grad_out.view, self.view}, dtype, params);
    for_each_index(self.view, [&](const Index& i) {
      const double x = get(self.view, i);
      const double expected = x <= 0.0 ? 0.0 : get(grad_out.view, i);
      EXPECT_EQ(get(grad_in.view, i), expected);
    });
    // Broadcast self (stride 0) and in-place on grad_out.
    const TensorView row = expand(testing::slice(self.view, 0, 1, 1), {5, 300});
    auto expected = make_tensor(dtype, {5, 300});
    expected.storage = grad_out.storage;
    params.values[0] = Scalar::from_double(0.25);
    run(PointwiseOp::ThresholdBackward, grad_out.view, {grad_out.view, row}, dtype, params);
    for_each_index(row, [&](const Index& i) {
      const double want = get(row, i) <= 0.25 ? 0.0 : get(expected.view, i);
      EXPECT_EQ(get(grad_out.view, i), want);
    });
  }
}

}  // namespace
}  // namespace openneuron::kernels
