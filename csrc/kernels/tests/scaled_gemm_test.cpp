// Scaled float8 products against a float64 reference of the dequantised product: tensor-wise
// and row-wise scales, every output dtype, bias, mixed float8 formats, CUDA's column-major
// right operand, the grouped layouts; and proof that the comparison catches a wrong scale.
#include "kernels/matmul/scaled_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/runtime/gemm_library.h"
#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::get;
using testing::HostTensor;
using testing::make_tensor;
using testing::set;

HostTensor vector_of(const std::vector<double>& values, DType dtype = DType::Float32) {
  auto t = make_tensor(dtype, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) set(t.view, {static_cast<int64_t>(i)}, values[i]);
  return t;
}

std::vector<double> random_scales(std::mt19937& rng, int64_t n) {
  std::uniform_real_distribution<double> dist(0.01, 0.5);
  std::vector<double> scales(static_cast<size_t>(n));
  for (auto& s : scales) s = static_cast<float>(dist(rng));
  return scales;
}

// Spacing of `dtype`'s values at magnitude |x| (its unit in the last place).
double ulp(DType dtype, double x) {
  const int mantissa_bits = dtype == DType::Float32      ? 23
                            : dtype == DType::BFloat16   ? 7
                            : dtype == DType::Float16    ? 10
                            : dtype == DType::Float8E4M3 ? 3
                                                         : 2;
  const int min_exponent = dtype == DType::Float32      ? -126
                           : dtype == DType::BFloat16   ? -126
                           : dtype == DType::Float16    ? -14
                           : dtype == DType::Float8E4M3 ? -6
                                                        : -14;
  const int exponent = x == 0 ? min_exponent : std::max(std::ilogb(x), min_exponent);
  return std::ldexp(1.0, exponent - mantissa_bits);
}

// The reference of one output element and what bounds an fp32-accumulated result's distance
// to it: half an ulp of out's rounding, plus K fp32 roundings of the partial sums and two of
// the scale products (each at most 2^-24 of what it rounds).
struct Expected {
  double value;
  double bound;
};

Expected expected_element(DType out_dtype, double dot, double abs_dot, int64_t k, double scale,
                          double bias) {
  const double value = dot * scale + bias;
  const double fp32_error = (static_cast<double>(k) + 3) * std::ldexp(1.0, -24) *
                            (abs_dot * std::fabs(scale) + std::fabs(bias));
  const double rounding = out_dtype == DType::Float32 ? 0.0 : 0.5 * ulp(out_dtype, value);
  return {value, rounding * (1 + 1e-6) + fp32_error};
}

// Largest |out - reference| / bound over out [M, N] = scales * (a @ b) + bias (1 = at the bound).
double worst_error_ratio(const TensorView& out, const TensorView& a, const TensorView& b,
                         const std::vector<double>& scale_a, const std::vector<double>& scale_b,
                         const std::vector<double>& bias, double result_scale = 1.0) {
  double worst = 0;
  const int64_t k = a.sizes[1];
  for (int64_t i = 0; i < out.sizes[0]; ++i) {
    for (int64_t j = 0; j < out.sizes[1]; ++j) {
      double dot = 0;
      double abs_dot = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double product = get(a, {i, p}) * get(b, {p, j});
        dot += product;
        abs_dot += std::fabs(product);
      }
      const double sa = scale_a.size() == 1 ? scale_a[0] : scale_a[size_t(i)];
      const double sb = scale_b.size() == 1 ? scale_b[0] : scale_b[size_t(j)];
      const double bj = bias.empty() ? 0.0 : bias[size_t(j)];
      Expected e = expected_element(out.dtype, dot * result_scale, abs_dot * result_scale, k,
                                    sa * sb, bj * result_scale);
      const double ratio = std::fabs(get(out, {i, j}) - e.value) / e.bound;
      worst = std::max(worst, ratio);
    }
  }
  return worst;
}

HostTensor random_float8(DType dtype, const std::vector<int64_t>& sizes, std::mt19937& rng) {
  return testing::random_tensor(dtype, sizes, rng, -8.0, 8.0);
}

TEST(ScaledGemm, TensorwiseScalesToEveryWideDtypeStayWithinTheRoundingBound) {
  std::mt19937 rng(11);
  auto a = random_float8(DType::Float8E4M3, {17, 48}, rng);
  auto b = random_float8(DType::Float8E4M3, {48, 20}, rng);
  const std::vector<double> sa = {0.3125}, sb = {0.0419921875};
  auto scale_a = vector_of(sa);
  auto scale_b = vector_of(sb);
  for (DType out_dtype : {DType::Float32, DType::BFloat16, DType::Float16}) {
    auto out = make_tensor(out_dtype, {17, 20});
    scaled_gemm(out.view, a.view, b.view, ProductScales{scale_a.view, scale_b.view});
    EXPECT_LE(worst_error_ratio(out.view, a.view, b.view, sa, sb, {}), 1.0)
        << dtype_name(out_dtype);
  }
}

TEST(ScaledGemm, RowwiseScalesMixedFormatsColumnMajorRightOperandAndBias) {
  std::mt19937 rng(12);
  auto a = random_float8(DType::Float8E4M3, {9, 64}, rng);
  auto b_rows = random_float8(DType::Float8E5M2, {33, 64}, rng);  // CUDA's layout: b^T dense
  const TensorView b = testing::permute(b_rows.view, {1, 0});
  const std::vector<double> sa = random_scales(rng, 9), sb = random_scales(rng, 33);
  std::vector<double> bias(33);
  for (auto& v : bias) v = testing::round_to(DType::BFloat16, std::normal_distribution<>()(rng));
  auto scale_a = vector_of(sa);
  auto scale_b = vector_of(sb);
  auto bias_tensor = vector_of(bias, DType::BFloat16);
  auto out = make_tensor(DType::BFloat16, {9, 33});
  scaled_gemm(out.view, a.view, b, ProductScales{scale_a.view, scale_b.view, &bias_tensor.view});
  EXPECT_LE(worst_error_ratio(out.view, a.view, b, sa, sb, bias), 1.0);
}

// Both routes of the product: float8 widened to bf16 for oneDNN's native bf16 kernels (where
// the host has them) and widened to fp32 for any library. Each must meet the same bound.
TEST(ScaledGemm, TheBf16AndFp32RoutesBothStayWithinTheRoundingBound) {
  for (GemmLibrary library : {GemmLibrary::kOneDnn, GemmLibrary::kOpenBlas}) {
    set_gemm_library_for_testing(library);
    std::mt19937 rng(15);
    auto a = random_float8(DType::Float8E5M2, {70, 300}, rng);
    auto b_rows = random_float8(DType::Float8E4M3, {45, 300}, rng);
    const TensorView b = testing::permute(b_rows.view, {1, 0});
    const std::vector<double> sa = random_scales(rng, 70), sb = random_scales(rng, 45);
    auto scale_a = vector_of(sa);
    auto scale_b = vector_of(sb);
    for (DType out_dtype : {DType::Float32, DType::BFloat16}) {
      auto out = make_tensor(out_dtype, {70, 45});
      scaled_gemm(out.view, a.view, b, ProductScales{scale_a.view, scale_b.view});
      EXPECT_LE(worst_error_ratio(out.view, a.view, b, sa, sb, {}), 1.0)
          << gemm_library_name(library) << " " << dtype_name(out_dtype);
    }
    reset_gemm_library_for_testing();
  }
}

TEST(ScaledGemm, ExactlyRepresentableProductsComeOutExact) {
  // Integer float8 values, power-of-two scales and a short K: every step is exact, so any
  // reordering or extra rounding in the kernel would show.
  auto a = make_tensor(DType::Float8E4M3, {3, 16});
  auto b = make_tensor(DType::Float8E4M3, {16, 2});
  for (int64_t p = 0; p < 16; ++p) {
    for (int64_t i = 0; i < 3; ++i) set(a.view, {i, p}, double((p + i) % 7) - 3);
    for (int64_t j = 0; j < 2; ++j) set(b.view, {p, j}, double((2 * p + j) % 5) - 2);
  }
  auto scale_a = vector_of({0.5, 2.0, 0.25});
  auto scale_b = vector_of({4.0, 0.125});
  auto out = make_tensor(DType::Float32, {3, 2});
  scaled_gemm(out.view, a.view, b.view, ProductScales{scale_a.view, scale_b.view});
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 2; ++j) {
      double dot = 0;
      for (int64_t p = 0; p < 16; ++p) dot += get(a.view, {i, p}) * get(b.view, {p, j});
      EXPECT_EQ(get(out.view, {i, j}), dot * get(scale_a.view, {i}) * get(scale_b.view, {j}));
    }
  }
}

TEST(ScaledGemm, Float8OutputIsMultipliedByTheResultScaleAndSaturates) {
  std::mt19937 rng(13);
  auto a = random_float8(DType::Float8E4M3, {5, 32}, rng);
  auto b = random_float8(DType::Float8E4M3, {32, 16}, rng);
  const std::vector<double> sa = {0.125}, sb = {0.25};
  auto scale_a = vector_of(sa);
  auto scale_b = vector_of(sb);
  auto scale_result = vector_of({0.5});
  auto out = make_tensor(DType::Float8E4M3, {5, 16});
  scaled_gemm(out.view, a.view, b.view,
              ProductScales{scale_a.view, scale_b.view, nullptr, &scale_result.view});
  EXPECT_LE(worst_error_ratio(out.view, a.view, b.view, sa, sb, {}, 0.5), 1.0);

  auto huge = vector_of({1e6});  // every nonzero result overflows e4m3fn: +-448, never NaN
  scaled_gemm(out.view, a.view, b.view,
              ProductScales{scale_a.view, scale_b.view, nullptr, &huge.view});
  for (int64_t i = 0; i < 5; ++i) {
    for (int64_t j = 0; j < 16; ++j) EXPECT_EQ(std::fabs(get(out.view, {i, j})), 448.0);
  }
}

TEST(ScaledGemm, TheComparisonCatchesAScaleOffByLessThanOnePercent) {
  // A kernel that misapplied one row's scale by 1/128 would fail the bound the tests use.
  std::mt19937 rng(14);
  auto a = random_float8(DType::Float8E4M3, {8, 32}, rng);
  auto b = random_float8(DType::Float8E4M3, {32, 16}, rng);
  std::vector<double> sa = random_scales(rng, 8);
  const std::vector<double> sb = random_scales(rng, 16);
  std::vector<double> wrong = sa;
  wrong[5] = static_cast<float>(wrong[5] * (1 + 1.0 / 128));
  auto scale_a = vector_of(wrong);
  auto scale_b = vector_of(sb);
  auto out = make_tensor(DType::BFloat16, {8, 16});
  scaled_gemm(out.view, a.view, b.view, ProductScales{scale_a.view, scale_b.view});
  EXPECT_GT(worst_error_ratio(out.view, a.view, b.view, sa, sb, {}), 1.0);
  EXPECT_LE(worst_error_ratio(out.view, a.view, b.view, wrong, sb, {}), 1.0);
}

TEST(ScaledGemm, ZeroDepthGivesTheBiasAndEmptyOutputsAreFine) {
  auto a = make_tensor(DType::Float8E4M3, {2, 0});
  auto b = make_tensor(DType::Float8E4M3, {0, 3});
  auto scale_a = vector_of({2.0});
  auto scale_b = vector_of({3.0});
  auto bias = vector_of({1.0, -2.0, 0.5}, DType::BFloat16);
  auto out = make_tensor(DType::BFloat16, {2, 3});
  scaled_gemm(out.view, a.view, b.view, ProductScales{scale_a.view, scale_b.view, &bias.view});
  for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(get(out.view, {1, j}), get(bias.view, {j}));
  auto empty = make_tensor(DType::BFloat16, {0, 3});
  auto no_rows = make_tensor(DType::Float8E4M3, {0, 16});
  auto b16 = make_tensor(DType::Float8E4M3, {16, 3});
  scaled_gemm(empty.view, no_rows.view, b16.view, ProductScales{scale_a.view, scale_b.view});
}

TEST(ScaledGemm, RefusesWhatIsOutsideItsContract) {
  auto a = make_tensor(DType::BFloat16, {2, 16});
  auto b = make_tensor(DType::Float8E4M3, {16, 3});
  auto a8 = make_tensor(DType::Float8E4M3, {2, 16});
  auto scale = vector_of({1.0});
  auto wrong_length = vector_of({1.0, 1.0, 1.0});
  auto out = make_tensor(DType::BFloat16, {2, 3});
  EXPECT_THROW(scaled_gemm(out.view, a.view, b.view, ProductScales{scale.view, scale.view}),
               std::invalid_argument);
  EXPECT_THROW(scaled_gemm(out.view, a8.view, b.view, ProductScales{wrong_length.view, scale.view}),
               std::invalid_argument);
}

// Grouped products: each group against the float64 reference with its own scales.
TEST(ScaledGroupedGemm, TokensTimesExpertsUseEachGroupsScalesAndZeroTheTail) {
  std::mt19937 rng(21);
  const int64_t tokens = 10, k = 32, n = 16, groups = 3;
  auto a = random_float8(DType::Float8E4M3, {tokens, k}, rng);
  auto b_rows = random_float8(DType::Float8E4M3, {groups, n, k}, rng);
  const TensorView b = testing::permute(b_rows.view, {0, 2, 1});  // [G, K, N] column-major
  const std::vector<double> sa = random_scales(rng, tokens);
  const std::vector<double> sb = random_scales(rng, groups * n);
  auto scale_a = vector_of(sa);
  auto scale_b_flat = vector_of(sb);
  TensorView scale_b = scale_b_flat.view;
  scale_b.ndim = 2;
  scale_b.sizes[0] = groups;
  scale_b.sizes[1] = n;
  scale_b.strides[0] = n;
  scale_b.strides[1] = 1;
  auto offsets = make_tensor(DType::Int32, {groups});
  const int32_t ends[3] = {4, 4, 8};  // group 1 is empty; tokens 8 and 9 are past the end
  for (int64_t g = 0; g < groups; ++g) set(offsets.view, {g}, ends[g]);
  auto out = make_tensor(DType::BFloat16, {tokens, n});
  testing::fill_random(out.view, rng, 100, 200);
  scaled_grouped_gemm(out.view, a.view, b, scale_a.view, scale_b, &offsets.view);
  int64_t begin = 0;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t end = ends[g];
    if (end > begin) {
      TensorView out_g = out.view, a_g = a.view, b_g = b;
      out_g.data = static_cast<char*>(out.view.data) + begin * n * 2;
      out_g.sizes[0] = end - begin;
      a_g.data = static_cast<char*>(a.view.data) + begin * k;
      a_g.sizes[0] = end - begin;
      b_g.ndim = 2;
      b_g.data = static_cast<char*>(b.data) + g * n * k;
      b_g.sizes[0] = k;
      b_g.sizes[1] = n;
      b_g.strides[0] = 1;
      b_g.strides[1] = k;
      const std::vector<double> sa_g(sa.begin() + begin, sa.begin() + end);
      const std::vector<double> sb_g(sb.begin() + g * n, sb.begin() + (g + 1) * n);
      EXPECT_LE(worst_error_ratio(out_g, a_g, b_g, sa_g, sb_g, {}), 1.0) << "group " << g;
    }
    begin = std::max<int64_t>(begin, end);
  }
  for (int64_t i = 8; i < tokens; ++i) {
    for (int64_t j = 0; j < n; ++j) EXPECT_EQ(get(out.view, {i, j}), 0.0);
  }
}

TEST(ScaledGroupedGemm, WeightGradientFormTakesEachGroupsSliceOfTheScales) {
  std::mt19937 rng(22);
  const int64_t m = 4, n = 16, total = 48, groups = 3;
  auto a = random_float8(DType::Float8E4M3, {m, total}, rng);
  auto b_rows = random_float8(DType::Float8E4M3, {n, total}, rng);
  const TensorView b = testing::permute(b_rows.view, {1, 0});  // [T, N] column-major
  const std::vector<double> sa = random_scales(rng, groups * m);
  const std::vector<double> sb = random_scales(rng, groups * n);
  auto scale_a = vector_of(sa);
  auto scale_b = vector_of(sb);
  auto offsets = make_tensor(DType::Int32, {groups});
  const int32_t ends[3] = {16, 16, 48};  // group 1 is empty: its product is zero
  for (int64_t g = 0; g < groups; ++g) set(offsets.view, {g}, ends[g]);
  auto out = make_tensor(DType::BFloat16, {groups, m, n});
  testing::fill_random(out.view, rng, 100, 200);
  scaled_grouped_gemm(out.view, a.view, b, scale_a.view, scale_b.view, &offsets.view);
  const int64_t starts[3] = {0, 16, 16};
  for (int64_t g = 0; g < groups; ++g) {
    TensorView out_g = out.view;
    out_g.ndim = 2;
    out_g.data = static_cast<char*>(out.view.data) + g * m * n * 2;
    out_g.sizes[0] = m;
    out_g.sizes[1] = n;
    out_g.strides[0] = n;
    out_g.strides[1] = 1;
    TensorView a_g = testing::slice(a.view, 1, starts[g], ends[g] - starts[g]);
    TensorView b_g = testing::slice(b, 0, starts[g], ends[g] - starts[g]);
    const std::vector<double> sa_g(sa.begin() + g * m, sa.begin() + (g + 1) * m);
    const std::vector<double> sb_g(sb.begin() + g * n, sb.begin() + (g + 1) * n);
    EXPECT_LE(worst_error_ratio(out_g, a_g, b_g, sa_g, sb_g, {}), 1.0) << "group " << g;
  }
}

TEST(ScaledGroupedGemm, BatchedExpertsUseTheirOwnRowAndColumnScales) {
  std::mt19937 rng(23);
  const int64_t groups = 2, m = 3, k = 16, n = 16;
  auto a = random_float8(DType::Float8E4M3, {groups, m, k}, rng);
  auto b = random_float8(DType::Float8E4M3, {groups, k, n}, rng);
  const std::vector<double> sa = random_scales(rng, groups * m);
  const std::vector<double> sb = random_scales(rng, groups * n);
  auto scale_a = vector_of(sa);
  auto scale_b = vector_of(sb);
  const auto as_matrix = [](TensorView v, int64_t rows, int64_t cols) {
    v.ndim = 2;
    v.sizes[0] = rows;
    v.sizes[1] = cols;
    v.strides[0] = cols;
    v.strides[1] = 1;
    return v;
  };
  auto out = make_tensor(DType::BFloat16, {groups, m, n});
  scaled_grouped_gemm(out.view, a.view, b.view, as_matrix(scale_a.view, groups, m),
                      as_matrix(scale_b.view, groups, n), nullptr);
  for (int64_t g = 0; g < groups; ++g) {
    TensorView out_g = as_matrix(out.view, m, n), a_g = as_matrix(a.view, m, k),
               b_g = as_matrix(b.view, k, n);
    out_g.data = static_cast<char*>(out.view.data) + g * m * n * 2;
    a_g.data = static_cast<char*>(a.view.data) + g * m * k;
    b_g.data = static_cast<char*>(b.view.data) + g * k * n;
    const std::vector<double> sa_g(sa.begin() + g * m, sa.begin() + (g + 1) * m);
    const std::vector<double> sb_g(sb.begin() + g * n, sb.begin() + (g + 1) * n);
    EXPECT_LE(worst_error_ratio(out_g, a_g, b_g, sa_g, sb_g, {}), 1.0) << "group " << g;
  }
}

}  // namespace
}  // namespace openneuron::kernels
