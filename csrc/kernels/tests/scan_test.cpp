// scan() against reference running sums/products in double, for every dim and layouts.
#include "kernels/reduce/scan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::for_each_index;
using testing::get;
using testing::make_tensor;
using Index = std::vector<int64_t>;

void expect_scan(ScanOp op, const TensorView& in, DType out_dtype, int dim) {
  std::vector<int64_t> sizes(in.sizes, in.sizes + in.ndim);
  auto out = make_tensor(out_dtype, sizes);
  scan(op, out.view, in, dim);
  for_each_index(out.view, [&](const Index& index) {
    double acc = op == ScanOp::Sum ? 0 : op == ScanOp::Prod ? 1 : -INFINITY;
    Index at = index;
    for (int64_t i = 0; i <= index[dim]; ++i) {
      at[dim] = i;
      const double v = get(in, at);
      acc = op == ScanOp::Sum    ? acc + v
            : op == ScanOp::Prod ? acc * v
                                 : std::log(std::exp(acc) + std::exp(v));
    }
    const double expected = testing::round_to(out_dtype, acc);
    EXPECT_TRUE(testing::close(out_dtype, get(out.view, index), expected))
        << "dim " << dim << " got " << get(out.view, index) << " want " << expected;
  });
}

TEST(Scan, SumAndProdAlongEveryDim) {
  std::mt19937 rng(1);
  for (DType dtype : {DType::Float32, DType::BFloat16, DType::Int32, DType::Int64}) {
    auto in = make_tensor(dtype, {4, 5, 6});
    testing::fill_random(in.view, rng, -2, 3);
    const DType out_dtype = is_floating(dtype) ? dtype : DType::Int64;
    for (int dim = 0; dim < 3; ++dim) {
      expect_scan(ScanOp::Sum, in.view, out_dtype, dim);
      expect_scan(ScanOp::Prod, in.view, out_dtype, dim);
      expect_scan(ScanOp::Sum, testing::permute(in.view, {2, 0, 1}), out_dtype, dim);
    }
  }
}

TEST(Scan, LogSumExpAlongEveryDimKeepsInfinities) {
  std::mt19937 rng(3);
  auto in = make_tensor(DType::Float32, {3, 4, 5});
  testing::fill_random(in.view, rng, -3, 3);
  for (int dim = 0; dim < 3; ++dim) expect_scan(ScanOp::LogSumExp, in.view, DType::Float32, dim);
  auto edges = make_tensor(DType::Float32, {4});
  const double values[] = {-INFINITY, -INFINITY, 1.0, INFINITY};
  for (int64_t i = 0; i < 4; ++i) testing::set(edges.view, {i}, values[i]);
  auto out = make_tensor(DType::Float32, {4});
  scan(ScanOp::LogSumExp, out.view, edges.view, 0);
  EXPECT_EQ(get(out.view, {1}), -INFINITY);  // -inf + -inf stays -inf, not NaN
  EXPECT_EQ(get(out.view, {2}), 1.0);
  EXPECT_EQ(get(out.view, {3}), INFINITY);
}

TEST(Scan, InPlaceMatchesOutOfPlace) {
  std::mt19937 rng(2);
  auto in = make_tensor(DType::Float32, {3, 7});
  testing::fill_random(in.view, rng, -1, 1);
  auto copy = make_tensor(DType::Float32, {3, 7});
  scan(ScanOp::Sum, copy.view, in.view, 1);
  scan(ScanOp::Sum, in.view, in.view, 1);
  for_each_index(
      in.view, [&](const Index& index) { EXPECT_EQ(get(in.view, index), get(copy.view, index)); });
}

}  // namespace
}  // namespace openneuron::kernels
