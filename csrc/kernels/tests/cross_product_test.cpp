// The cross product against the formula in double: every dim position, broadcast and transposed
// operands, 16-bit floats rounded once, integer wrap-around, and out aliasing an operand.
#include "kernels/pointwise/cross_product.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::for_each_index;
using testing::get;
using testing::make_tensor;
using testing::random_tensor;
using testing::round_to;

// Component k of a x b at `index` (whose entry at dim is ignored), in double.
double component(const TensorView& a, const TensorView& b, std::vector<int64_t> index, int dim,
                 int k) {
  auto at = [&](const TensorView& v, int j) {
    index[dim] = j;
    return get(v, index);
  };
  const int i1 = (k + 1) % 3, i2 = (k + 2) % 3;
  return at(a, i1) * at(b, i2) - at(a, i2) * at(b, i1);
}

void expect_cross(const TensorView& out, const TensorView& a, const TensorView& b, int dim) {
  for_each_index(out, [&](const std::vector<int64_t>& index) {
    const double exact = component(a, b, index, dim, static_cast<int>(index[dim]));
    const double expected = round_to(out.dtype, exact);
    EXPECT_NEAR(get(out, index), expected, testing::tolerance(out.dtype, exact))
        << dtype_name(out.dtype) << " dim " << dim;
  });
}

TEST(CrossProduct, MatchesTheFormulaAtEveryDimAndFloatDtype) {
  std::mt19937 rng(3);
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64}) {
    for (int dim = 0; dim < 3; ++dim) {
      std::vector<int64_t> sizes = {4, 5, 6};
      sizes[dim] = 3;
      auto a = random_tensor(dtype, sizes, rng, -3, 3);
      auto b = random_tensor(dtype, sizes, rng, -3, 3);
      auto out = make_tensor(dtype, sizes);
      cross_product(out.view, a.view, b.view, dim);
      expect_cross(out.view, a.view, b.view, dim);
    }
  }
}

TEST(CrossProduct, BroadcastAndTransposedOperands) {
  std::mt19937 rng(4);
  auto a = random_tensor(DType::Float32, {1, 3}, rng);
  auto b = random_tensor(DType::Float32, {3, 7}, rng);
  const TensorView a_wide = testing::expand(a.view, {7, 3});
  const TensorView b_transposed = testing::permute(b.view, {1, 0});
  auto out = make_tensor(DType::Float32, {7, 3});
  cross_product(out.view, a_wide, b_transposed, 1);
  expect_cross(out.view, a_wide, b_transposed, 1);
}

TEST(CrossProduct, IntegersWrapAsTheirType) {
  for (DType dtype : {DType::Int8, DType::UInt8, DType::Int16, DType::Int32, DType::Int64}) {
    auto a = make_tensor(dtype, {3});
    auto b = make_tensor(dtype, {3});
    const std::vector<double> av = {100, 120, 7}, bv = {-3, 90, 110};
    for (int64_t i = 0; i < 3; ++i) {
      testing::set(a.view, {i}, av[i]);
      testing::set(b.view, {i}, bv[i]);
    }
    auto out = make_tensor(dtype, {3});
    cross_product(out.view, a.view, b.view, 0);
    for (int64_t k = 0; k < 3; ++k) {
      // The exact integer, wrapped as the element type wraps it.
      const auto exact = static_cast<int64_t>(component(a.view, b.view, {0}, 0, k));
      EXPECT_EQ(get(out.view, {k}), round_to(dtype, static_cast<double>(exact)))
          << dtype_name(dtype) << " component " << k;
    }
  }
}

TEST(CrossProduct, OutMayBeAnOperandAndBoolIsRefused) {
  std::mt19937 rng(5);
  auto a = random_tensor(DType::Float32, {2, 3}, rng);
  auto b = random_tensor(DType::Float32, {2, 3}, rng);
  auto expected = make_tensor(DType::Float32, {2, 3});
  cross_product(expected.view, a.view, b.view, 1);
  cross_product(a.view, a.view, b.view, 1);
  for_each_index(a.view, [&](const std::vector<int64_t>& index) {
    EXPECT_EQ(get(a.view, index), get(expected.view, index));
  });
  auto flags = make_tensor(DType::Bool, {3});
  EXPECT_THROW(cross_product(flags.view, flags.view, flags.view, 0), std::invalid_argument);
}

}  // namespace
}  // namespace openneuron::kernels
