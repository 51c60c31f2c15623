// Philox known answers, stream reproducibility and layout, and distribution statistics.
#include "kernels/random/random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "kernels/random/philox.h"
#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::for_each_index;
using testing::get;
using testing::make_tensor;
using testing::permute;

using Index = std::vector<int64_t>;

// Random123's tests/kat_vectors, "philox4x32 10" lines: counter, key, expected output.
TEST(Philox, MatchesRandom123KnownAnswers) {
  struct Kat {
    PhiloxBlock counter;
    PhiloxKey key;
    PhiloxBlock expected;
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& kat : kats) EXPECT_EQ(philox4x32_10(kat.counter, kat.key), kat.expected);
}

std::vector<double> values_of(const TensorView& view) {
  std::vector<double> values;
  for_each_index(view, [&](const Index& i) { values.push_back(get(view, i)); });
  return values;
}

TEST(Random, OffsetIncrementCoversTheFill) {
  EXPECT_EQ(random_offset_increment(0), 0u);
  EXPECT_EQ(random_offset_increment(1), 1u);
  EXPECT_EQ(random_offset_increment(4), 1u);
  EXPECT_EQ(random_offset_increment(5), 2u);
  EXPECT_EQ(random_offset_increment(100000), 25000u);
}

TEST(Random, SameSeedAndOffsetReproduce) {
  auto first = make_tensor(DType::Float32, {1001});
  auto second = make_tensor(DType::Float32, {1001});
  uniform(first.view, 42, 7, -1.0, 1.0);
  uniform(second.view, 42, 7, -1.0, 1.0);
  EXPECT_EQ(values_of(first.view), values_of(second.view));
  normal(first.view, 42, 7, 0.0, 1.0);
  normal(second.view, 42, 7, 0.0, 1.0);
  EXPECT_EQ(values_of(first.view), values_of(second.view));
}

TEST(Random, DifferentOffsetsOrSeedsDiffer) {
  auto a = make_tensor(DType::Float32, {64});
  auto b = make_tensor(DType::Float32, {64});
  uniform(a.view, 42, 0, 0.0, 1.0);
  uniform(b.view, 42, random_offset_increment(64), 0.0, 1.0);
  EXPECT_NE(values_of(a.view), values_of(b.view));
  uniform(b.view, 43, 0, 0.0, 1.0);
  EXPECT_NE(values_of(a.view), values_of(b.view));
}

TEST(Random, ElementIUsesCounterOffsetPlusIOver4Lane_IMod4) {
  auto all = make_tensor(DType::Float32, {12});
  auto tail = make_tensor(DType::Float32, {8});
  uniform(all.view, 5, 10, 0.0, 1.0);
  uniform(tail.view, 5, 11, 0.0, 1.0);  // one block later = four elements later
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(get(tail.view, {i}), get(all.view, {i + 4}));
  const PhiloxBlock block = philox_block(5, 10 + 2);
  EXPECT_EQ(get(all.view, {9}), (block[1] >> 8) * 0x1p-24);
}

TEST(Random, StridedDestinationGetsRowMajorValues) {
  auto dense = make_tensor(DType::Float32, {6, 5});
  auto storage = make_tensor(DType::Float32, {5, 6});
  const TensorView transposed = permute(storage.view, {1, 0});
  normal(dense.view, 9, 3, 1.0, 2.0);
  normal(transposed, 9, 3, 1.0, 2.0);
  EXPECT_EQ(values_of(dense.view), values_of(transposed));
}

void expect_moments(const std::vector<double>& values, double mean, double variance,
                    const char* what) {
  double sum = 0;
  for (double v : values) sum += v;
  const double sample_mean = sum / values.size();
  double squares = 0;
  for (double v : values) squares += (v - sample_mean) * (v - sample_mean);
  const double sample_variance = squares / (values.size() - 1);
  // Five standard errors of the mean; 3% on the variance (~7 standard errors at 100k).
  EXPECT_NEAR(sample_mean, mean, 5 * std::sqrt(variance / values.size())) << what;
  EXPECT_NEAR(sample_variance, variance, 0.03 * variance) << what;
}

TEST(Random, UniformStatisticsAndRange) {
  for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float16, DType::Float64}) {
    auto t = make_tensor(dtype, {100000});
    uniform(t.view, 1234, 0, -2.0, 3.0);
    const std::vector<double> values = values_of(t.view);
    for (double v : values) {
      ASSERT_GE(v, -2.0) << dtype_name(dtype);
      ASSERT_LT(v, 3.0) << dtype_name(dtype);
    }
    expect_moments(values, 0.5, 25.0 / 12.0, dtype_name(dtype));
  }
}

TEST(Random, UniformNeverReachesHighAfterRounding) {
  // In bfloat16 [1, 2) has 128 values; fp32 draws near 2 would round up to 2.
  auto t = make_tensor(DType::BFloat16, {20000});
  uniform(t.view, 77, 0, 1.0, 2.0);
  double max = 0;
  for (double v : values_of(t.view)) max = std::max(max, v);
  EXPECT_LT(max, 2.0);
  EXPECT_EQ(max, 2.0 - 1.0 / 128);
  auto f = make_tensor(DType::Float32, {40000});
  uniform(f.view, 78, 0, 1.0, 2.0);  // 1 + (1 - 2^-24) rounds to 2 in fp32
  for (double v : values_of(f.view)) ASSERT_LT(v, 2.0);
  auto e4 = make_tensor(DType::Float8E4M3, {1000});
  uniform(e4.view, 79, 0, 0.0, 1.0);
  for (double v : values_of(e4.view)) ASSERT_TRUE(v >= 0.0 && v < 1.0);
}

TEST(Random, NormalStatistics) {
  for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float64}) {
    auto t = make_tensor(dtype, {100000});
    normal(t.view, 2024, 11, 3.0, 2.0);
    const std::vector<double> values = values_of(t.view);
    for (double v : values) ASSERT_TRUE(std::isfinite(v));
    expect_moments(values, 3.0, 4.0, dtype_name(dtype));
    // Tails: about 4.55% of samples lie beyond two standard deviations.
    int64_t beyond = 0;
    for (double v : values) beyond += std::fabs(v - 3.0) > 4.0;
    EXPECT_NEAR(beyond / 100000.0, 0.0455, 0.004) << dtype_name(dtype);
  }
}

TEST(Random, ZeroSizeZeroDimAndNonFloating) {
  auto empty = make_tensor(DType::Float32, {0, 3});
  uniform(empty.view, 1, 0, 0.0, 1.0);
  normal(empty.view, 1, 0, 0.0, 1.0);
  auto scalar = make_tensor(DType::Float32, {});
  uniform(scalar.view, 1, 0, 5.0, 6.0);
  EXPECT_GE(get(scalar.view, {}), 5.0);
  EXPECT_LT(get(scalar.view, {}), 6.0);
  auto ints = make_tensor(DType::Int32, {3});
  EXPECT_THROW(uniform(ints.view, 1, 0, 0.0, 1.0), std::invalid_argument);
  EXPECT_THROW(normal(ints.view, 1, 0, 0.0, 1.0), std::invalid_argument);
}

}  // namespace
}  // namespace openneuron::kernels
