// repeat_interleave's index list against a nested loop: int32 and int64 counts, zero counts,
// a strided counts vector, and the negative-count and wrong-length refusals.
#include "kernels/shape/repeat_interleave.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::get;
using testing::make_tensor;
using testing::set;

testing::HostTensor counts_of(DType dtype, const std::vector<int64_t>& counts) {
  auto t = make_tensor(dtype, {static_cast<int64_t>(counts.size())});
  for (size_t i = 0; i < counts.size(); ++i) set(t.view, {static_cast<int64_t>(i)}, counts[i]);
  return t;
}

TEST(RepeatInterleave, RepeatsEachPositionItsCount) {
  const std::vector<int64_t> counts = {2, 0, 3, 1, 0, 4};
  for (DType dtype : {DType::Int32, DType::Int64}) {
    auto repeats = counts_of(dtype, counts);
    ASSERT_EQ(repeat_interleave_total(repeats.view), 10);
    auto out = make_tensor(dtype, {10});
    repeat_interleave_indices(out.view, repeats.view);
    std::vector<int64_t> expected;
    for (size_t i = 0; i < counts.size(); ++i) expected.insert(expected.end(), counts[i], i);
    for (int64_t j = 0; j < 10; ++j) EXPECT_EQ(get(out.view, {j}), expected[j]) << "slot " << j;
  }
}

TEST(RepeatInterleave, ReadsStridedCountsAndFillsManySlots) {
  auto storage = counts_of(DType::Int64, {5000, 99, 0, 99, 70000});
  TensorView every_other = storage.view;
  every_other.sizes[0] = 3;
  every_other.strides[0] = 2;
  auto out = make_tensor(DType::Int64, {75000});
  repeat_interleave_indices(out.view, every_other);
  EXPECT_EQ(get(out.view, {0}), 0);
  EXPECT_EQ(get(out.view, {4999}), 0);
  EXPECT_EQ(get(out.view, {5000}), 2);
  EXPECT_EQ(get(out.view, {74999}), 2);
}

TEST(RepeatInterleave, RefusesNegativeCountsAndAWrongLength) {
  auto negative = counts_of(DType::Int64, {1, -1, 3});
  EXPECT_THROW(repeat_interleave_total(negative.view), std::invalid_argument);
  auto out = make_tensor(DType::Int64, {3});
  set(out.view, {0}, 7);
  EXPECT_THROW(repeat_interleave_indices(out.view, negative.view), std::invalid_argument);
  auto repeats = counts_of(DType::Int64, {1, 1});
  EXPECT_THROW(repeat_interleave_indices(out.view, repeats.view), std::length_error);
  EXPECT_EQ(get(out.view, {0}), 7);  // nothing written
  auto float_counts = make_tensor(DType::Float32, {2});
  EXPECT_THROW(repeat_interleave_total(float_counts.view), std::invalid_argument);
}

}  // namespace
}  // namespace openneuron::kernels
