// sort() and topk() against std::stable_sort with PyTorch's ordering (NaN highest,
// -0.0 == 0.0), on short and radix-length lines, both directions.
#include "kernels/shape/sort.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::get;
using testing::make_tensor;
using testing::set;

// a sorts before b (ascending) in PyTorch's order.
bool torch_less(double a, double b) {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return a < b;
}

void expect_sorted_line(const TensorView& in, int64_t length, bool descending, DType dtype) {
  auto values = make_tensor(dtype, {length});
  auto indices = make_tensor(DType::Int64, {length});
  sort(values.view, indices.view, in, 0, descending, /*stable=*/true);
  std::vector<int64_t> order(length);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const double x = get(in, {a}), y = get(in, {b});
    return descending ? torch_less(y, x) : torch_less(x, y);
  });
  for (int64_t i = 0; i < length; ++i) {
    ASSERT_EQ(get(indices.view, {i}), order[i]) << dtype_name(dtype) << " at " << i;
    const double v = get(values.view, {i});
    const double want = get(in, {order[i]});
    EXPECT_TRUE(v == want || (std::isnan(v) && std::isnan(want)));
  }
}

TEST(Sort, StableForEveryDtypeAndLength) {
  std::mt19937 rng(1);
  for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float16, DType::Int64, DType::Int32,
                      DType::Int16, DType::Int8, DType::UInt8, DType::Bool}) {
    for (int64_t length : {1, 7, 64, 65, 1000}) {
      auto in = make_tensor(dtype, {length});
      testing::fill_random(in.view, rng, dtype == DType::UInt8 || dtype == DType::Bool ? 0 : -5, 5);
      for (bool descending : {false, true}) expect_sorted_line(in.view, length, descending, dtype);
    }
  }
}

TEST(Sort, SpecialFloats) {
  const double specials[] = {0.0, -0.0, NAN, 1.0, -INFINITY, INFINITY, -1.0, NAN, 0.0, -0.0};
  auto in = make_tensor(DType::Float32, {10});
  for (int i = 0; i < 10; ++i) set(in.view, {i}, specials[i]);
  for (bool descending : {false, true}) expect_sorted_line(in.view, 10, descending, DType::Float32);
  auto big = make_tensor(DType::Float32, {200});  // radix path
  for (int i = 0; i < 200; ++i) set(big.view, {i}, specials[i % 10]);
  for (bool descending : {false, true})
    expect_sorted_line(big.view, 200, descending, DType::Float32);
}

TEST(Sort, AlongAnyDimOfStridedViews) {
  std::mt19937 rng(2);
  auto in = make_tensor(DType::Float32, {6, 90});
  testing::fill_random(in.view, rng, -3, 3);
  const TensorView transposed = testing::permute(in.view, {1, 0});  // [90, 6], sort dim 1
  auto values = make_tensor(DType::Float32, {90, 6});
  auto indices = make_tensor(DType::Int64, {90, 6});
  sort(values.view, indices.view, transposed, 1, false, /*stable=*/true);
  for (int64_t r = 0; r < 90; ++r) {
    for (int64_t c = 1; c < 6; ++c)
      EXPECT_LE(get(values.view, {r, c - 1}), get(values.view, {r, c}));
    for (int64_t c = 0; c < 6; ++c) {
      EXPECT_EQ(get(values.view, {r, c}),
                get(transposed, {r, static_cast<int64_t>(get(indices.view, {r, c}))}));
    }
  }
}

TEST(TopK, LargestAndSmallestWithTiesByIndex) {
  auto in = make_tensor(DType::Int64, {8});
  const double data[] = {3, 1, 4, 1, 5, 9, 2, 6};
  for (int i = 0; i < 8; ++i) set(in.view, {i}, data[i]);
  auto values = make_tensor(DType::Int64, {3});
  auto indices = make_tensor(DType::Int64, {3});
  topk(values.view, indices.view, in.view, 0, 3, true, /*sorted=*/true);
  EXPECT_EQ(get(values.view, {0}), 9);
  EXPECT_EQ(get(indices.view, {0}), 5);
  EXPECT_EQ(get(values.view, {2}), 5);
  topk(values.view, indices.view, in.view, 0, 3, false, /*sorted=*/true);
  EXPECT_EQ(get(indices.view, {0}), 1);  // the first of the tied 1s
  EXPECT_EQ(get(indices.view, {1}), 3);
  EXPECT_EQ(get(values.view, {2}), 2);
}

// An unstable sort still orders values and permutes indices; which tie goes first is checked
// against the CPU in the Python tests.
TEST(Sort, UnstableOrdersValuesAndPermutesIndices) {
  std::mt19937 rng(3);
  for (DType dtype : {DType::Int8, DType::Float16, DType::Bool, DType::Float32}) {
    auto in = make_tensor(dtype, {500});
    testing::fill_random(in.view, rng, dtype == DType::Bool ? 0 : -4, dtype == DType::Bool ? 2 : 4);
    for (bool descending : {false, true}) {
      auto values = make_tensor(dtype, {500});
      auto indices = make_tensor(DType::Int64, {500});
      sort(values.view, indices.view, in.view, 0, descending, /*stable=*/false);
      std::vector<bool> seen(500, false);
      for (int64_t i = 0; i < 500; ++i) {
        const auto index = static_cast<int64_t>(get(indices.view, {i}));
        ASSERT_FALSE(seen[index]);
        seen[index] = true;
        EXPECT_EQ(get(values.view, {i}), get(in.view, {index}));
        if (i > 0) {
          const double before = get(values.view, {i - 1}), now = get(values.view, {i});
          EXPECT_TRUE(descending ? before >= now : before <= now) << dtype_name(dtype) << i;
        }
      }
    }
  }
}

TEST(TopK, UnsortedSelectionHoldsTheKExtremes) {
  auto in = make_tensor(DType::Float32, {10});
  const double data[] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
  for (int i = 0; i < 10; ++i) set(in.view, {i}, data[i]);
  auto values = make_tensor(DType::Float32, {4});
  auto indices = make_tensor(DType::Int64, {4});
  topk(values.view, indices.view, in.view, 0, 4, true, /*sorted=*/false);
  std::vector<double> got;
  for (int64_t i = 0; i < 4; ++i) {
    got.push_back(get(values.view, {i}));
    EXPECT_EQ(got.back(), data[static_cast<int64_t>(get(indices.view, {i}))]);
  }
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<double>{5, 5, 6, 9}));
}

}  // namespace
}  // namespace openneuron::kernels
