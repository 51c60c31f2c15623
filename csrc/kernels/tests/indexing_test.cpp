// Indexing kernels against reference loops: advanced gather/scatter, gather/scatter along a
// dim (every reduce mode), nonzero and masked_select.
#include "kernels/shape/indexing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <stdexcept>

#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::for_each_index;
using testing::get;
using testing::make_tensor;
using testing::set;
using Index = std::vector<int64_t>;

testing::HostTensor make_index(DType dtype, const std::vector<int64_t>& sizes, std::mt19937& rng,
                               int64_t low, int64_t high) {
  auto index = make_tensor(dtype, sizes);
  std::uniform_int_distribution<int64_t> dist(low, high - 1);
  for_each_index(index.view,
                 [&](const Index& at) { set(index.view, at, static_cast<double>(dist(rng))); });
  return index;
}

TEST(Indexing, IndexGatherSelectsRowsColumnsAndPairs) {
  std::mt19937 rng(1);
  auto in = make_tensor(DType::Float32, {5, 6, 4});
  testing::fill_random(in.view, rng, -5, 5);
  for (DType index_dtype : {DType::Int64, DType::Int32}) {
    for (int first = 0; first < 3; ++first) {
      auto index = make_index(index_dtype, {7}, rng, -in.view.sizes[first], in.view.sizes[first]);
      std::vector<int64_t> sizes(in.view.sizes, in.view.sizes + 3);
      sizes[first] = 7;
      auto out = make_tensor(DType::Float32, sizes);
      index_gather(out.view, in.view, first, &index.view, 1);
      for_each_index(out.view, [&](const Index& at) {
        Index src = at;
        int64_t i = static_cast<int64_t>(get(index.view, {at[first]}));
        if (i < 0) i += in.view.sizes[first];
        src[first] = i;
        EXPECT_EQ(get(out.view, at), get(in.view, src));
      });
    }
  }
  // Two broadcast 2-D index views over dims 1 and 2: out is [5, 2, 3].
  auto rows = make_index(DType::Int64, {2, 3}, rng, 0, 6);
  auto cols = make_index(DType::Int64, {2, 1}, rng, 0, 4);
  TensorView cols_view = testing::expand(cols.view, {2, 3});
  TensorView views[2] = {rows.view, cols_view};
  auto out = make_tensor(DType::Float32, {5, 2, 3});
  index_gather(out.view, in.view, 1, views, 2);
  for_each_index(out.view, [&](const Index& at) {
    const int64_t r = static_cast<int64_t>(get(rows.view, {at[1], at[2]}));
    const int64_t c = static_cast<int64_t>(get(cols.view, {at[1], 0}));
    EXPECT_EQ(get(out.view, at), get(in.view, {at[0], r, c}));
  });
}

TEST(Indexing, OutOfRangeIndexThrowsNamingIt) {
  auto in = make_tensor(DType::Float32, {3, 2});
  auto index = make_tensor(DType::Int64, {1});
  set(index.view, {0}, 3);
  auto out = make_tensor(DType::Float32, {1, 2});
  try {
    index_gather(out.view, in.view, 0, &index.view, 1);
    FAIL() << "expected an out-of-range error";
  } catch (const std::out_of_range& error) {
    EXPECT_NE(
        std::string(error.what()).find("index 3 is out of bounds for dimension 0 with size 3"),
        std::string::npos);
  }
}

TEST(Indexing, FindIndexOutsideReportsTheFirstInRowMajorOrder) {
  for (DType dtype : {DType::Int64, DType::Int32}) {
    auto index = make_tensor(dtype, {2, 3});
    const std::vector<int64_t> values = {0, 2, 7, -1, 9, 1};  // row-major
    for (int64_t k = 0; k < 6; ++k) set(index.view, {k / 3, k % 3}, static_cast<double>(values[k]));
    int64_t found = 0;
    EXPECT_TRUE(find_index_outside(index.view, 0, 3, nullptr, &found));
    EXPECT_EQ(found, 7);
    EXPECT_TRUE(find_index_outside(index.view, -1, 9, nullptr, &found));
    EXPECT_EQ(found, 9);
    EXPECT_FALSE(find_index_outside(index.view, -1, 10, nullptr, &found));
    const int64_t skipped = 9;
    EXPECT_FALSE(find_index_outside(index.view, -1, 8, &skipped, &found));
    // A transposed view walks in its own row-major order: 0, -1, 2, 9, 7, 1.
    TensorView transposed = index.view;
    std::swap(transposed.sizes[0], transposed.sizes[1]);
    std::swap(transposed.strides[0], transposed.strides[1]);
    EXPECT_TRUE(find_index_outside(transposed, 0, 3, nullptr, &found));
    EXPECT_EQ(found, -1);
  }
}

TEST(Indexing, IndexScatterAssignsAndAccumulatesInOrder) {
  std::mt19937 rng(2);
  for (DType dtype : {DType::Float32, DType::BFloat16, DType::Int64}) {
    for (int64_t width : {3, 200}) {  // short blocks and column-split rows
      auto self = make_tensor(dtype, {6, width});
      testing::fill_random(self.view, rng, -3, 3);
      auto reference = make_tensor(dtype, {6, width});
      for_each_index(self.view,
                     [&](const Index& at) { set(reference.view, at, get(self.view, at)); });
      auto index = make_index(DType::Int64, {9}, rng, 0, 6);  // duplicates
      auto values = make_tensor(dtype, {9, width});
      testing::fill_random(values.view, rng, -3, 3);
      index_scatter(IndexScatterMode::Add, self.view, values.view, 0, &index.view, 1,
                    Scalar::from_int(1));
      for (int64_t p = 0; p < 9; ++p) {
        const int64_t row = static_cast<int64_t>(get(index.view, {p}));
        for (int64_t j = 0; j < width; ++j) {
          set(reference.view, {row, j}, get(reference.view, {row, j}) + get(values.view, {p, j}));
        }
      }
      for_each_index(self.view, [&](const Index& at) {
        EXPECT_EQ(get(self.view, at), get(reference.view, at)) << dtype_name(dtype);
      });
    }
  }
}

TEST(Indexing, GatherAndScatterModes) {
  std::mt19937 rng(3);
  auto in = make_tensor(DType::Float32, {4, 5});
  testing::fill_random(in.view, rng, -4, 4);
  auto index = make_index(DType::Int64, {6, 5}, rng, 0, 4);
  auto src = make_tensor(DType::Float32, {6, 5});
  testing::fill_random(src.view, rng, -4, 4);
  auto gathered = make_tensor(DType::Float32, {6, 5});
  gather(gathered.view, in.view, 0, index.view);
  for_each_index(gathered.view, [&](const Index& at) {
    EXPECT_EQ(get(gathered.view, at),
              get(in.view, {static_cast<int64_t>(get(index.view, at)), at[1]}));
  });
  for (ScatterReduce op : {ScatterReduce::Add, ScatterReduce::Prod, ScatterReduce::Mean,
                           ScatterReduce::Max, ScatterReduce::Min}) {
    for (bool include_self : {true, false}) {
      auto self = make_tensor(DType::Float32, {4, 5});
      for_each_index(self.view, [&](const Index& at) { set(self.view, at, get(in.view, at)); });
      scatter(op, include_self, self.view, 0, index.view, src.view, Scalar{});
      // Reference: collect contributions per slot in index order.
      std::map<Index, std::vector<double>> contributions;
      for_each_index(index.view, [&](const Index& at) {
        contributions[{static_cast<int64_t>(get(index.view, at)), at[1]}].push_back(
            get(src.view, at));
      });
      for_each_index(self.view, [&](const Index& at) {
        double expected = get(in.view, at);
        auto it = contributions.find(at);
        if (it != contributions.end()) {
          std::vector<double> v = it->second;
          if (include_self) v.insert(v.begin(), get(in.view, at));
          double acc = v[0];
          for (size_t k = 1; k < v.size(); ++k) {
            switch (op) {
              case ScatterReduce::Add:
              case ScatterReduce::Mean:
                acc = static_cast<float>(acc + v[k]);
                break;
              case ScatterReduce::Prod:
                acc = static_cast<float>(acc * v[k]);
                break;
              case ScatterReduce::Max:
                acc = std::max(acc, v[k]);
                break;
              default:
                acc = std::min(acc, v[k]);
            }
          }
          if (op == ScatterReduce::Mean)
            acc = static_cast<float>(acc / static_cast<double>(v.size()));
          expected = acc;
        }
        EXPECT_NEAR(get(self.view, at), expected, 1e-5) << "op " << static_cast<int>(op);
      });
    }
  }
}

TEST(Indexing, NonzeroAndMaskedSelect) {
  std::mt19937 rng(4);
  auto in = make_tensor(DType::Int32, {3, 4, 5});
  testing::fill_random(in.view, rng, -1, 2);
  const int64_t count = count_nonzero(in.view);
  auto coords = make_tensor(DType::Int64, {count, 3});
  nonzero(coords.view, in.view);
  auto selected = make_tensor(DType::Int32, {count});
  masked_select(selected.view, in.view, in.view);
  int64_t row = 0;
  for_each_index(in.view, [&](const Index& at) {
    if (get(in.view, at) == 0) return;
    for (int d = 0; d < 3; ++d) EXPECT_EQ(get(coords.view, {row, d}), at[d]);
    EXPECT_EQ(get(selected.view, {row}), get(in.view, at));
    ++row;
  });
  EXPECT_EQ(row, count);
}

}  // namespace
}  // namespace openneuron::kernels
