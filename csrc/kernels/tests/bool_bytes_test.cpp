// Bool elements whose byte is neither 0 nor 1 (a uint8 tensor viewed as bool) read as true in
// casts, sums, nonzero and sorting, as on the CPU; the raw byte never leaks into a result.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernels/core/row_io.h"
#include "kernels/pointwise/cast.h"
#include "kernels/reduce/reduce.h"
#include "kernels/shape/indexing.h"
#include "kernels/shape/sort.h"
#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::get;
using testing::make_tensor;

const uint8_t kBytes[] = {0, 2, 255, 1, 0, 4, 128, 1};  // six true, two false
constexpr int64_t kCount = 8;

testing::HostTensor odd_bools() {
  testing::HostTensor bools = make_tensor(DType::Bool, {kCount});
  std::memcpy(bools.view.data, kBytes, sizeof(kBytes));
  return bools;
}

TEST(BoolBytes, CastsReadEveryNonzeroByteAsOne) {
  const testing::HostTensor bools = odd_bools();
  for (DType to : {DType::Int64, DType::UInt8, DType::Float32, DType::Float16}) {
    const testing::HostTensor out = make_tensor(to, {kCount});
    copy(out.view, bools.view);
    for (int64_t i = 0; i < kCount; ++i) {
      EXPECT_EQ(get(out.view, {i}), kBytes[i] != 0 ? 1.0 : 0.0) << dtype_name(to) << " " << i;
    }
  }
}

TEST(BoolBytes, LoadRowReadsEveryNonzeroByteAsOne) {
  const testing::HostTensor bools = odd_bools();
  std::vector<int64_t> dense(kCount);
  load_row<int64_t>(dense.data(), static_cast<const char*>(bools.view.data), 1, DType::Bool,
                    kCount);
  std::vector<float> strided(kCount / 2);
  load_row<float>(strided.data(), static_cast<const char*>(bools.view.data), 2, DType::Bool,
                  kCount / 2);
  for (int64_t i = 0; i < kCount; ++i) EXPECT_EQ(dense[i], kBytes[i] != 0 ? 1 : 0) << i;
  for (int64_t i = 0; i < kCount / 2; ++i)
    EXPECT_EQ(strided[i], kBytes[2 * i] != 0 ? 1.f : 0.f) << i;
}

TEST(BoolBytes, SumAndNonzeroCountTrueElements) {
  const testing::HostTensor bools = odd_bools();
  const testing::HostTensor total = make_tensor(DType::Int64, {1});
  reduce(ReduceOp::Sum, total.view, bools.view, 1u);
  EXPECT_EQ(get(total.view, {0}), 6.0);
  EXPECT_EQ(count_nonzero(bools.view), 6);
  const testing::HostTensor coordinates = make_tensor(DType::Int64, {6, 1});
  nonzero(coordinates.view, bools.view);
  const int64_t want[] = {1, 2, 3, 5, 6, 7};
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(get(coordinates.view, {i, 0}), want[i]) << i;
}

TEST(BoolBytes, SortOrdersEveryNonzeroByteAsTrueAndWritesOne) {
  const testing::HostTensor bools = odd_bools();
  const testing::HostTensor values = make_tensor(DType::Bool, {kCount});
  const testing::HostTensor indices = make_tensor(DType::Int64, {kCount});
  sort(values.view, indices.view, bools.view, 0, /*descending=*/false, /*stable=*/true);
  // Stable: the two false elements first, then the six true ones in their original order.
  const int64_t want[] = {0, 4, 1, 2, 3, 5, 6, 7};
  const auto* bytes = static_cast<const uint8_t*>(values.view.data);
  for (int64_t i = 0; i < kCount; ++i) {
    EXPECT_EQ(get(indices.view, {i}), want[i]) << i;
    EXPECT_EQ(bytes[i], i < 2 ? 0 : 1) << i;
  }
}

}  // namespace
}  // namespace openneuron::kernels
