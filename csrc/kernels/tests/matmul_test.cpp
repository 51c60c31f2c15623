// gemm() against a double-precision triple loop, over layouts BLAS reads in place and ones
// that need packing.
#include "kernels/matmul/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::expand;
using testing::get;
using testing::make_tensor;
using testing::permute;
using testing::set;
using testing::slice;

// The 2-D matrix of batch entry b (or the view itself when 2-D).
TensorView matrix_at(const TensorView& v, int64_t b) {
  if (v.ndim == 2) return v;
  TensorView m = slice(v, 0, b, 1);
  m.ndim = 2;
  for (int d = 0; d < 2; ++d) {
    m.sizes[d] = m.sizes[d + 1];
    m.strides[d] = m.strides[d + 1];
  }
  return m;
}

void expect_gemm(const TensorView& out, const TensorView& a, const TensorView& b,
                 const TensorView* bias, double alpha, double beta) {
  const int64_t batches = out.ndim == 3 ? out.sizes[0] : 1;
  const bool low_precision = out.dtype != DType::Float32 && out.dtype != DType::Float64;
  for (int64_t batch = 0; batch < batches; ++batch) {
    const TensorView o = matrix_at(out, batch), x = matrix_at(a, batch), y = matrix_at(b, batch);
    const TensorView c = bias ? matrix_at(*bias, batch) : TensorView{};
    for (int64_t i = 0; i < o.sizes[0]; ++i) {
      for (int64_t j = 0; j < o.sizes[1]; ++j) {
        double dot = 0, magnitude = 0;
        for (int64_t k = 0; k < x.sizes[1]; ++k) {
          dot += get(x, {i, k}) * get(y, {k, j});
          magnitude += std::fabs(get(x, {i, k}) * get(y, {k, j}));
        }
        double expected = alpha * dot;
        if (bias && beta != 0) expected += beta * get(c, {i, j});
        // fp32 accumulation error grows with the sum of magnitudes; low precision also rounds.
        const double tol = 1e-5 * (std::fabs(alpha) * magnitude + 1) +
                           (low_precision ? testing::tolerance(out.dtype, expected) : 0);
        EXPECT_NEAR(get(o, {i, j}), expected, tol) << "batch " << batch << " at " << i << "," << j;
      }
    }
  }
}

class GemmByDtype : public ::testing::TestWithParam<DType> {};

TEST_P(GemmByDtype, PlainAndTransposedOperands) {
  const DType dtype = GetParam();
  std::mt19937 rng(21);
  const int64_t m = 13, k = 17, n = 11;
  auto a = make_tensor(dtype, {m, k});
  auto a_t = make_tensor(dtype, {k, m});  // viewed as [m,k] with strides (1, m)
  auto b = make_tensor(dtype, {k, n});
  auto b_t = make_tensor(dtype, {n, k});
  for (auto* t : {&a, &a_t, &b, &b_t}) testing::fill_random(t->view, rng, -1, 1);
  const TensorView a_views[] = {a.view, permute(a_t.view, {1, 0})};
  const TensorView b_views[] = {b.view, permute(b_t.view, {1, 0})};
  for (const TensorView& x : a_views) {
    for (const TensorView& y : b_views) {
      auto out = make_tensor(dtype, {m, n});
      gemm(out.view, x, y, nullptr, 1.0, 0.0);
      expect_gemm(out.view, x, y, nullptr, 1.0, 0.0);
    }
  }
}

TEST_P(GemmByDtype, BiasBroadcastAlphaBeta) {
  const DType dtype = GetParam();
  std::mt19937 rng(22);
  const int64_t m = 9, k = 5, n = 7;
  auto a = make_tensor(dtype, {m, k});
  auto b = make_tensor(dtype, {k, n});
  auto row_bias = make_tensor(dtype, {1, n});
  auto col_bias = make_tensor(dtype, {m, 1});
  for (auto* t : {&a, &b, &row_bias, &col_bias}) testing::fill_random(t->view, rng, -2, 2);
  const TensorView biases[] = {expand(row_bias.view, {m, n}), expand(col_bias.view, {m, n})};
  for (const TensorView& bias : biases) {
    auto out = make_tensor(dtype, {m, n});
    gemm(out.view, a.view, b.view, &bias, 0.5, 2.0);
    expect_gemm(out.view, a.view, b.view, &bias, 0.5, 2.0);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GemmByDtype,
                         ::testing::Values(DType::Float32, DType::BFloat16, DType::Float16,
                                           DType::Float64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(Gemm, BetaZeroIgnoresNaNBias) {
  auto a = make_tensor(DType::Float32, {2, 3});
  auto b = make_tensor(DType::Float32, {3, 2});
  auto bias = make_tensor(DType::Float32, {2, 2});
  std::mt19937 rng(1);
  testing::fill_random(a.view, rng, -1, 1);
  testing::fill_random(b.view, rng, -1, 1);
  for (int64_t i = 0; i < 2; ++i) set(bias.view, {i, 0}, std::nan(""));
  auto out = make_tensor(DType::Float32, {2, 2});
  gemm(out.view, a.view, b.view, &bias.view, 1.0, 0.0);
  expect_gemm(out.view, a.view, b.view, nullptr, 1.0, 0.0);
}

TEST(Gemm, StridedOperandsAreCopiedAndStridedOutputWritten) {
  std::mt19937 rng(4);
  auto big = make_tensor(DType::Float32, {10, 12});
  testing::fill_random(big.view, rng, -1, 1);
  // Every other column: neither row-major nor transposed-contiguous.
  const TensorView a = slice(big.view, 1, 0, 6, 2);               // [10, 6]
  const TensorView b = slice(slice(big.view, 0, 1, 6), 1, 3, 4);  // [6, 4], padded rows
  auto out_storage = make_tensor(DType::Float32, {4, 10});
  const TensorView out = permute(out_storage.view, {1, 0});  // transposed output
  gemm(out, a, b, nullptr, -1.5, 0.0);
  expect_gemm(out, a, b, nullptr, -1.5, 0.0);
  // Sliced output rows (ldc > N) are written in place.
  auto padded = make_tensor(DType::Float32, {10, 9});
  const TensorView out_rows = slice(padded.view, 1, 2, 4);
  gemm(out_rows, a, b, nullptr, 1.0, 0.0);
  expect_gemm(out_rows, a, b, nullptr, 1.0, 0.0);
  EXPECT_EQ(get(padded.view, {3, 0}), 0.0);
  EXPECT_EQ(get(padded.view, {3, 8}), 0.0);
}

TEST(Gemm, BatchedWithBroadcastOperands) {
  for (DType dtype : {DType::Float32, DType::BFloat16}) {
    std::mt19937 rng(6);
    const int64_t batch = 3, m = 4, k = 6, n = 5;
    auto a = make_tensor(dtype, {batch, m, k});
    auto b = make_tensor(dtype, {batch, k, n});
    auto shared_b = make_tensor(dtype, {1, k, n});
    auto bias = make_tensor(dtype, {1, 1, n});
    for (auto* t : {&a, &b, &shared_b, &bias}) testing::fill_random(t->view, rng, -1, 1);
    const TensorView b_broadcast = expand(shared_b.view, {batch, k, n});
    const TensorView bias_broadcast = expand(bias.view, {batch, m, n});
    // Batched, per-batch b; then a shared b (the folded single-gemm path) with bias.
    auto out = make_tensor(dtype, {batch, m, n});
    gemm(out.view, a.view, b.view, nullptr, 1.0, 0.0);
    expect_gemm(out.view, a.view, b.view, nullptr, 1.0, 0.0);
    gemm(out.view, a.view, b_broadcast, &bias_broadcast, 1.0, 1.0);
    expect_gemm(out.view, a.view, b_broadcast, &bias_broadcast, 1.0, 1.0);
    // Shared a (stride 0 batch) with transposed per-batch b.
    auto b_t = make_tensor(dtype, {batch, n, k});
    testing::fill_random(b_t.view, rng, -1, 1);
    const TensorView a_broadcast = expand(slice(a.view, 0, 1, 1), {batch, m, k});
    const TensorView b_transposed = permute(b_t.view, {0, 2, 1});
    gemm(out.view, a_broadcast, b_transposed, nullptr, 2.0, 0.0);
    expect_gemm(out.view, a_broadcast, b_transposed, nullptr, 2.0, 0.0);
  }
}

TEST(Gemm, DegenerateSizes) {
  // K == 0: the product is zero, leaving beta * bias.
  auto a = make_tensor(DType::Float32, {3, 0});
  auto b = make_tensor(DType::Float32, {0, 2});
  auto bias = make_tensor(DType::Float32, {3, 2});
  std::mt19937 rng(2);
  testing::fill_random(bias.view, rng, -1, 1);
  auto out = make_tensor(DType::Float32, {3, 2});
  gemm(out.view, a.view, b.view, &bias.view, 1.0, 3.0);
  expect_gemm(out.view, a.view, b.view, &bias.view, 1.0, 3.0);
  gemm(out.view, a.view, b.view, nullptr, 1.0, 0.0);
  EXPECT_EQ(get(out.view, {2, 1}), 0.0);
  // M == 0 and a 1x1 result.
  auto empty_out = make_tensor(DType::Float32, {0, 2});
  auto empty_a = make_tensor(DType::Float32, {0, 4});
  auto b4 = make_tensor(DType::Float32, {4, 2});
  gemm(empty_out.view, empty_a.view, b4.view, nullptr, 1.0, 0.0);
  auto row = make_tensor(DType::BFloat16, {1, 3});
  auto col = make_tensor(DType::BFloat16, {3, 1});
  for (int64_t i = 0; i < 3; ++i) {
    set(row.view, {0, i}, i + 1);
    set(col.view, {i, 0}, 2);
  }
  auto dot = make_tensor(DType::BFloat16, {1, 1});
  gemm(dot.view, row.view, col.view, nullptr, 1.0, 0.0);
  EXPECT_EQ(get(dot.view, {0, 0}), 12.0);
}

TEST(Gemm, Bf16RoundsOnceOnStore) {
  // 1 + 1/256 is not a bfloat16; an fp32 accumulation followed by one rounding gives 1.
  auto a = make_tensor(DType::BFloat16, {1, 2});
  auto b = make_tensor(DType::BFloat16, {2, 1});
  set(a.view, {0, 0}, 1.0);
  set(a.view, {0, 1}, 0.00390625);
  set(b.view, {0, 0}, 1.0);
  set(b.view, {1, 0}, 3.0);
  auto out = make_tensor(DType::BFloat16, {1, 1});
  gemm(out.view, a.view, b.view, nullptr, 1.0, 0.0);
  EXPECT_EQ(get(out.view, {0, 0}), 1.015625);  // 1.01171875 rounds to even 1.015625
}

}  // namespace
}  // namespace openneuron::kernels
