// reduce() against a double-precision reference over every kind of dim selection.
#include "kernels/reduce/reduce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

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

// Reference: for every output index, sum the input over the reduced dims in double.
void expect_reduction(ReduceOp op, const TensorView& out, const TensorView& in,
                      const std::vector<bool>& reduced) {
  for_each_index(out, [&](const Index& out_index) {
    double sum = 0;
    int64_t count = 0;
    for_each_index(in, [&](const Index& in_index) {
      for (int d = 0; d < in.ndim; ++d) {
        if (!reduced[d] && in_index[d] != out_index[d]) return;
      }
      sum += get(in, in_index);
      ++count;
    });
    const double value = op == ReduceOp::Sum ? sum : sum / static_cast<double>(count);
    const double expected = testing::round_to(out.dtype, value);
    EXPECT_TRUE(testing::close(out.dtype, get(out, out_index), expected))
        << dtype_name(in.dtype) << "->" << dtype_name(out.dtype) << " got " << get(out, out_index)
        << " want " << expected;
  });
}

std::vector<int64_t> keepdim_sizes(const TensorView& in, const std::vector<bool>& reduced) {
  std::vector<int64_t> sizes;
  for (int d = 0; d < in.ndim; ++d) sizes.push_back(reduced[d] ? 1 : in.sizes[d]);
  return sizes;
}

uint32_t mask_of(const std::vector<bool>& reduced) {
  uint32_t mask = 0;
  for (size_t d = 0; d < reduced.size(); ++d) mask |= reduced[d] ? 1u << d : 0u;
  return mask;
}

struct DtypePair {
  DType in;
  DType out;
};

class ReduceByDtype : public ::testing::TestWithParam<DtypePair> {};

TEST_P(ReduceByDtype, EveryDimSubsetOfA3dTensor) {
  const DtypePair dtypes = GetParam();
  std::mt19937 rng(3);
  auto in = make_tensor(dtypes.in, {4, 5, 37});
  testing::fill_random(in.view, rng, dtypes.in == DType::Bool ? 0 : -5,
                       dtypes.in == DType::Bool ? 2 : 5);
  for (uint32_t subset = 0; subset < 8; ++subset) {
    const std::vector<bool> reduced = {(subset & 1) != 0, (subset & 2) != 0, (subset & 4) != 0};
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean}) {
      if (op == ReduceOp::Mean && !is_floating(dtypes.out)) continue;
      auto out = make_tensor(dtypes.out, keepdim_sizes(in.view, reduced));
      // Alternate between naming dims by bitmask and by out.sizes[d] == 1.
      reduce(op, out.view, in.view, subset % 2 ? mask_of(reduced) : 0u);
      expect_reduction(op, out.view, in.view, reduced);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Dtypes, ReduceByDtype,
    ::testing::Values(DtypePair{DType::Float32, DType::Float32},
                      DtypePair{DType::BFloat16, DType::BFloat16},
                      DtypePair{DType::Float16, DType::Float16},
                      DtypePair{DType::Float64, DType::Float64},
                      DtypePair{DType::Int32, DType::Int32}, DtypePair{DType::Int64, DType::Int64},
                      DtypePair{DType::Bool, DType::Int64}, DtypePair{DType::Int32, DType::Float32},
                      DtypePair{DType::BFloat16, DType::Float32}),
    [](const auto& info) {
      return std::string(dtype_name(info.param.in)) + "_to_" + dtype_name(info.param.out);
    });

TEST(Reduce, NonContiguousInputAndOutput) {
  std::mt19937 rng(8);
  auto storage = make_tensor(DType::Float32, {6, 9, 8});
  testing::fill_random(storage.view, rng, -1, 1);
  // in: a transposed, sliced view of shape [8, 3, 6].
  const TensorView in = permute(slice(storage.view, 1, 2, 3, 2), {2, 1, 0});
  auto out_storage = make_tensor(DType::Float32, {6, 1, 8});
  const TensorView out = permute(out_storage.view, {2, 1, 0});  // [8, 1, 6], strided
  reduce(ReduceOp::Sum, out, in, 0);
  expect_reduction(ReduceOp::Sum, out, in, {false, true, false});
  reduce(ReduceOp::Mean, out, in, 0b010);
  expect_reduction(ReduceOp::Mean, out, in, {false, true, false});
}

TEST(Reduce, BitmaskSelectsSizeOneDims) {
  auto in = make_tensor(DType::Float32, {1, 4});
  for (int64_t j = 0; j < 4; ++j) set(in.view, {0, j}, j + 1);
  auto out = make_tensor(DType::Float32, {1, 1});
  reduce(ReduceOp::Mean, out.view, in.view, 0b01);  // dim 0 (size 1) by mask; dim 1 by size
  EXPECT_EQ(get(out.view, {0, 0}), 2.5);
}

TEST(Reduce, EmptyReductionGivesZeroOrNaN) {
  auto in = make_tensor(DType::Float32, {3, 0});
  auto out = make_tensor(DType::Float32, {3, 1});
  reduce(ReduceOp::Sum, out.view, in.view, 0b10);
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(get(out.view, {i, 0}), 0.0);
  reduce(ReduceOp::Mean, out.view, in.view, 0b10);
  for (int64_t i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(get(out.view, {i, 0})));
  auto empty_out = make_tensor(DType::Float32, {1, 0});
  reduce(ReduceOp::Sum, empty_out.view, in.view, 0b01);
}

TEST(Reduce, ZeroDimAndFullReduction) {
  auto scalar_in = make_tensor(DType::BFloat16, {});
  auto scalar_out = make_tensor(DType::Float32, {});
  set(scalar_in.view, {}, 2.5);
  reduce(ReduceOp::Sum, scalar_out.view, scalar_in.view, 0);
  EXPECT_EQ(get(scalar_out.view, {}), 2.5);

  // Float32 sums accumulate in double: 2^24 ones plus one more than fp32 can count.
  const int64_t n = (1 << 24) + 3;
  auto ones = make_tensor(DType::Float32, {n});
  float* data = static_cast<float*>(ones.view.data);
  for (int64_t i = 0; i < n; ++i) data[i] = 1.0f;
  auto total = make_tensor(DType::Float64, {1});
  reduce(ReduceOp::Sum, total.view, ones.view, 1);
  EXPECT_EQ(get(total.view, {0}), static_cast<double>(n));
}

TEST(Reduce, IntegerSumsAreExact) {
  auto in = make_tensor(DType::Int64, {3});
  set(in.view, {0}, 0);
  *static_cast<int64_t*>(in.view.data) = (1ll << 60) + 1;
  static_cast<int64_t*>(in.view.data)[1] = 1;
  static_cast<int64_t*>(in.view.data)[2] = -5;
  auto out = make_tensor(DType::Int64, {1});
  reduce(ReduceOp::Sum, out.view, in.view, 1);
  EXPECT_EQ(*static_cast<int64_t*>(out.view.data), (1ll << 60) - 3);
}

}  // namespace
}  // namespace openneuron::kernels
