// The few-row 16-bit product against a double reference, for both weight layouts, with and
// without bias, widened (fp32) outputs, and sizes off the kernel's lane and block multiples.
#include "kernels/matmul/few_row_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace openneuron::kernels {
namespace {

using testing::get;
using testing::make_tensor;

struct Case {
  DType dtype;
  DType out_dtype;
  int64_t rows, depth, cols;
  bool transposed_weight;
  bool with_bias;
};

std::string describe(const Case& c) {
  return std::string(dtype_name(c.dtype)) + " -> " + dtype_name(c.out_dtype) + " " +
         std::to_string(c.rows) + "x" + std::to_string(c.depth) + "x" + std::to_string(c.cols) +
         (c.transposed_weight ? " transposed weight" : " row-major b") +
         (c.with_bias ? " with bias" : "");
}

void check(const Case& c) {
  std::mt19937 rng(static_cast<unsigned>(c.rows * 131 + c.depth * 7 + c.cols));
  auto a = make_tensor(c.dtype, {c.rows, c.depth});
  auto weight = make_tensor(c.dtype, {c.cols, c.depth});  // [out, in], as a linear layer's
  auto b_row_major = make_tensor(c.dtype, {c.depth, c.cols});
  auto bias = make_tensor(c.out_dtype, {c.rows, c.cols});
  for (auto* t : {&a, &weight, &b_row_major, &bias}) testing::fill_random(t->view, rng, -1, 1);
  const TensorView b =
      c.transposed_weight ? testing::permute(weight.view, {1, 0}) : b_row_major.view;
  auto out = make_tensor(c.out_dtype, {c.rows, c.cols});
  const double alpha = 0.5, beta = c.with_bias ? 2.0 : 0.0;
  ASSERT_TRUE(few_row_gemm(out.view, a.view, b, c.with_bias ? &bias.view : nullptr, alpha, beta))
      << describe(c);
  for (int64_t i = 0; i < c.rows; ++i) {
    for (int64_t j = 0; j < c.cols; ++j) {
      double product = 0, magnitude = 0;
      for (int64_t k = 0; k < c.depth; ++k) {
        const double term = get(a.view, {i, k}) * get(b, {k, j});
        product += term;
        magnitude += std::fabs(term);
      }
      const double expected =
          alpha * product + (c.with_bias ? beta * get(bias.view, {i, j}) : 0.0);
      // One rounding to out's dtype, plus fp32 accumulation (2^-20 of the terms' magnitude).
      const double error = std::fabs(get(out.view, {i, j}) - expected);
      ASSERT_LE(error, testing::tolerance(c.out_dtype, expected) + magnitude / (1 << 20))
          << describe(c) << " [" << i << "," << j << "]: " << get(out.view, {i, j}) << " vs "
          << expected;
    }
  }
}

TEST(FewRowGemm, MatchesTheReferenceForBothWeightLayouts) {
  for (DType dtype : {DType::BFloat16, DType::Float16}) {
    for (bool transposed : {true, false}) {
      for (int64_t rows : {1, 5, 16}) {
        // Depths off the 16 lanes and the 256-deep tiles; widths off the 64-column blocks.
        check({dtype, dtype, rows, 37, 70, transposed, false});
        check({dtype, dtype, rows, 600, 200, transposed, rows == 5});
      }
      check({dtype, DType::Float32, 3, 300, 129, transposed, true});  // a widened out
    }
  }
}

TEST(FewRowGemm, DeclinesWhatItDoesNotCover) {
  auto a = make_tensor(DType::BFloat16, {17, 8});
  auto b = make_tensor(DType::BFloat16, {8, 8});
  auto out = make_tensor(DType::BFloat16, {17, 8});
  EXPECT_FALSE(few_row_gemm(out.view, a.view, b.view, nullptr, 1, 0)) << "more than 16 rows";
  auto a32 = make_tensor(DType::Float32, {2, 8});
  auto b32 = make_tensor(DType::Float32, {8, 8});
  auto out32 = make_tensor(DType::Float32, {2, 8});
  EXPECT_FALSE(few_row_gemm(out32.view, a32.view, b32.view, nullptr, 1, 0)) << "fp32 operands";
  auto wide = make_tensor(DType::BFloat16, {8, 16});
  TensorView strided = wide.view;  // neither dim unit-strided
  strided.sizes[1] = 8;
  strided.strides[1] = 2;
  auto a16 = make_tensor(DType::BFloat16, {2, 8});
  auto out16 = make_tensor(DType::BFloat16, {2, 8});
  EXPECT_FALSE(few_row_gemm(out16.view, a16.view, strided, nullptr, 1, 0)) << "strided b";
}

}  // namespace
}  // namespace openneuron::kernels
