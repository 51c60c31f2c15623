// MX products against a float64 reference of the block-scaled operands: MXFP8 (both formats)
// and MXFP4, the swizzled and row-major scale layouts, K past one tile of blocks and a partial
// last block, bias, every output dtype; and proof that the comparison catches a misread scale.
#include "kernels/matmul/mx_scaled_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/core/float_conversions.h"
#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::get;
using testing::make_tensor;
using testing::set;

double e2m1_value(uint8_t nibble) {
  static const double magnitudes[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
  const double magnitude = magnitudes[nibble & 7];
  return (nibble & 8) != 0 ? -magnitude : magnitude;
}

// One operand's bytes and scales, and its elements as float64 (scales applied).
struct Operand {
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> scales;
  std::vector<double> values;  // [rows, k]
  MxOperand view;
};

Operand random_operand(std::mt19937& rng, MxElement element, int64_t rows, int64_t k,
                       MxScaleLayout layout) {
  Operand op;
  const bool fp4 = element == MxElement::kFloat4E2M1;
  const int64_t row_bytes = fp4 ? k / 2 : k;
  const int64_t k_blocks = (k + kMxBlock - 1) / kMxBlock;
  op.bytes.resize(size_t(rows * row_bytes));
  const int64_t padded_rows = (rows + 127) / 128 * 128;
  const int64_t padded_blocks = (k_blocks + 3) / 4 * 4;
  op.scales.assign(
      size_t(layout == MxScaleLayout::kSwizzled ? padded_rows * padded_blocks : rows * k_blocks),
      0);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> exponent(127 - 8, 127 + 1);
  for (auto& b : op.bytes) {
    b = uint8_t(byte(rng));
    // No NaN inputs (e4m3fn's 0x7F/0xFF, e5m2's exponent 31): they are tested on their own.
    if (element == MxElement::kFloat8E4M3 && (b & 0x7F) == 0x7F) b = 0x3F;
    if (element == MxElement::kFloat8E5M2 && (b & 0x7C) == 0x7C) b = 0x3C;
  }
  std::vector<double> block_scale(size_t(rows * k_blocks));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t blk = 0; blk < k_blocks; ++blk) {
      const uint8_t e = uint8_t(exponent(rng));
      op.scales[size_t(mx_scale_offset(layout, rows, k_blocks, r, blk))] = e;
      block_scale[size_t(r * k_blocks + blk)] = std::ldexp(1.0, int(e) - 127);
    }
  }
  op.values.resize(size_t(rows * k));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      double v;
      if (fp4) {
        const uint8_t b = op.bytes[size_t(r * row_bytes + c / 2)];
        v = e2m1_value(uint8_t(c % 2 == 0 ? b & 0xF : b >> 4));
      } else if (element == MxElement::kFloat8E4M3) {
        v = e4m3fn_bits_to_float(op.bytes[size_t(r * row_bytes + c)]);
      } else {
        v = e5m2_bits_to_float(op.bytes[size_t(r * row_bytes + c)]);
      }
      op.values[size_t(r * k + c)] = v * block_scale[size_t(r * k_blocks + c / kMxBlock)];
    }
  }
  op.view.data = op.bytes.data();
  op.view.element = element;
  op.view.rows = rows;
  op.view.k = k;
  op.view.row_stride_bytes = row_bytes;
  op.view.scales = op.scales.data();
  op.view.scale_layout = layout;
  return op;
}

struct Case {
  MxElement a_element;
  MxElement b_element;
  int64_t m, n, k;
  MxScaleLayout layout;
  DType out_dtype;
  bool with_bias;
};

// Largest |out - reference| / bound over the output, where the bound is half an ulp of out's
// dtype plus K fp32 roundings of the running sum of magnitudes.
double worst_error_ratio(const Case& c, uint32_t seed, bool misread_scale = false) {
  std::mt19937 rng(seed);
  Operand a = random_operand(rng, c.a_element, c.m, c.k, c.layout);
  Operand b = random_operand(rng, c.b_element, c.n, c.k, c.layout);
  if (misread_scale) a.scales[0] = uint8_t(a.scales[0] + 1);  // the tested kernel sees 2x
  auto out = make_tensor(c.out_dtype, {c.m, c.n});
  auto bias = make_tensor(DType::BFloat16, {c.n});
  std::uniform_real_distribution<double> bias_dist(-4, 4);
  for (int64_t j = 0; j < c.n; ++j) set(bias.view, {j}, bias_dist(rng));
  mx_scaled_gemm(out.view, a.view, b.view, c.with_bias ? &bias.view : nullptr);
  if (misread_scale) a.scales[0] = uint8_t(a.scales[0] - 1);
  const int mantissa_bits = c.out_dtype == DType::Float32    ? 23
                            : c.out_dtype == DType::BFloat16 ? 7
                                                             : 10;
  double worst = 0;
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double dot = 0, magnitude = 0;
      for (int64_t kk = 0; kk < c.k; ++kk) {
        const double p = a.values[size_t(i * c.k + kk)] * b.values[size_t(j * c.k + kk)];
        dot += p;
        magnitude += std::fabs(p);
      }
      const double bias_value = c.with_bias ? get(bias.view, {j}) : 0.0;
      const double reference = dot + bias_value;
      const double half_ulp = std::ldexp(
          1.0, std::max(std::ilogb(reference == 0 ? 1e-30 : reference), -126) - mantissa_bits - 1);
      const double bound =
          half_ulp + (double(c.k) + 1) * std::ldexp(magnitude + std::fabs(bias_value), -24);
      worst = std::max(worst, std::fabs(get(out.view, {i, j}) - reference) / bound);
    }
  }
  return worst;
}

TEST(MxScaledGemmTest, MatchesTheFloat64ProductOfTheScaledBlocks) {
  const Case cases[] = {
      {MxElement::kFloat8E4M3, MxElement::kFloat8E4M3, 5, 7, 64, MxScaleLayout::kSwizzled,
       DType::Float32, false},
      {MxElement::kFloat8E4M3, MxElement::kFloat8E5M2, 130, 9, 160, MxScaleLayout::kSwizzled,
       DType::BFloat16, true},  // rows past one 128-row tile, 5 blocks (two tile columns)
      {MxElement::kFloat8E5M2, MxElement::kFloat8E4M3, 3, 4, 48, MxScaleLayout::kRowMajor,
       DType::Float32, true},  // a partial last block
      {MxElement::kFloat4E2M1, MxElement::kFloat4E2M1, 6, 5, 48, MxScaleLayout::kSwizzled,
       DType::Float16, true},
      {MxElement::kFloat4E2M1, MxElement::kFloat4E2M1, 17, 33, 96, MxScaleLayout::kSwizzled,
       DType::BFloat16, true},
      {MxElement::kFloat4E2M1, MxElement::kFloat4E2M1, 4, 140, 32, MxScaleLayout::kRowMajor,
       DType::Float32, false},
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    EXPECT_LE(worst_error_ratio(c, seed++), 1.0) << "m=" << c.m << " n=" << c.n << " k=" << c.k;
  }
}

TEST(MxScaledGemmTest, AMisreadScaleIsCaught) {
  const Case c{MxElement::kFloat8E4M3,   MxElement::kFloat8E4M3, 4,    4, 64,
               MxScaleLayout::kSwizzled, DType::Float32,         false};
  EXPECT_GT(worst_error_ratio(c, 7, /*misread_scale=*/true), 1.0);
}

TEST(MxScaledGemmTest, SwizzledOffsetsFollowCublasTileLayout) {
  // Row r of a 128 x 4 tile sits at (r % 32) * 16 + (r / 32) * 4; tiles are row-major.
  EXPECT_EQ(mx_scale_offset(MxScaleLayout::kSwizzled, 256, 8, 0, 0), 0);
  EXPECT_EQ(mx_scale_offset(MxScaleLayout::kSwizzled, 256, 8, 1, 0), 16);
  EXPECT_EQ(mx_scale_offset(MxScaleLayout::kSwizzled, 256, 8, 32, 0), 4);
  EXPECT_EQ(mx_scale_offset(MxScaleLayout::kSwizzled, 256, 8, 33, 3), 16 + 4 + 3);
  EXPECT_EQ(mx_scale_offset(MxScaleLayout::kSwizzled, 256, 8, 0, 4), 512);
  EXPECT_EQ(mx_scale_offset(MxScaleLayout::kSwizzled, 256, 8, 128, 0), 1024);
  EXPECT_EQ(mx_scale_offset(MxScaleLayout::kRowMajor, 256, 8, 2, 3), 19);
}

TEST(MxScaledGemmTest, NaNScaleGivesNaNAndEmptyKGivesZeros) {
  std::mt19937 rng(3);
  Operand a = random_operand(rng, MxElement::kFloat8E4M3, 2, 32, MxScaleLayout::kRowMajor);
  Operand b = random_operand(rng, MxElement::kFloat8E4M3, 2, 32, MxScaleLayout::kRowMajor);
  a.scales[1] = 0xFF;  // row 1's only block
  auto out = make_tensor(DType::Float32, {2, 2});
  mx_scaled_gemm(out.view, a.view, b.view, nullptr);
  EXPECT_FALSE(std::isnan(get(out.view, {0, 0})));
  EXPECT_TRUE(std::isnan(get(out.view, {1, 0})));

  a.view.k = b.view.k = 0;
  mx_scaled_gemm(out.view, a.view, b.view, nullptr);
  EXPECT_EQ(get(out.view, {1, 1}), 0.0);
}

TEST(MxScaledGemmTest, RefusesMixedFp4AndFp8) {
  std::mt19937 rng(4);
  Operand a = random_operand(rng, MxElement::kFloat4E2M1, 2, 32, MxScaleLayout::kRowMajor);
  Operand b = random_operand(rng, MxElement::kFloat8E4M3, 2, 32, MxScaleLayout::kRowMajor);
  auto out = make_tensor(DType::Float32, {2, 2});
  EXPECT_THROW(mx_scaled_gemm(out.view, a.view, b.view, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace openneuron::kernels
