// The shrink, threshold, log-sigmoid, prelu and glu ops of kernels::pointwise against
// double-precision formulas, at fp32/bf16/fp16 with a strided output.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "kernels/pointwise/pointwise.h"
#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::close;
using testing::fill_random;
using testing::for_each_index;
using testing::get;
using testing::make_tensor;
using testing::permute;
using Index = std::vector<int64_t>;

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

struct Case {
  const char* name;
  PointwiseOp op;
  int arity;
  std::function<double(double, double, double)> reference;
  PointwiseParams params;
};

PointwiseParams params_of(std::vector<double> values) {
  PointwiseParams p;
  for (size_t k = 0; k < values.size(); ++k) {
    p.values[k] = Scalar::from_double(values[k]);
    p.present[k] = true;
  }
  return p;
}

TEST(Activation, NewOpsMatchReference) {
  const double lambd = 0.5;
  const std::vector<Case> cases = {
      {"hardshrink", PointwiseOp::Hardshrink, 1,
       [=](double x, double, double) { return std::fabs(x) <= lambd ? 0.0 : x; },
       params_of({lambd})},
      {"softshrink", PointwiseOp::Softshrink, 1,
       [=](double x, double, double) {
         return x > lambd ? x - lambd : (x < -lambd ? x + lambd : 0.0);
       },
       params_of({lambd})},
      {"threshold", PointwiseOp::Threshold, 1,
       [](double x, double, double) { return x <= 0.25 ? -3.0 : x; }, params_of({0.25, -3.0})},
      {"log_sigmoid",
       PointwiseOp::LogSigmoid,
       1,
       [](double x, double, double) { return std::log(sigmoid(x)); },
       {}},
      {"shrink_backward", PointwiseOp::HardshrinkBackward, 2,
       [=](double g, double x, double) { return std::fabs(x) <= lambd ? 0.0 : g; },
       params_of({lambd})},
      {"log_sigmoid_backward",
       PointwiseOp::LogSigmoidBackward,
       2,
       [](double g, double x, double) { return g * (1 - sigmoid(x)); },
       {}},
      {"prelu",
       PointwiseOp::Prelu,
       2,
       [](double x, double w, double) { return x > 0 ? x : w * x; },
       {}},
      {"prelu_weight_grad",
       PointwiseOp::PreluWeightGrad,
       2,
       [](double g, double x, double) { return x > 0 ? 0.0 : g * x; },
       {}},
      {"glu",
       PointwiseOp::SigmoidGate,
       2,
       [](double a, double b, double) { return a * sigmoid(b); },
       {}},
      {"prelu_input_grad",
       PointwiseOp::PreluInputGrad,
       3,
       [](double g, double x, double w) { return x > 0 ? g : w * g; },
       {}},
      {"glu_backward",
       PointwiseOp::SigmoidGateBackward,
       3,
       [](double g, double a, double b) { return g * a * sigmoid(b) * (1 - sigmoid(b)); },
       {}},
  };
  std::mt19937 rng(7);
  for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float16}) {
    for (const Case& c : cases) {
      std::vector<testing::HostTensor> inputs;
      std::vector<TensorView> views;
      for (int k = 0; k < c.arity; ++k) {
        inputs.push_back(make_tensor(dtype, {9, 40}));
        fill_random(inputs.back().view, rng, -6, 6);
        views.push_back(inputs.back().view);
      }
      auto out = make_tensor(dtype, {40, 9});
      const TensorView out_t = permute(out.view, {1, 0});
      pointwise(c.op, out_t, views.data(), c.arity, dtype, c.params);
      for_each_index(views[0], [&](const Index& i) {
        const double a = get(views[0], i);
        const double b = c.arity > 1 ? get(views[1], i) : 0.0;
        const double z = c.arity > 2 ? get(views[2], i) : 0.0;
        const double expected = c.reference(a, b, z);
        EXPECT_TRUE(close(dtype, get(out_t, i), expected))
            << c.name << " " << dtype_name(dtype) << " at (" << a << ", " << b << ", " << z
            << "): " << get(out_t, i) << " vs " << expected;
      });
    }
  }
}

TEST(Activation, LogSigmoidStaysFiniteForLargeInputs) {
  auto in = make_tensor(DType::Float32, {4});
  auto out = make_tensor(DType::Float32, {4});
  const double values[] = {-200.0, -40.0, 40.0, 200.0};
  for (int64_t k = 0; k < 4; ++k) testing::set(in.view, {k}, values[k]);
  pointwise(PointwiseOp::LogSigmoid, out.view, &in.view, 1, DType::Float32, {});
  EXPECT_FLOAT_EQ(get(out.view, {0}), -200.0);
  EXPECT_FLOAT_EQ(get(out.view, {1}), -40.0);
  EXPECT_NEAR(get(out.view, {2}), 0.0, 1e-12);
  EXPECT_EQ(get(out.view, {3}), 0.0);
}

TEST(Activation, SoftshrinkKeepsNaN) {
  auto in = make_tensor(DType::Float32, {1});
  auto out = make_tensor(DType::Float32, {1});
  testing::set(in.view, {0}, std::nan(""));
  pointwise(PointwiseOp::Softshrink, out.view, &in.view, 1, DType::Float32, params_of({0.5}));
  EXPECT_TRUE(std::isnan(get(out.view, {0})));
}

}  // namespace
}  // namespace openneuron::kernels
