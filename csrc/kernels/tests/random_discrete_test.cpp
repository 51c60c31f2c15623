// Bernoulli, dropout, integers, permutations, exponential, moment-wise normal, multinomial:
// reproducibility, layout independence, references in double, and distribution statistics.
#include "kernels/random/random_discrete.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "kernels/random/philox.h"
#include "kernels/random/random.h"
#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::for_each_index;
using testing::get;
using testing::make_tensor;
using testing::permute;
using testing::set;

using Index = std::vector<int64_t>;

std::vector<double> values_of(const TensorView& view) {
  std::vector<double> values;
  for_each_index(view, [&](const Index& i) { values.push_back(get(view, i)); });
  return values;
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double variance_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / static_cast<double>(v.size());
}

// The reference 32-bit uniform of element i, as the kernels define it.
double reference_unit(uint64_t seed, uint64_t offset, uint64_t i) {
  return static_cast<double>(philox_block(seed, offset + i / 4)[i % 4] >> 8) / 16777216.0;
}

uint64_t reference_draw64(uint64_t seed, uint64_t offset, uint64_t i) {
  const PhiloxBlock block = philox_block(seed, offset + i / 2);
  const unsigned lane = static_cast<unsigned>(i % 2) * 2;
  return static_cast<uint64_t>(block[lane]) | (static_cast<uint64_t>(block[lane + 1]) << 32);
}

TEST(RandomDiscrete, OffsetIncrement64) {
  EXPECT_EQ(random_offset_increment_64(0), 0u);
  EXPECT_EQ(random_offset_increment_64(1), 1u);
  EXPECT_EQ(random_offset_increment_64(2), 1u);
  EXPECT_EQ(random_offset_increment_64(3), 2u);
}

TEST(RandomDiscrete, BernoulliScalarMatchesReferenceForEveryDtype) {
  for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float16, DType::Int64, DType::Int32,
                      DType::UInt8, DType::Bool}) {
    auto t = make_tensor(dtype, {1003});
    bernoulli_scalar(t.view, 7, 3, 0.3);
    const auto values = values_of(t.view);
    for (size_t i = 0; i < values.size(); ++i) {
      ASSERT_EQ(values[i], reference_unit(7, 3, i) < 0.3 ? 1.0 : 0.0)
          << dtype_name(dtype) << " " << i;
    }
  }
}

TEST(RandomDiscrete, BernoulliStatisticsAndExtremes) {
  auto t = make_tensor(DType::Float32, {200000});
  bernoulli_scalar(t.view, 1, 0, 0.25);
  const auto values = values_of(t.view);
  EXPECT_NEAR(mean_of(values), 0.25, 0.005);
  bernoulli_scalar(t.view, 1, 0, 0.0);
  EXPECT_EQ(mean_of(values_of(t.view)), 0.0);
  bernoulli_scalar(t.view, 1, 0, 1.0);
  EXPECT_EQ(mean_of(values_of(t.view)), 1.0);
}

TEST(RandomDiscrete, BernoulliTensorUsesEachProbability) {
  auto probs = make_tensor(DType::Float32, {4, 3});
  for_each_index(probs.view, [&](const Index& i) { set(probs.view, i, (i[0] * 3 + i[1]) / 11.0); });
  auto t = make_tensor(DType::Float16, {4, 3});
  bernoulli_tensor(t.view, probs.view, 5, 9);
  uint64_t k = 0;
  for_each_index(t.view, [&](const Index& i) {
    EXPECT_EQ(get(t.view, i),
              reference_unit(5, 9, k) < static_cast<float>(get(probs.view, i)) ? 1 : 0);
    ++k;
  });
}

TEST(RandomDiscrete, NonContiguousOutputGetsRowMajorValues) {
  auto dense = make_tensor(DType::Float32, {6, 5});
  auto strided = make_tensor(DType::Float32, {5, 6});
  const TensorView transposed = permute(strided.view, {1, 0});  // shape [6, 5], not contiguous
  random_integers(dense.view, 11, 2, -3, 10);
  random_integers(transposed, 11, 2, -3, 10);
  EXPECT_EQ(values_of(dense.view), values_of(transposed));
}

TEST(RandomDiscrete, DropoutForwardAndBackward) {
  auto input = make_tensor(DType::Float32, {5000});
  for_each_index(input.view, [&](const Index& i) { set(input.view, i, 0.5 + i[0] % 7); });
  auto output = make_tensor(DType::Float32, {5000});
  auto mask = make_tensor(DType::Bool, {5000});
  const double p = 0.2, scale = 1.0 / 0.8;
  dropout_forward(input.view, output.view, mask.view, 3, 4, p, scale);
  int64_t kept = 0;
  for_each_index(input.view, [&](const Index& i) {
    const bool keep = reference_unit(3, 4, i[0]) >= p;
    ASSERT_EQ(get(mask.view, i), keep ? 1.0 : 0.0);
    EXPECT_FLOAT_EQ(
        get(output.view, i),
        keep ? static_cast<float>(get(input.view, i)) * static_cast<float>(scale) : 0.0);
    kept += keep;
  });
  EXPECT_NEAR(kept / 5000.0, 0.8, 0.03);
  auto grad = make_tensor(DType::BFloat16, {5000});
  auto grad_in = make_tensor(DType::BFloat16, {5000});
  for_each_index(grad.view, [&](const Index& i) { set(grad.view, i, 1.0 + i[0] % 3); });
  dropout_backward(grad.view, mask.view, grad_in.view, scale);
  for_each_index(grad.view, [&](const Index& i) {
    const double expected = testing::round_to(
        DType::BFloat16, get(grad.view, i) * get(mask.view, i) * static_cast<float>(scale));
    EXPECT_EQ(get(grad_in.view, i), expected);
  });
}

TEST(RandomDiscrete, RandomIntegersStayInRangeAndCoverIt) {
  auto t = make_tensor(DType::Int64, {20000});
  random_integers(t.view, 9, 0, -5, 12);  // [-5, 7)
  const auto values = values_of(t.view);
  std::set<double> seen(values.begin(), values.end());
  EXPECT_EQ(seen.size(), 12u);
  EXPECT_EQ(*seen.begin(), -5);
  EXPECT_EQ(*seen.rbegin(), 6);
  EXPECT_NEAR(mean_of(values), 0.5, 0.1);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(values[i], -5 + static_cast<double>(reference_draw64(9, 0, i) % 12));
  }
}

TEST(RandomDiscrete, RandomIntegersFullRangeUsesAllBits) {
  auto t = make_tensor(DType::Int64, {64});
  random_integers(t.view, 2, 0, INT64_MIN, 0);
  const auto* data = static_cast<const int64_t*>(t.view.data);
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(static_cast<uint64_t>(data[i]),
              static_cast<uint64_t>(INT64_MIN) + reference_draw64(2, 0, i));
  }
}

TEST(RandomDiscrete, PermutationIsAPermutationAndDependsOnSeed) {
  for (DType dtype : {DType::Int64, DType::Int32, DType::Float32}) {
    auto a = make_tensor(dtype, {257});
    random_permutation(a.view, 4, 0);
    auto values = values_of(a.view);
    auto sorted = values;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], static_cast<double>(i));
    auto b = make_tensor(dtype, {257});
    random_permutation(b.view, 5, 0);
    EXPECT_NE(values, values_of(b.view));
  }
}

TEST(RandomDiscrete, ExponentialMoments) {
  auto t = make_tensor(DType::Float32, {200000});
  exponential(t.view, 8, 1, 2.0);
  const auto values = values_of(t.view);
  EXPECT_GE(*std::min_element(values.begin(), values.end()), 0.0);
  EXPECT_NEAR(mean_of(values), 0.5, 0.01);
  EXPECT_NEAR(variance_of(values), 0.25, 0.01);
  EXPECT_NEAR(values[3], -std::log1p(-reference_unit(8, 1, 3)) / 2.0, 1e-6);
}

TEST(RandomDiscrete, NormalWithMomentsMatchesStandardNormalStream) {
  // With scalar moments (0, 1) the values equal normal() from random.h on the same stream.
  auto expected = make_tensor(DType::Float32, {1001});
  auto actual = make_tensor(DType::Float32, {1001});
  normal(expected.view, 6, 2, 0.0, 1.0);
  normal_with_moments(actual.view, nullptr, 0.0, nullptr, 1.0, 6, 2);
  EXPECT_EQ(values_of(expected.view), values_of(actual.view));
  // Per-element moments: a broadcast mean row and a per-element std.
  auto mean = make_tensor(DType::Float32, {1, 4});
  auto stdev = make_tensor(DType::Float32, {50000, 4});
  for (int j = 0; j < 4; ++j) set(mean.view, {0, j}, j * 10.0);
  for_each_index(stdev.view, [&](const Index& i) { set(stdev.view, i, 1.0 + i[1]); });
  TensorView mean_b = testing::expand(mean.view, {50000, 4});
  auto out = make_tensor(DType::BFloat16, {50000, 4});
  normal_with_moments(out.view, &mean_b, 0.0, &stdev.view, 0.0, 1, 0);
  for (int j = 0; j < 4; ++j) {
    std::vector<double> column;
    for (int64_t r = 0; r < 50000; ++r) column.push_back(get(out.view, {r, j}));
    EXPECT_NEAR(mean_of(column), j * 10.0, 0.05 + 0.02 * (1 + j));
    EXPECT_NEAR(std::sqrt(variance_of(column)), 1.0 + j, 0.03 * (1 + j) + 0.05);
  }
}

TEST(RandomDiscrete, MultinomialWithReplacementFollowsWeights) {
  auto probs = make_tensor(DType::Float32, {2, 4});
  const double weights[2][4] = {{1, 0, 3, 0}, {0, 0, 0, 5}};
  for (int r = 0; r < 2; ++r)
    for (int j = 0; j < 4; ++j) set(probs.view, {r, j}, weights[r][j]);
  auto out = make_tensor(DType::Int64, {2, 40000});
  multinomial(probs.view, out.view, 40000, true, 3, 0);
  int64_t counts[4] = {};
  for (int64_t s = 0; s < 40000; ++s) counts[static_cast<int>(get(out.view, {0, s}))]++;
  EXPECT_EQ(counts[1] + counts[3], 0);
  EXPECT_NEAR(counts[2] / 40000.0, 0.75, 0.01);
  for (int64_t s = 0; s < 40000; ++s) ASSERT_EQ(get(out.view, {1, s}), 3);
}

TEST(RandomDiscrete, MultinomialWithoutReplacementDrawsDistinctNonzeroCategories) {
  auto probs = make_tensor(DType::Float32, {300, 6});
  for_each_index(probs.view,
                 [&](const Index& i) { set(probs.view, i, i[1] == 2 ? 0.0 : 1.0 + i[1]); });
  auto out = make_tensor(DType::Int64, {300, 5});
  multinomial(probs.view, out.view, 5, false, 3, 0);
  int64_t first_is_heaviest = 0;
  for (int64_t r = 0; r < 300; ++r) {
    std::set<double> seen;
    for (int64_t s = 0; s < 5; ++s) seen.insert(get(out.view, {r, s}));
    ASSERT_EQ(seen.size(), 5u);
    EXPECT_EQ(seen.count(2.0), 0u);
    first_is_heaviest += get(out.view, {r, 0}) == 5;
  }
  // Category 5 (weight 6 of 19 nonzero) comes first about 6/19 of the time.
  EXPECT_NEAR(first_is_heaviest / 300.0, 6.0 / 19.0, 0.1);
}

TEST(RandomDiscrete, ParallelAndSerialPathsAgree) {
  // A large dense fill (parallel chunks) equals the same fill through a strided view.
  auto dense = make_tensor(DType::Float32, {300, 400});
  auto strided = make_tensor(DType::Float32, {400, 300});
  const TensorView transposed = permute(strided.view, {1, 0});
  exponential(dense.view, 12, 5, 1.0);
  exponential(transposed, 12, 5, 1.0);
  EXPECT_EQ(values_of(dense.view), values_of(transposed));
}

}  // namespace
}  // namespace openneuron::kernels
