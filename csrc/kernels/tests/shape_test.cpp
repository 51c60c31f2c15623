// arange, linspace, logspace, eye, tril/triu and triangle indices against direct formulas.
#include "kernels/shape/shape.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>

#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::get;
using testing::make_tensor;

TEST(Shape, ArangeAndLinspace) {
  auto ints = make_tensor(DType::Int64, {5});
  arange(ints.view, Scalar::from_int(3), Scalar::from_int(-2));
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(get(ints.view, {i}), 3 - 2 * i);
  auto floats = make_tensor(DType::Float32, {40000});  // parallel chunks
  arange(floats.view, Scalar::from_double(0.5), Scalar::from_double(0.25));
  for (int64_t i = 0; i < 40000; i += 997) {
    EXPECT_EQ(get(floats.view, {i}), static_cast<float>(0.5 + 0.25 * i));
  }
  auto spaced = make_tensor(DType::Float32, {11});
  linspace(spaced.view, Scalar::from_double(-1), Scalar::from_double(3));
  EXPECT_EQ(get(spaced.view, {0}), -1.0);
  EXPECT_EQ(get(spaced.view, {10}), 3.0);  // the second half counts down from the end
  EXPECT_NEAR(get(spaced.view, {4}), 0.6, 1e-6);
}

TEST(Shape, LogspaceRoundsTheProductBeforeTheSum) {
  // int8 from -2 to 5 in 50 steps: step 7/49, and exponent -2 + 14 * step is exactly 0 only
  // when the product is rounded first (a fused multiply-add leaves -1e-16, truncating to 0).
  auto ints = make_tensor(DType::Int8, {50});
  logspace(ints.view, Scalar::from_double(-2.3), Scalar::from_double(5.7), 2.0);
  EXPECT_EQ(get(ints.view, {14}), 1.0);
  EXPECT_EQ(get(ints.view, {49}), 32.0);
  auto one = make_tensor(DType::Float32, {1});
  logspace(one.view, Scalar::from_double(1.5), Scalar::from_double(9), 10.0);
  EXPECT_FLOAT_EQ(get(one.view, {0}), std::pow(10.0, 1.5));
}

TEST(Shape, TriangleIndicesInRowMajorOrder) {
  auto lower = make_tensor(DType::Int64, {2, 9});
  triangle_indices(lower.view, 3, 4, 1, /*upper=*/false);
  const double rows[] = {0, 0, 1, 1, 1, 2, 2, 2, 2}, cols[] = {0, 1, 0, 1, 2, 0, 1, 2, 3};
  for (int64_t k = 0; k < 9; ++k) {
    EXPECT_EQ(get(lower.view, {0, k}), rows[k]);
    EXPECT_EQ(get(lower.view, {1, k}), cols[k]);
  }
  auto upper = make_tensor(DType::Int32, {2, 3});
  triangle_indices(upper.view, 3, 3, 1, /*upper=*/true);
  EXPECT_EQ(get(upper.view, {0, 2}), 1.0);
  EXPECT_EQ(get(upper.view, {1, 2}), 2.0);
  EXPECT_THROW(triangle_indices(upper.view, 4, 4, 0, true), std::invalid_argument);
}

TEST(Shape, EyeAndTriangles) {
  auto identity = make_tensor(DType::BFloat16, {3, 4});
  eye(identity.view);
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(get(identity.view, {i, j}), i == j ? 1.0 : 0.0);
  }
  std::mt19937 rng(1);
  auto in = make_tensor(DType::Float32, {2, 4, 5});
  testing::fill_random(in.view, rng, 1, 2);
  for (int64_t diagonal : {-1, 0, 2}) {
    for (bool upper : {false, true}) {
      auto out = make_tensor(DType::Float32, {2, 4, 5});
      triangle(out.view, in.view, diagonal, upper);
      testing::for_each_index(out.view, [&](const std::vector<int64_t>& at) {
        const int64_t offset = at[2] - at[1];
        const bool keep = upper ? offset >= diagonal : offset <= diagonal;
        EXPECT_EQ(get(out.view, at), keep ? get(in.view, at) : 0.0);
      });
    }
  }
}

}  // namespace
}  // namespace openneuron::kernels
