// softmax/log_softmax forward and backward against double-precision reference loops.
#include "kernels/nn/softmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "kernels/core/vector_exp.h"
#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::for_each_index;
using testing::get;
using testing::make_tensor;
using testing::permute;
using testing::set;
using testing::slice;

using Index = std::vector<int64_t>;

// Calls fn(slice_indices) for every slice along dim of view.
void for_each_slice(const TensorView& view, int dim,
                    const std::function<void(const std::vector<Index>&)>& fn) {
  TensorView outer = view;
  outer.sizes[dim] = 1;
  for_each_index(outer, [&](const Index& start) {
    std::vector<Index> members;
    for (int64_t j = 0; j < view.sizes[dim]; ++j) {
      Index index = start;
      index[dim] = j;
      members.push_back(index);
    }
    fn(members);
  });
}

void expect_softmax(const TensorView& out, const TensorView& in, int dim, bool log) {
  for_each_slice(in, dim, [&](const std::vector<Index>& members) {
    double max = -std::numeric_limits<double>::infinity();
    for (const Index& i : members) max = std::max(max, get(in, i));
    double sum = 0;
    for (const Index& i : members) sum += std::exp(get(in, i) - max);
    for (const Index& i : members) {
      const double x = get(in, i) - max;
      const double expected = log ? x - std::log(sum) : std::exp(x) / sum;
      EXPECT_TRUE(testing::close(out.dtype, get(out, i), expected))
          << dtype_name(out.dtype) << " dim " << dim << " got " << get(out, i) << " want "
          << expected;
    }
  });
}

void expect_softmax_backward(const TensorView& grad_in, const TensorView& grad_out,
                             const TensorView& out, int dim, bool log) {
  for_each_slice(out, dim, [&](const std::vector<Index>& members) {
    double sum = 0;
    for (const Index& i : members) {
      sum += log ? get(grad_out, i) : get(grad_out, i) * get(out, i);
    }
    for (const Index& i : members) {
      const double g = get(grad_out, i), y = get(out, i);
      const double expected = log ? g - std::exp(y) * sum : y * (g - sum);
      EXPECT_NEAR(get(grad_in, i), expected, testing::tolerance(grad_in.dtype, 4 * sum))
          << dtype_name(grad_in.dtype) << " dim " << dim;
    }
  });
}

TEST(VectorExp, WithinTwoUlpAndExactSpecials) {
  // Every 97th fp32 value in [-104, 89]: error measured against double exp, in fp32 ulps.
  double worst_ulps = 0;
  for (float x = -104.0f; x < 89.0f;
       x = std::nextafter(x + 97 * (std::fabs(x) * 0x1p-23f + 0x1p-126f), 100.f)) {
    const double exact = std::exp(static_cast<double>(x));
    const float got = vector_exp(x);
    if (exact > std::numeric_limits<float>::max()) {
      ASSERT_TRUE(std::isinf(got)) << x;
      continue;
    }
    const float rounded = static_cast<float>(exact);
    const double ulp = std::max(static_cast<double>(std::nextafter(rounded, INFINITY) - rounded),
                                static_cast<double>(std::numeric_limits<float>::denorm_min()));
    worst_ulps = std::max(worst_ulps, std::fabs(got - exact) / ulp);
  }
  EXPECT_LE(worst_ulps, 2.0);
  EXPECT_EQ(vector_exp(0.0f), 1.0f);
  EXPECT_EQ(vector_exp(-INFINITY), 0.0f);
  EXPECT_EQ(vector_exp(INFINITY), INFINITY);
  EXPECT_EQ(vector_exp(-200.0f), 0.0f);
  EXPECT_TRUE(std::isnan(vector_exp(NAN)));
}

class SoftmaxByDtype : public ::testing::TestWithParam<DType> {};

TEST_P(SoftmaxByDtype, EveryDimForwardAndBackward) {
  const DType dtype = GetParam();
  std::mt19937 rng(17);
  auto in = make_tensor(dtype, {3, 4, 33});
  testing::fill_random(in.view, rng, -6, 6);
  for (bool log : {false, true}) {
    for (int dim : {0, 1, 2, -1}) {
      const int d = dim < 0 ? dim + 3 : dim;
      auto out = make_tensor(dtype, {3, 4, 33});
      softmax(out.view, in.view, dim, log);
      expect_softmax(out.view, in.view, d, log);

      auto grad_out = make_tensor(dtype, {3, 4, 33});
      auto grad_in = make_tensor(dtype, {3, 4, 33});
      testing::fill_random(grad_out.view, rng, -1, 1);
      softmax_backward(grad_in.view, grad_out.view, out.view, dim, log);
      expect_softmax_backward(grad_in.view, grad_out.view, out.view, d, log);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, SoftmaxByDtype,
                         ::testing::Values(DType::Float32, DType::BFloat16, DType::Float16,
                                           DType::Float64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(Softmax, StridedViewsAndMixedDtypes) {
  std::mt19937 rng(2);
  auto storage = make_tensor(DType::Float32, {20, 7});
  testing::fill_random(storage.view, rng, -3, 3);
  const TensorView in = permute(slice(storage.view, 0, 1, 9, 2), {1, 0});  // [7, 9]
  auto out_storage = make_tensor(DType::BFloat16, {9, 7});
  const TensorView out = permute(out_storage.view, {1, 0});
  for (int dim : {0, 1}) {
    softmax(out, in, dim, false);
    expect_softmax(out, in, dim, false);
  }
}

TEST(Softmax, LargeAndInfiniteInputs) {
  auto in = make_tensor(DType::Float32, {2, 3});
  auto out = make_tensor(DType::Float32, {2, 3});
  const double inf = std::numeric_limits<double>::infinity();
  const double row0[] = {1000, 1001, 1002};
  const double row1[] = {-inf, 0, -inf};
  for (int64_t j = 0; j < 3; ++j) {
    set(in.view, {0, j}, row0[j]);
    set(in.view, {1, j}, row1[j]);
  }
  softmax(out.view, in.view, 1, false);
  expect_softmax(out.view, in.view, 1, false);
  EXPECT_EQ(get(out.view, {1, 1}), 1.0);
  EXPECT_EQ(get(out.view, {1, 0}), 0.0);
  softmax(out.view, in.view, 1, true);
  EXPECT_EQ(get(out.view, {1, 0}), -inf);
  EXPECT_NEAR(get(out.view, {0, 2}), -std::log(1 + std::exp(-1) + std::exp(-2)), 1e-6);
}

TEST(Softmax, ZeroDimAndZeroSize) {
  auto in = make_tensor(DType::Float32, {});
  auto out = make_tensor(DType::Float32, {});
  set(in.view, {}, 42.0);
  softmax(out.view, in.view, 0, false);
  EXPECT_EQ(get(out.view, {}), 1.0);
  softmax(out.view, in.view, -1, true);
  EXPECT_EQ(get(out.view, {}), 0.0);
  auto empty_in = make_tensor(DType::Float32, {0, 4});
  auto empty_out = make_tensor(DType::Float32, {0, 4});
  softmax(empty_out.view, empty_in.view, 1, false);
  auto no_classes = make_tensor(DType::Float32, {4, 0});
  softmax(no_classes.view, no_classes.view, 1, true);
  softmax_backward(no_classes.view, no_classes.view, no_classes.view, 1, false);
}

TEST(Softmax, InPlace) {
  std::mt19937 rng(9);
  auto data = make_tensor(DType::Float32, {5, 40});
  testing::fill_random(data.view, rng, -2, 2);
  auto original = make_tensor(DType::Float32, {5, 40});
  original.storage = data.storage;
  softmax(data.view, data.view, 1, true);
  expect_softmax(data.view, original.view, 1, true);
}

}  // namespace
}  // namespace openneuron::kernels
