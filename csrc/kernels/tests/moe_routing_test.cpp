// The kernels a Mixture-of-Experts layer routes with, against reference loops: grouped matrix
// products (every layout, empty groups, clamped offsets), histc, bincount and isin.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/matmul/grouped_gemm.h"
#include "kernels/reduce/histogram.h"
#include "kernels/shape/membership.h"
#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::get;
using testing::make_tensor;
using testing::set;

testing::HostTensor offsets_of(const std::vector<int32_t>& ends) {
  auto offsets = make_tensor(DType::Int32, {static_cast<int64_t>(ends.size())});
  for (size_t g = 0; g < ends.size(); ++g) {
    set(offsets.view, {static_cast<int64_t>(g)}, ends[g]);
  }
  return offsets;
}

// sum_k a(i, k) * b(k, j) in double.
template <typename A, typename B>
double dot(int64_t k_begin, int64_t k_end, A&& a, B&& b) {
  double sum = 0;
  for (int64_t k = k_begin; k < k_end; ++k) sum += a(k) * b(k);
  return sum;
}

TEST(GroupedGemm, TokensTimesExpertsUseEachGroupsWeightsAndZeroTheTail) {
  std::mt19937 rng(3);
  auto a = testing::random_tensor(DType::Float32, {10, 6}, rng, -1, 1);
  auto b = testing::random_tensor(DType::Float32, {3, 6, 4}, rng, -1, 1);
  auto out = make_tensor(DType::Float32, {10, 4});
  testing::fill_random(out.view, rng, 100, 200);  // garbage the kernel must overwrite
  auto offsets = offsets_of({3, 3, 8});           // expert 1 gets no tokens; rows 8, 9 are past
  grouped_gemm(out.view, a.view, b.view, &offsets.view);
  const int64_t group_of_row[10] = {0, 0, 0, 2, 2, 2, 2, 2, -1, -1};
  for (int64_t i = 0; i < 10; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      const int64_t g = group_of_row[i];
      const double expected = g < 0 ? 0.0
                                    : dot(
                                          0, 6, [&](int64_t k) { return get(a.view, {i, k}); },
                                          [&](int64_t k) { return get(b.view, {g, k, j}); });
      EXPECT_NEAR(get(out.view, {i, j}), expected, 1e-5) << i << "," << j;
    }
  }
}

TEST(GroupedGemm, ExpertsTimesTokensSplitTheColumns) {
  std::mt19937 rng(4);
  auto a = testing::random_tensor(DType::BFloat16, {2, 3, 5}, rng, -1, 1);
  auto b_full = testing::random_tensor(DType::BFloat16, {7, 5}, rng, -1, 1);
  const TensorView b = testing::permute(b_full.view, {1, 0});  // [5, 7], column-major
  auto out = make_tensor(DType::BFloat16, {3, 7});
  auto offsets = offsets_of({4, 6});  // column 6 is past the last group
  grouped_gemm(out.view, a.view, b, &offsets.view);
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 7; ++j) {
      const int64_t g = j < 4 ? 0 : (j < 6 ? 1 : -1);
      const double expected = g < 0 ? 0.0
                                    : dot(
                                          0, 5, [&](int64_t k) { return get(a.view, {g, i, k}); },
                                          [&](int64_t k) { return get(b, {k, j}); });
      EXPECT_NEAR(get(out.view, {i, j}), testing::round_to(DType::BFloat16, expected),
                  testing::tolerance(DType::BFloat16, expected));
    }
  }
}

TEST(GroupedGemm, WeightGradientFormSumsEachGroupsSliceAndEmptyGroupsAreZero) {
  std::mt19937 rng(5);
  auto a = testing::random_tensor(DType::Float32, {3, 9}, rng, -1, 1);
  auto b = testing::random_tensor(DType::Float32, {9, 2}, rng, -1, 1);
  auto out = make_tensor(DType::Float32, {4, 3, 2});
  testing::fill_random(out.view, rng, 100, 200);
  // Group 1 is empty and group 3's end (20) is clamped to the 9 rows there are.
  auto offsets = offsets_of({4, 4, 7, 20});
  grouped_gemm(out.view, a.view, b.view, &offsets.view);
  const int64_t starts[4] = {0, 4, 4, 7};
  const int64_t ends[4] = {4, 4, 7, 9};
  for (int64_t g = 0; g < 4; ++g) {
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 2; ++j) {
        const double expected = dot(
            starts[g], ends[g], [&](int64_t k) { return get(a.view, {i, k}); },
            [&](int64_t k) { return get(b.view, {k, j}); });
        EXPECT_NEAR(get(out.view, {g, i, j}), expected, 1e-5);
      }
    }
  }
}

TEST(GroupedGemm, DecreasingOffsetsMakeEmptyGroupsNotNegativeOnes) {
  std::mt19937 rng(6);
  auto a = testing::random_tensor(DType::Float32, {6, 2}, rng, -1, 1);
  auto b = testing::random_tensor(DType::Float32, {2, 2, 3}, rng, -1, 1);
  auto out = make_tensor(DType::Float32, {6, 3});
  auto offsets = offsets_of({4, 2});  // group 1 would end before it starts
  grouped_gemm(out.view, a.view, b.view, &offsets.view);
  for (int64_t i = 4; i < 6; ++i) {
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(get(out.view, {i, j}), 0.0);
  }
}

// Groups larger than the kernel's blocks (256 rows, columns or inner indices), uneven and
// empty ones, in all three offset forms: every block must use its own group's operands, and
// a group summed over several inner blocks must be rounded once (bf16 within one rounding).
TEST(GroupedGemm, GroupsLargerThanABlockAreSplitAndSummedExactlyOnce) {
  std::mt19937 rng(7);
  const std::vector<int32_t> ends = {0, 1, 301, 558, 1160};  // sizes 0, 1, 300, 257, 602
  const int64_t total = 1200;                                // the last 40 are past every group
  const auto group_of = [&](int64_t index) -> int64_t {
    for (size_t g = 0; g < ends.size(); ++g) {
      if (index < ends[g]) return static_cast<int64_t>(g);
    }
    return -1;
  };
  auto offsets = offsets_of(ends);
  const int64_t groups = static_cast<int64_t>(ends.size());
  for (DType dtype : {DType::Float32, DType::BFloat16}) {
    const auto check = [&](double got, double expected) {
      if (dtype == DType::Float32) {
        EXPECT_NEAR(got, expected, 2e-4);
      } else {
        EXPECT_NEAR(got, testing::round_to(dtype, expected), testing::tolerance(dtype, expected));
      }
    };
    {  // tokens [T, K] @ experts [G, K, N]
      auto a = testing::random_tensor(dtype, {total, 5}, rng, -1, 1);
      auto b = testing::random_tensor(dtype, {groups, 5, 3}, rng, -1, 1);
      auto out = make_tensor(dtype, {total, 3});
      grouped_gemm(out.view, a.view, b.view, &offsets.view);
      for (int64_t i = 0; i < total; ++i) {
        const int64_t g = group_of(i);
        for (int64_t j = 0; j < 3; ++j) {
          check(get(out.view, {i, j}),
                g < 0 ? 0.0
                      : dot(
                            0, 5, [&](int64_t k) { return get(a.view, {i, k}); },
                            [&](int64_t k) { return get(b.view, {g, k, j}); }));
        }
      }
    }
    {  // experts [G, M, K] @ tokens [K, T]
      auto a = testing::random_tensor(dtype, {groups, 2, 4}, rng, -1, 1);
      auto b = testing::random_tensor(dtype, {4, total}, rng, -1, 1);
      auto out = make_tensor(dtype, {2, total});
      grouped_gemm(out.view, a.view, b.view, &offsets.view);
      for (int64_t j = 0; j < total; ++j) {
        const int64_t g = group_of(j);
        for (int64_t i = 0; i < 2; ++i) {
          check(get(out.view, {i, j}),
                g < 0 ? 0.0
                      : dot(
                            0, 4, [&](int64_t k) { return get(a.view, {g, i, k}); },
                            [&](int64_t k) { return get(b.view, {k, j}); }));
        }
      }
    }
    {  // weight gradient: [M, T] @ [T, N] -> [G, M, N], summed over each group's tokens
      auto a_full = testing::random_tensor(dtype, {total, 3}, rng, -1, 1);
      const TensorView a = testing::permute(a_full.view, {1, 0});  // [3, T], as x^T is
      auto b = testing::random_tensor(dtype, {total, 2}, rng, -1, 1);
      auto out = make_tensor(dtype, {groups, 3, 2});
      testing::fill_random(out.view, rng, 100, 200);
      grouped_gemm(out.view, a, b.view, &offsets.view);
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t start = g == 0 ? 0 : ends[static_cast<size_t>(g) - 1];
        for (int64_t i = 0; i < 3; ++i) {
          for (int64_t j = 0; j < 2; ++j) {
            check(get(out.view, {g, i, j}), dot(
                                                start, ends[static_cast<size_t>(g)],
                                                [&](int64_t k) { return get(a, {i, k}); },
                                                [&](int64_t k) { return get(b.view, {k, j}); }));
          }
        }
      }
    }
  }
}

TEST(GroupedGemm, AnEmptyInnerDimensionGivesZeros) {
  std::mt19937 rng(8);
  auto a = make_tensor(DType::Float32, {600, 0});
  auto b = make_tensor(DType::Float32, {2, 0, 3});
  auto out = make_tensor(DType::Float32, {600, 3});
  testing::fill_random(out.view, rng, 100, 200);
  auto offsets = offsets_of({300, 600});
  grouped_gemm(out.view, a.view, b.view, &offsets.view);
  for (int64_t i = 0; i < 600; ++i) {
    for (int64_t j = 0; j < 3; ++j) ASSERT_EQ(get(out.view, {i, j}), 0.0) << i << "," << j;
  }
}

TEST(Histc, IntegersArePlacedExactlyAndOutOfRangeIsDropped) {
  auto in = make_tensor(DType::Int32, {9});
  const int32_t values[9] = {0, 1, 2, 3, 4, 5, 6, 7, -1};
  for (int64_t i = 0; i < 9; ++i) set(in.view, {i}, values[i]);
  auto out = make_tensor(DType::Int32, {3});
  // Bins of width 7/3 over [0, 7]: floor(v * 3 / 7) -> 0,0,0,1,1,2,2,2 (7 is the last bin).
  histc(out.view, in.view, nullptr, 0, 7);
  EXPECT_EQ(get(out.view, {0}), 3);
  EXPECT_EQ(get(out.view, {1}), 2);
  EXPECT_EQ(get(out.view, {2}), 3);
}

TEST(Histc, FloatsDropNaNAndCountTheUpperEndInTheLastBin) {
  auto in = make_tensor(DType::Float32, {6});
  const double values[6] = {0.0, 0.5, 1.0, std::numeric_limits<double>::quiet_NaN(), 2.0, 2.5};
  for (int64_t i = 0; i < 6; ++i) set(in.view, {i}, values[i]);
  auto edges = make_tensor(DType::Float32, {3});
  for (int64_t i = 0; i < 3; ++i) set(edges.view, {i}, static_cast<double>(i));
  auto out = make_tensor(DType::Float32, {2});
  histc(out.view, in.view, &edges.view, 0, 2);
  EXPECT_EQ(get(out.view, {0}), 2);  // 0.0, 0.5
  EXPECT_EQ(get(out.view, {1}), 2);  // 1.0, 2.0 (the upper end); 2.5 and NaN are dropped
}

TEST(Histc, MinMaxIsNaNWhenAnyElementIs) {
  auto in = make_tensor(DType::Float32, {3});
  set(in.view, {0}, -2.0);
  set(in.view, {1}, 5.0);
  set(in.view, {2}, 1.0);
  double low = 0, high = 0;
  min_max(in.view, &low, &high);
  EXPECT_EQ(low, -2.0);
  EXPECT_EQ(high, 5.0);
  set(in.view, {2}, std::numeric_limits<double>::quiet_NaN());
  min_max(in.view, &low, &high);
  EXPECT_TRUE(std::isnan(low) && std::isnan(high));
}

TEST(Bincount, CountsAndFloatSumsLandOnEachValue) {
  auto in = make_tensor(DType::Int32, {5});
  const int32_t values[5] = {2, 0, 2, 4, 2};
  for (int64_t i = 0; i < 5; ++i) set(in.view, {i}, values[i]);
  auto counts = make_tensor(DType::Int64, {6});
  for (int64_t i = 0; i < 6; ++i) set(counts.view, {i}, 0);
  bincount(counts.view, in.view, nullptr);
  const double expected_counts[6] = {1, 0, 3, 0, 1, 0};
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(get(counts.view, {i}), expected_counts[i]);
  auto weights = make_tensor(DType::Float32, {5});
  for (int64_t i = 0; i < 5; ++i) set(weights.view, {i}, 0.5 * static_cast<double>(i + 1));
  auto sums = make_tensor(DType::Float32, {5});
  for (int64_t i = 0; i < 5; ++i) set(sums.view, {i}, 0);
  bincount(sums.view, in.view, &weights.view);
  EXPECT_EQ(get(sums.view, {0}), 1.0);
  EXPECT_EQ(get(sums.view, {2}), 0.5 + 1.5 + 2.5);
  EXPECT_EQ(get(sums.view, {4}), 2.0);
}

TEST(Isin, MembershipIgnoresNaNAndMatchesSignedZeroOnStridedViews) {
  auto elements_full = make_tensor(DType::Float32, {2, 3});
  const double values[6] = {1.0, -0.0, std::numeric_limits<double>::quiet_NaN(), 4.0, 5.0, 6.0};
  for (int64_t i = 0; i < 6; ++i) set(elements_full.view, {i / 3, i % 3}, values[i]);
  const TensorView elements = testing::permute(elements_full.view, {1, 0});  // [3, 2]
  auto test = make_tensor(DType::Float32, {4});
  const double members[4] = {0.0, std::numeric_limits<double>::quiet_NaN(), 5.0, 7.0};
  for (int64_t i = 0; i < 4; ++i) set(test.view, {i}, members[i]);
  auto out = make_tensor(DType::Bool, {3, 2});
  for (bool invert : {false, true}) {
    isin(out.view, elements, test.view, invert);
    for (int64_t r = 0; r < 3; ++r) {
      for (int64_t c = 0; c < 2; ++c) {
        const double v = get(elements, {r, c});
        const bool member = v == 0.0 || v == 5.0;
        EXPECT_EQ(get(out.view, {r, c}) != 0, member != invert) << v;
      }
    }
  }
}

}  // namespace
}  // namespace openneuron::kernels
