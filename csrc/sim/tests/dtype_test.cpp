#include "sim/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace openneuron::sim {
namespace {

TEST(DType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::kBFloat16), 2);
  EXPECT_EQ(dtype_size(DType::kFloat8E4M3), 1);
  EXPECT_EQ(dtype_from_name("float8_e5m2"), DType::kFloat8E5M2);
  EXPECT_THROW(dtype_from_name("float64"), std::invalid_argument);
}

TEST(DType, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(round_to(DType::kBFloat16, 1.0f + 1.0f / 256), 1.0f);  // halfway: to even
  EXPECT_EQ(round_to(DType::kBFloat16, 1.0f + 3.0f / 256), 1.0f + 4.0f / 256);
  EXPECT_TRUE(std::isnan(round_to(DType::kBFloat16, std::nanf(""))));
}

TEST(DType, Float16MatchesIeee) {
  EXPECT_EQ(round_to(DType::kFloat16, 65504.0f), 65504.0f);
  EXPECT_TRUE(std::isinf(round_to(DType::kFloat16, 70000.0f)));
  EXPECT_EQ(round_to(DType::kFloat16, 1.0f + 1.0f / 2048), 1.0f);
  EXPECT_EQ(round_to(DType::kFloat16, 5.9604645e-08f), 5.9604645e-08f);  // smallest subnormal
  EXPECT_EQ(round_to(DType::kFloat16, -0.333333f), -0.33325195f);
}

TEST(DType, Float8Formats) {
  EXPECT_EQ(round_to(DType::kFloat8E4M3, 1000.0f), 448.0f);  // saturates: no infinity
  EXPECT_EQ(round_to(DType::kFloat8E4M3, 0.3f), 0.3125f);
  EXPECT_EQ(round_to(DType::kFloat8E5M2, 57344.0f), 57344.0f);
  EXPECT_TRUE(std::isinf(round_to(DType::kFloat8E5M2, 1e6f)));
  EXPECT_EQ(round_to(DType::kFloat8E5M2, 0.3f), 0.3125f);
  // Every e4m3 code decodes and re-encodes to itself (except NaN).
  for (int code = 0; code < 256; ++code) {
    const uint8_t bits = static_cast<uint8_t>(code);
    const float value = load_element(DType::kFloat8E4M3, &bits);
    if (std::isnan(value)) continue;
    uint8_t back;
    store_element(DType::kFloat8E4M3, &back, value);
    EXPECT_EQ(back == bits || (value == 0.0f), true) << code;
  }
}

TEST(DType, IntegersRoundAndSaturate) {
  EXPECT_EQ(round_to(DType::kInt8, 300.0f), 127.0f);
  EXPECT_EQ(round_to(DType::kUInt8, -3.0f), 0.0f);
  EXPECT_EQ(round_to(DType::kInt32, 2.5f), 2.0f);
  EXPECT_EQ(round_to(DType::kBool, 0.5f), 1.0f);
}

}  // namespace
}  // namespace openneuron::sim
