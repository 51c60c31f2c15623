#include "sim/dtype.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace openneuron::sim {

namespace {

struct DTypeInfo {
  const char* name;
  int size;
  bool is_float;
};

constexpr DTypeInfo kInfo[] = {
    {"bool", 1, false},           {"int8", 1, false},
    {"int16", 2, false},          {"int32", 4, false},
    {"uint8", 1, false},          {"uint16", 2, false},
    {"uint32", 4, false},         {"float16", 2, true},
    {"bfloat16", 2, true},        {"float32", 4, true},
    {"tfloat32", 4, true},        {"float8_e4m3", 1, true},
    {"float8_e5m2", 1, true},     {"float8_e4m3fn_x4", 4, false},
    {"float8_e5m2_x4", 4, false}, {"float4_e2m1fn_x4", 2, false},
};
static_assert(sizeof(kInfo) / sizeof(kInfo[0]) == static_cast<size_t>(DType::kCount));

uint32_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

float bits_float(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

// A small float format: `exponent_bits`, `mantissa_bits`, IEEE-style infinities or not.
struct MiniFloat {
  int exponent_bits;
  int mantissa_bits;
  bool has_infinity;  // false: e4m3fn (no inf, one NaN pattern, saturating)
  float max_finite;
};

constexpr MiniFloat kHalf{5, 10, true, 65504.0f};
constexpr MiniFloat kE5M2{5, 2, true, 57344.0f};
constexpr MiniFloat kE4M3{4, 3, false, 448.0f};

uint32_t encode(const MiniFloat& format, float value) {
  const int bias = (1 << (format.exponent_bits - 1)) - 1;
  const uint32_t sign =
      std::signbit(value) ? 1u << (format.exponent_bits + format.mantissa_bits) : 0u;
  const uint32_t exponent_all_ones = (1u << format.exponent_bits) - 1;
  if (std::isnan(value)) {
    if (format.has_infinity) {
      return sign | (exponent_all_ones << format.mantissa_bits) |
             (1u << (format.mantissa_bits - 1));
    }
    return sign | (exponent_all_ones << format.mantissa_bits) | ((1u << format.mantissa_bits) - 1);
  }
  float magnitude = std::fabs(value);
  const int min_normal_exponent = 1 - bias;
  if (magnitude != 0.0f && std::isfinite(magnitude)) {
    int exponent;
    std::frexp(magnitude, &exponent);
    const int unit = std::max(exponent - 1, min_normal_exponent) - format.mantissa_bits;
    magnitude = std::ldexp(std::nearbyint(std::ldexp(magnitude, -unit)), unit);
  }
  if (magnitude > format.max_finite) {
    if (format.has_infinity) return sign | (exponent_all_ones << format.mantissa_bits);
    magnitude = format.max_finite;
  }
  if (magnitude == 0.0f) return sign;
  int exponent;
  std::frexp(magnitude, &exponent);
  if (exponent - 1 < min_normal_exponent) {
    const auto mantissa =
        static_cast<uint32_t>(std::ldexp(magnitude, format.mantissa_bits - min_normal_exponent));
    return sign | mantissa;
  }
  const auto field = static_cast<uint32_t>(exponent - 1 + bias);
  const auto mantissa = static_cast<uint32_t>(
      std::ldexp(std::ldexp(magnitude, 1 - exponent) - 1.0f, format.mantissa_bits));
  return sign | (field << format.mantissa_bits) | mantissa;
}

float decode(const MiniFloat& format, uint32_t bits) {
  const int bias = (1 << (format.exponent_bits - 1)) - 1;
  const uint32_t mantissa_mask = (1u << format.mantissa_bits) - 1;
  const uint32_t exponent_all_ones = (1u << format.exponent_bits) - 1;
  const bool negative = (bits >> (format.exponent_bits + format.mantissa_bits)) & 1u;
  const uint32_t field = (bits >> format.mantissa_bits) & exponent_all_ones;
  const uint32_t mantissa = bits & mantissa_mask;
  float magnitude;
  if (field == exponent_all_ones && format.has_infinity) {
    magnitude =
        mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else if (field == exponent_all_ones && mantissa == mantissa_mask) {
    magnitude = std::numeric_limits<float>::quiet_NaN();
  } else if (field == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), 1 - bias - format.mantissa_bits);
  } else {
    magnitude = std::ldexp(1.0f + std::ldexp(static_cast<float>(mantissa), -format.mantissa_bits),
                           static_cast<int>(field) - bias);
  }
  return negative ? -magnitude : magnitude;
}

uint16_t to_bfloat16(float value) {
  uint32_t bits = float_bits(value);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

float to_tfloat32(float value) {
  uint32_t bits = float_bits(value);
  if (std::isnan(value)) return value;
  bits += 0xfffu + ((bits >> 13) & 1u);
  return bits_float(bits & 0xffffe000u);
}

template <typename Int>
Int saturate(float value) {
  if (std::isnan(value)) return 0;
  const float rounded = std::nearbyint(value);
  if (rounded <= static_cast<float>(std::numeric_limits<Int>::min())) {
    return std::numeric_limits<Int>::min();
  }
  if (rounded >= static_cast<float>(std::numeric_limits<Int>::max())) {
    return std::numeric_limits<Int>::max();
  }
  return static_cast<Int>(rounded);
}

template <typename T>
T read(const void* ptr) {
  T value;
  std::memcpy(&value, ptr, sizeof(T));
  return value;
}

template <typename T>
void write(void* ptr, T value) {
  std::memcpy(ptr, &value, sizeof(T));
}

}  // namespace

int dtype_size(DType dtype) { return kInfo[static_cast<int>(dtype)].size; }
const char* dtype_name(DType dtype) { return kInfo[static_cast<int>(dtype)].name; }
bool is_float(DType dtype) { return kInfo[static_cast<int>(dtype)].is_float; }

DType dtype_from_name(const std::string& name) {
  for (int i = 0; i < static_cast<int>(DType::kCount); ++i) {
    if (name == kInfo[i].name) return static_cast<DType>(i);
  }
  throw std::invalid_argument("unknown dtype '" + name + "'");
}

float load_element(DType dtype, const void* ptr) {
  switch (dtype) {
    case DType::kBool:
      return read<uint8_t>(ptr) ? 1.0f : 0.0f;
    case DType::kInt8:
      return read<int8_t>(ptr);
    case DType::kInt16:
      return read<int16_t>(ptr);
    case DType::kInt32:
      return static_cast<float>(read<int32_t>(ptr));
    case DType::kUInt8:
      return read<uint8_t>(ptr);
    case DType::kUInt16:
      return read<uint16_t>(ptr);
    case DType::kUInt32:
      return static_cast<float>(read<uint32_t>(ptr));
    case DType::kFloat16:
      return decode(kHalf, read<uint16_t>(ptr));
    case DType::kBFloat16:
      return bits_float(static_cast<uint32_t>(read<uint16_t>(ptr)) << 16);
    case DType::kFloat32:
    case DType::kTFloat32:
      return read<float>(ptr);
    case DType::kFloat8E4M3:
      return decode(kE4M3, read<uint8_t>(ptr));
    case DType::kFloat8E5M2:
      return decode(kE5M2, read<uint8_t>(ptr));
    case DType::kFloat8E4M3x4:
    case DType::kFloat8E5M2x4:  // opaque: the rules let only bit moves and kMatmulMx read them
      return static_cast<float>(read<uint32_t>(ptr));
    case DType::kFloat4E2M1x4:
      return read<uint16_t>(ptr);
    case DType::kCount:
      break;
  }
  return 0.0f;
}

void store_element(DType dtype, void* ptr, float value) {
  switch (dtype) {
    case DType::kBool:
      write<uint8_t>(ptr, value != 0.0f ? 1 : 0);
      return;
    case DType::kInt8:
      write(ptr, saturate<int8_t>(value));
      return;
    case DType::kInt16:
      write(ptr, saturate<int16_t>(value));
      return;
    case DType::kInt32:
      write(ptr, saturate<int32_t>(value));
      return;
    case DType::kUInt8:
      write(ptr, saturate<uint8_t>(value));
      return;
    case DType::kUInt16:
      write(ptr, saturate<uint16_t>(value));
      return;
    case DType::kUInt32:
      write(ptr, saturate<uint32_t>(value));
      return;
    case DType::kFloat16:
      write(ptr, static_cast<uint16_t>(encode(kHalf, value)));
      return;
    case DType::kBFloat16:
      write(ptr, to_bfloat16(value));
      return;
    case DType::kFloat32:
      write(ptr, value);
      return;
    case DType::kTFloat32:
      write(ptr, to_tfloat32(value));
      return;
    case DType::kFloat8E4M3:
      write(ptr, static_cast<uint8_t>(encode(kE4M3, value)));
      return;
    case DType::kFloat8E5M2:
      write(ptr, static_cast<uint8_t>(encode(kE5M2, value)));
      return;
    case DType::kFloat8E4M3x4:
    case DType::kFloat8E5M2x4:
      write(ptr, saturate<uint32_t>(value));
      return;
    case DType::kFloat4E2M1x4:
      write(ptr, saturate<uint16_t>(value));
      return;
    case DType::kCount:
      return;
  }
}

bool is_packed_mx(DType dtype) {
  return dtype == DType::kFloat8E4M3x4 || dtype == DType::kFloat8E5M2x4 ||
         dtype == DType::kFloat4E2M1x4;
}

float round_to(DType dtype, float value) {
  uint8_t storage[4];
  store_element(dtype, storage, value);
  return load_element(dtype, storage);
}

void load_row(DType dtype, const uint8_t* src, float* dst, int64_t count) {
  if (dtype == DType::kFloat32 || dtype == DType::kTFloat32) {
    std::memcpy(dst, src, static_cast<size_t>(count) * 4);
  } else if (dtype == DType::kBFloat16) {
    for (int64_t i = 0; i < count; ++i) {
      dst[i] = bits_float(static_cast<uint32_t>(read<uint16_t>(src + 2 * i)) << 16);
    }
  } else {
    const int size = dtype_size(dtype);
    for (int64_t i = 0; i < count; ++i) dst[i] = load_element(dtype, src + i * size);
  }
}

void store_row(DType dtype, const float* src, uint8_t* dst, int64_t count) {
  if (dtype == DType::kFloat32) {
    std::memcpy(dst, src, static_cast<size_t>(count) * 4);
  } else if (dtype == DType::kBFloat16) {
    for (int64_t i = 0; i < count; ++i) write(dst + 2 * i, to_bfloat16(src[i]));
  } else {
    const int size = dtype_size(dtype);
    for (int64_t i = 0; i < count; ++i) store_element(dtype, dst + i * size, src[i]);
  }
}

}  // namespace openneuron::sim
