// Conversions (bit-exact against values PyTorch 2.13 produces) and copy()/fill().
#include "kernels/pointwise/cast.h"

#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "kernels/core/float_conversions.h"
#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::expand;
using testing::get;
using testing::make_tensor;
using testing::permute;
using testing::set;
using testing::slice;

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

struct KnownBits {
  float value;
  uint32_t bits;
};

// Expected bits below were produced by torch.tensor([v]).to(dtype).view(int).
TEST(FloatConversions, BFloat16MatchesPyTorch) {
  const KnownBits cases[] = {{1.00390625f, 0x3F80}, {1.01171875f, 0x3F82}, {kInf, 0x7F80},
                             {3.4e38f, 0x7F80},     {-0.0f, 0x8000},       {1e-40f, 0x0001},
                             {-2.5f, 0xC020}};
  for (const auto& c : cases) EXPECT_EQ(float_to_bfloat16_bits(c.value), c.bits) << c.value;
  EXPECT_TRUE(std::isnan(bfloat16_bits_to_float(float_to_bfloat16_bits(kNaN))));
  EXPECT_TRUE(std::isnan(bfloat16_bits_to_float(float_to_bfloat16_bits(-kNaN))));
}

TEST(FloatConversions, HalfMatchesPyTorch) {
  const KnownBits cases[] = {{65520.f, 0x7C00},  {65519.f, 0x7BFF},  {65504.f, 0x7BFF},
                             {kNaN, 0x7E00},     {-kNaN, 0xFE00},    {1e-8f, 0x0000},
                             {2.98e-8f, 0x0000}, {5.96e-8f, 0x0001}, {1e-7f, 0x0002},
                             {-0.0f, 0x8000},    {kInf, 0x7C00},     {-kInf, 0xFC00}};
  for (const auto& c : cases) EXPECT_EQ(float_to_half_bits(c.value), c.bits) << c.value;
}

TEST(FloatConversions, Float8E4M3FnMatchesPyTorch) {
  // PyTorch 2.13 saturates finite overflow and infinities to +-448 for e4m3fn.
  const KnownBits cases[] = {
      {448.f, 0x7E}, {464.f, 0x7E},   {465.f, 0x7E},    {479.f, 0x7E},        {480.f, 0x7E},
      {500.f, 0x7E}, {-500.f, 0xFE},  {kNaN, 0x7F},     {-kNaN, 0xFF},        {kInf, 0x7E},
      {-kInf, 0xFE}, {0x1p-9f, 0x01}, {0x1p-10f, 0x00}, {3 * 0x1p-11f, 0x01}, {0.001f, 0x01},
      {1e-5f, 0x00}, {240.f, 0x77},   {17.f, 0x58}};
  for (const auto& c : cases) EXPECT_EQ(float_to_e4m3fn_bits(c.value), c.bits) << c.value;
  EXPECT_EQ(e4m3fn_bits_to_float(0x7E), 448.f);
  EXPECT_TRUE(std::isnan(e4m3fn_bits_to_float(0x7F)));
  EXPECT_TRUE(std::isnan(e4m3fn_bits_to_float(0xFF)));
}

TEST(FloatConversions, Float8E5M2MatchesPyTorch) {
  const KnownBits cases[] = {{57344.f, 0x7B},  {61439.f, 0x7B}, {61440.f, 0x7C},
                             {70000.f, 0x7C},  {kNaN, 0x7F},    {-kNaN, 0xFF},
                             {kInf, 0x7C},     {-kInf, 0xFC},   {0x1p-16f, 0x01},
                             {0x1p-17f, 0x00}, {1.3e-5f, 0x01}, {3 * 0x1p-18f, 0x01}};
  for (const auto& c : cases) EXPECT_EQ(float_to_e5m2_bits(c.value), c.bits) << c.value;
}

// Reference decoding with ldexp, independent of the library's bit tricks.
double reference_decode(uint32_t code, int exp_bits, int man_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const uint32_t exponent = (code >> man_bits) & ((1u << exp_bits) - 1);
  const uint32_t mantissa = code & ((1u << man_bits) - 1);
  const double sign = (code >> (exp_bits + man_bits)) & 1 ? -1.0 : 1.0;
  if (exponent == 0) return sign * std::ldexp(mantissa, 1 - bias - man_bits);
  return sign *
         std::ldexp((1u << man_bits) + mantissa, static_cast<int>(exponent) - bias - man_bits);
}

// Checks decoding of every finite positive code, and round-to-nearest-even at, just below and
// just above each midpoint between neighbouring codes.
template <typename Encode, typename Decode>
void check_format(int exp_bits, int man_bits, uint32_t max_finite_code, Encode encode,
                  Decode decode) {
  for (uint32_t code = 0; code <= max_finite_code; ++code) {
    ASSERT_EQ(decode(code), reference_decode(code, exp_bits, man_bits)) << code;
    ASSERT_EQ(encode(decode(code)), code) << code;
    if (code == max_finite_code) break;
    const float midpoint = static_cast<float>((reference_decode(code, exp_bits, man_bits) +
                                               reference_decode(code + 1, exp_bits, man_bits)) /
                                              2);
    ASSERT_EQ(encode(midpoint), (code & 1) ? code + 1 : code) << code;
    ASSERT_EQ(encode(std::nextafter(midpoint, 0.f)), code) << code;
    ASSERT_EQ(encode(std::nextafter(midpoint, kInf)), code + 1) << code;
    ASSERT_EQ(encode(-decode(code)), code | (1u << (exp_bits + man_bits))) << code;
  }
}

TEST(FloatConversions, HalfRoundsToNearestEvenEverywhere) {
  check_format(
      5, 10, 0x7BFF, [](float v) { return uint32_t{float_to_half_bits(v)}; },
      [](uint32_t c) { return half_bits_to_float(static_cast<uint16_t>(c)); });
}

TEST(FloatConversions, BFloat16RoundsToNearestEvenEverywhere) {
  check_format(
      8, 7, 0x7F7F, [](float v) { return uint32_t{float_to_bfloat16_bits(v)}; },
      [](uint32_t c) { return bfloat16_bits_to_float(static_cast<uint16_t>(c)); });
}

TEST(FloatConversions, Float8RoundsToNearestEvenEverywhere) {
  check_format(
      4, 3, 0x7E, [](float v) { return uint32_t{float_to_e4m3fn_bits(v)}; },
      [](uint32_t c) { return e4m3fn_bits_to_float(static_cast<uint8_t>(c)); });
  check_format(
      5, 2, 0x7B, [](float v) { return uint32_t{float_to_e5m2_bits(v)}; },
      [](uint32_t c) { return e5m2_bits_to_float(static_cast<uint8_t>(c)); });
}

TEST(CastValue, FollowsPyTorchIntegerSemantics) {
  EXPECT_EQ(cast_value<int32_t>(1e10f), INT_MIN);  // torch gives -2147483648
  EXPECT_EQ(cast_value<int32_t>(kNaN), INT_MIN);
  EXPECT_EQ(cast_value<int32_t>(-3.7f), -3);
  EXPECT_EQ(cast_value<uint8_t>(300.7), 44);
  EXPECT_EQ(cast_value<uint8_t>(-1.5), 255);
  EXPECT_EQ(cast_value<uint8_t>(int64_t{300}), 44);
  EXPECT_TRUE(cast_value<bool>(kNaN));
  EXPECT_FALSE(cast_value<bool>(-0.0f));
  EXPECT_TRUE(cast_value<bool>(int64_t{-2}));
  EXPECT_EQ(cast_value<float>(true), 1.0f);
  // int64 -> float rounds once (no detour through double).
  EXPECT_EQ(cast_value<float>(int64_t{(1ll << 62) + 1}), 0x1p62f);
}

TEST(Copy, ConvertsBetweenAllDtypes) {
  const DType dtypes[] = {DType::Bool,    DType::UInt8,   DType::Int8,       DType::Int16,
                          DType::Int32,   DType::Int64,   DType::Float16,    DType::BFloat16,
                          DType::Float32, DType::Float64, DType::Float8E4M3, DType::Float8E5M2};
  const double values[] = {0, 1, -2, 3.5, 100, -7.25, 0.5};
  for (DType from : dtypes) {
    for (DType to : dtypes) {
      auto src = make_tensor(from, {7});
      auto dst = make_tensor(to, {7});
      for (int64_t i = 0; i < 7; ++i) set(src.view, {i}, values[i]);
      copy(dst.view, src.view);
      for (int64_t i = 0; i < 7; ++i) {
        const double stored = get(src.view, {i});
        EXPECT_EQ(get(dst.view, {i}), testing::round_to(to, stored))
            << dtype_name(from) << " -> " << dtype_name(to) << " at " << i;
      }
    }
  }
}

TEST(Copy, TransposedBroadcastAndSlicedViews) {
  auto src = make_tensor(DType::Float32, {4, 3});
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 3; ++j) set(src.view, {i, j}, i * 10 + j + 0.00390625);
  // Transposed source into a bf16 destination.
  auto dst = make_tensor(DType::BFloat16, {3, 4});
  copy(dst.view, permute(src.view, {1, 0}));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j)
      EXPECT_EQ(get(dst.view, {i, j}), testing::round_to(DType::BFloat16, j * 10 + i + 0.00390625));
  // A row broadcast (stride 0) into every other column of a wider destination.
  auto wide = make_tensor(DType::Float32, {5, 6});
  const TensorView row = expand(slice(src.view, 0, 2, 1), {5, 3});
  copy(slice(wide.view, 1, 0, 3, 2), row);
  for (int64_t i = 0; i < 5; ++i) {
    for (int64_t j = 0; j < 6; ++j) {
      const double expected = j % 2 == 0 ? 20 + j / 2 + 0.00390625 : 0.0;
      EXPECT_EQ(get(wide.view, {i, j}), expected);
    }
  }
  // Same dtype, strided both sides.
  auto same = make_tensor(DType::Float32, {3, 4});
  copy(same.view, permute(src.view, {1, 0}));
  EXPECT_EQ(get(same.view, {2, 3}), 32.00390625);
}

TEST(CopyFromUnsigned, ReadsTheFullUnsignedRange) {
  // The bits of 65535, 2^32 - 1 and 2^64 - 1 read as unsigned, not as -1.
  auto u16 = make_tensor(DType::Int16, {2});
  auto u32 = make_tensor(DType::Int32, {2});
  auto u64 = make_tensor(DType::Int64, {2});
  set(u16.view, {0}, -1);
  set(u32.view, {0}, -1);
  set(u64.view, {0}, -1);
  set(u16.view, {1}, 7);
  set(u32.view, {1}, 7);
  set(u64.view, {1}, 7);
  auto out = make_tensor(DType::Float32, {2});
  copy_from_unsigned(out.view, u16.view);
  EXPECT_EQ(get(out.view, {0}), 65535.0);
  copy_from_unsigned(out.view, u32.view);
  EXPECT_EQ(get(out.view, {0}), 4294967296.0);  // 2^32 - 1 rounds to 2^32 in fp32
  EXPECT_EQ(get(out.view, {1}), 7.0);
  copy_from_unsigned(out.view, u64.view);
  EXPECT_EQ(get(out.view, {0}), 0x1p64);
  auto wide = make_tensor(DType::Int64, {2});
  copy_from_unsigned(wide.view, u32.view);
  EXPECT_EQ(get(wide.view, {0}), 4294967295.0);
  // 2^63 + 2^40 + 1: a single rounding to bf16 (through fp32, as c10 converts) and to fp32.
  auto big = make_tensor(DType::Int64, {});
  *static_cast<uint64_t*>(big.view.data) = (uint64_t{1} << 63) + (uint64_t{1} << 40) + 1;
  auto as_float = make_tensor(DType::Float32, {});
  copy_from_unsigned(as_float.view, big.view);
  EXPECT_EQ(get(as_float.view, {}), 0x1p63 + 0x1p40);
  auto as_bf16 = make_tensor(DType::BFloat16, {});
  copy_from_unsigned(as_bf16.view, big.view);
  EXPECT_EQ(get(as_bf16.view, {}), 0x1p63);
  auto flag = make_tensor(DType::Bool, {2});
  copy_from_unsigned(flag.view, u64.view);
  EXPECT_EQ(get(flag.view, {0}), 1.0);
  EXPECT_THROW(copy_from_unsigned(out.view, make_tensor(DType::UInt8, {2}).view),
               std::invalid_argument);
}

TEST(Copy, ZeroSizeAndZeroDim) {
  auto empty_src = make_tensor(DType::Float32, {0, 3});
  auto empty_dst = make_tensor(DType::Int64, {0, 3});
  copy(empty_dst.view, empty_src.view);
  auto scalar_src = make_tensor(DType::Float32, {});
  auto scalar_dst = make_tensor(DType::Float16, {});
  set(scalar_src.view, {}, 65520.0);
  copy(scalar_dst.view, scalar_src.view);
  EXPECT_TRUE(std::isinf(get(scalar_dst.view, {})));
}

TEST(Fill, ConvertsScalarAndRespectsStrides) {
  auto ints = make_tensor(DType::Int32, {3, 4});
  fill(slice(ints.view, 1, 1, 2, 2), Scalar::from_int(7));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(get(ints.view, {i, j}), j % 2 == 1 ? 7 : 0);
  auto halves = make_tensor(DType::BFloat16, {5});
  fill(halves.view, Scalar::from_double(1.00390625));
  EXPECT_EQ(get(halves.view, {4}), 1.0);
  auto big = make_tensor(DType::Int64, {2});
  fill(big.view, Scalar::from_int((1ll << 60) + 1));
  EXPECT_EQ(*static_cast<int64_t*>(big.view.data), (1ll << 60) + 1);
  auto flags = make_tensor(DType::Bool, {});
  fill(flags.view, Scalar::from_double(0.25));
  EXPECT_EQ(get(flags.view, {}), 1.0);
  auto empty = make_tensor(DType::Float32, {4, 0});
  fill(empty.view, Scalar::from_double(1.0));
}

}  // namespace
}  // namespace openneuron::kernels
