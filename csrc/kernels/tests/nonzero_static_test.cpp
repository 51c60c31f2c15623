// nonzero_static against a scan of every element: fewer, as many and more nonzero elements
// than rows, a transposed input, NaN, a bool view of other bytes, and a 0-dim input.
#include "kernels/shape/nonzero_static.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::for_each_index;
using testing::get;
using testing::make_tensor;
using testing::set;

std::vector<std::vector<int64_t>> scan(const TensorView& in) {
  std::vector<std::vector<int64_t>> found;
  for_each_index(in, [&](const std::vector<int64_t>& index) {
    const double value = get(in, index);
    if (value != 0 || value != value) found.push_back(index);
  });
  return found;
}

void expect_matches_scan(const TensorView& in, int64_t rows, int64_t fill) {
  auto out = make_tensor(DType::Int64, {rows, in.ndim});
  nonzero_static(out.view, in, fill);
  const auto found = scan(in);
  for (int64_t r = 0; r < rows; ++r) {
    for (int d = 0; d < in.ndim; ++d) {
      const int64_t expected = r < static_cast<int64_t>(found.size()) ? found[r][d] : fill;
      EXPECT_EQ(get(out.view, {r, d}), expected) << "row " << r << " col " << d;
    }
  }
}

TEST(NonzeroStatic, TakesTheFirstRowsAndFillsTheRest) {
  auto in = make_tensor(DType::Float32, {3, 4});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> values = {0, 1, 0, -2, 0, 0, nan, 0, 3, 0, 0, -0.0f};
  for (int64_t i = 0; i < 12; ++i) set(in.view, {i / 4, i % 4}, values[i]);
  for (int64_t rows : {0, 2, 4, 7}) expect_matches_scan(in.view, rows, -1);
  expect_matches_scan(testing::permute(in.view, {1, 0}), 3, 9);
}

TEST(NonzeroStatic, ReadsBoolBytesAndHalfValues) {
  auto bytes = make_tensor(DType::UInt8, {5});
  for (int64_t i = 0; i < 5; ++i) set(bytes.view, {i}, i == 1 ? 0 : 2 * i);
  TensorView as_bool = bytes.view;
  as_bool.dtype = DType::Bool;
  auto out = make_tensor(DType::Int64, {5, 1});
  nonzero_static(out.view, as_bool, -1);
  const std::vector<int64_t> expected = {2, 3, 4, -1, -1};  // byte 0 is 0, byte 1 is 0
  for (int64_t r = 0; r < 5; ++r) EXPECT_EQ(get(out.view, {r, 0}), expected[r]);
  auto half = make_tensor(DType::Float16, {2, 3});
  set(half.view, {1, 2}, 0.5);
  expect_matches_scan(half.view, 2, 0);
}

TEST(NonzeroStatic, ZeroDimInputHasNoColumns) {
  auto scalar = make_tensor(DType::Int32, {});
  set(scalar.view, {}, 4);
  auto out = make_tensor(DType::Int64, {3, 0});
  nonzero_static(out.view, scalar.view, -1);  // nothing to write, nothing read out of bounds
  SUCCEED();
}

}  // namespace
}  // namespace openneuron::kernels
