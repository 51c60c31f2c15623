// Insertion points in sorted rows against a linear scan: both sides, NaN values,
// one shared row or one per value row, a sorter, int32 and int64 results, a bad sorter refused.
#include "kernels/shape/sorted_search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::get;
using testing::make_tensor;
using testing::set;

// The first position whose boundary is >= value (right: > value); a NaN value goes after every
// number. (Rows holding NaN are not sorted, so no scan defines them:
// tests/test_ops_sorted_search.py holds them to the CPU's placement.)
int64_t scan(const std::vector<float>& row, float value, bool right) {
  int64_t position = 0;
  for (float boundary : row) {
    const bool before = right ? !(boundary > value) : !(boundary >= value);
    if (!before) break;
    ++position;
  }
  return position;
}

testing::HostTensor tensor_of(const std::vector<std::vector<float>>& rows) {
  auto t = make_tensor(DType::Float32,
                       {static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows[0].size())});
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t j = 0; j < rows[r].size(); ++j) {
      set(t.view, {static_cast<int64_t>(r), static_cast<int64_t>(j)}, rows[r][j]);
    }
  }
  return t;
}

TEST(SortedSearch, MatchesALinearScanOnBothSides) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<std::vector<float>> boundaries = {{1, 2, 2, 3, 3}, {-5, 0, 0, 0, 7}};
  const std::vector<std::vector<float>> values = {{0, 2, 2.5f, 3, nan, 9}, {0, -6, 7, 8, nan, -5}};
  auto b = tensor_of(boundaries);
  auto v = tensor_of(values);
  for (bool right : {false, true}) {
    for (DType out_dtype : {DType::Int64, DType::Int32}) {
      auto out = make_tensor(out_dtype, {2, 6});
      sorted_search(out.view, b.view, v.view, nullptr, right);
      for (int64_t r = 0; r < 2; ++r) {
        for (int64_t j = 0; j < 6; ++j) {
          EXPECT_EQ(get(out.view, {r, j}), scan(boundaries[r], values[r][j], right))
              << "row " << r << " value " << values[r][j] << (right ? " right" : " left");
        }
      }
    }
  }
}

TEST(SortedSearch, OneSharedRowServesEveryValueRow) {
  auto b = tensor_of({{0, 10, 20}});
  auto v = tensor_of({{5, 25}, {-1, 10}});
  auto out = make_tensor(DType::Int64, {2, 2});
  sorted_search(out.view, b.view, v.view, nullptr, false);
  EXPECT_EQ(get(out.view, {0, 0}), 1);
  EXPECT_EQ(get(out.view, {0, 1}), 3);
  EXPECT_EQ(get(out.view, {1, 0}), 0);
  EXPECT_EQ(get(out.view, {1, 1}), 1);
}

TEST(SortedSearch, ASorterOrdersAnUnsortedRowAndABadOneIsRefused) {
  auto b = tensor_of({{30, 10, 20}});
  auto v = tensor_of({{15, 25, 35}});
  auto order = make_tensor(DType::Int64, {1, 3});
  const int64_t sorted_order[] = {1, 2, 0};
  for (int64_t j = 0; j < 3; ++j) set(order.view, {0, j}, sorted_order[j]);
  auto out = make_tensor(DType::Int64, {1, 3});
  sorted_search(out.view, b.view, v.view, &order.view, false);
  EXPECT_EQ(get(out.view, {0, 0}), 1);
  EXPECT_EQ(get(out.view, {0, 1}), 2);
  EXPECT_EQ(get(out.view, {0, 2}), 3);
  set(order.view, {0, 2}, int64_t{3});
  EXPECT_THROW(sorted_search(out.view, b.view, v.view, &order.view, false), std::out_of_range);
}

}  // namespace
}  // namespace openneuron::kernels
