// C++ storage types for each DType, value conversion between them, and dispatch from a
// runtime DType to a compile-time type.
#pragma once

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/core/dtype.h"
#include "kernels/core/float_conversions.h"

namespace openneuron::kernels {

// Narrow floats are stored as raw bits; arithmetic always happens after widening to fp32.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};
struct Float8E4M3 {
  uint8_t bits;
};
struct Float8E5M2 {
  uint8_t bits;
};

inline float narrow_to_float(Half v) { return half_bits_to_float(v.bits); }
inline float narrow_to_float(BFloat16 v) { return bfloat16_bits_to_float(v.bits); }
inline float narrow_to_float(Float8E4M3 v) { return e4m3fn_bits_to_float(v.bits); }
inline float narrow_to_float(Float8E5M2 v) { return e5m2_bits_to_float(v.bits); }

template <typename T>
inline constexpr bool kIsNarrowFloat =
    std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> || std::is_same_v<T, Float8E4M3> ||
    std::is_same_v<T, Float8E5M2>;

// A value as the kernels compare it: narrow floats as fp32 (exact), everything else as itself.
template <typename T>
auto comparable(T value) {
  if constexpr (kIsNarrowFloat<T>) {
    return narrow_to_float(value);
  } else {
    return value;
  }
}

template <typename T>
inline T narrow_from_float(float value);
template <>
inline Half narrow_from_float<Half>(float value) {
  return Half{float_to_half_bits(value)};
}
template <>
inline BFloat16 narrow_from_float<BFloat16>(float value) {
  return BFloat16{float_to_bfloat16_bits(value)};
}
template <>
inline Float8E4M3 narrow_from_float<Float8E4M3>(float value) {
  return Float8E4M3{float_to_e4m3fn_bits(value)};
}
template <>
inline Float8E5M2 narrow_from_float<Float8E5M2>(float value) {
  return Float8E5M2{float_to_e5m2_bits(value)};
}

namespace detail {

// Every value is first widened losslessly to bool, int64, float or double.
inline bool widen(bool v) { return v; }
inline float widen(float v) { return v; }
inline double widen(double v) { return v; }
template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
inline int64_t widen(T v) {
  return static_cast<int64_t>(v);
}
template <typename T, std::enable_if_t<kIsNarrowFloat<T>, int> = 0>
inline float widen(T v) {
  return narrow_to_float(v);
}

// Float -> integer truncation without undefined behaviour: out-of-range values and NaN give
// the type's minimum, as x86's cvtt* instructions (and so PyTorch on x86) do.
template <typename Int, typename F>
inline Int truncate_float(F value) {
  constexpr double kLimit = static_cast<double>(uint64_t{1} << (sizeof(Int) * 8 - 1));
  const double v = static_cast<double>(value);
  if (!(v >= -kLimit && v < kLimit)) return std::numeric_limits<Int>::min();
  return static_cast<Int>(value);
}

}  // namespace detail

// Converts one value with PyTorch's semantics: floats round to nearest even (double reaches
// narrow floats through fp32), float->int truncates (uint8 via int64, int8/int16 via int32),
// integers wrap, and anything nonzero (including NaN) becomes true.
template <typename To, typename From>
inline To cast_value(From value) {
  const auto wide = detail::widen(value);
  using Wide = decltype(wide);
  if constexpr (std::is_same_v<To, bool>) {
    return wide != 0;
  } else if constexpr (std::is_integral_v<To>) {
    if constexpr (std::is_integral_v<Wide>) {
      return static_cast<To>(wide);
    } else if constexpr (std::is_same_v<To, int64_t> || std::is_same_v<To, int32_t>) {
      return detail::truncate_float<To>(wide);
    } else if constexpr (std::is_same_v<To, uint8_t>) {
      return static_cast<To>(detail::truncate_float<int64_t>(wide));
    } else {
      return static_cast<To>(detail::truncate_float<int32_t>(wide));
    }
  } else if constexpr (std::is_same_v<To, float> || std::is_same_v<To, double>) {
    return static_cast<To>(wide);
  } else {
    static_assert(kIsNarrowFloat<To>, "unsupported destination type");
    return narrow_from_float<To>(static_cast<float>(wide));
  }
}

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls fn(TypeTag<T>{}) with T the storage type of dtype.
template <typename Fn>
decltype(auto) visit_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Bool:
      return fn(TypeTag<bool>{});
    case DType::UInt8:
      return fn(TypeTag<uint8_t>{});
    case DType::Int8:
      return fn(TypeTag<int8_t>{});
    case DType::Int16:
      return fn(TypeTag<int16_t>{});
    case DType::Int32:
      return fn(TypeTag<int32_t>{});
    case DType::Int64:
      return fn(TypeTag<int64_t>{});
    case DType::Float16:
      return fn(TypeTag<Half>{});
    case DType::BFloat16:
      return fn(TypeTag<BFloat16>{});
    case DType::Float32:
      return fn(TypeTag<float>{});
    case DType::Float64:
      return fn(TypeTag<double>{});
    case DType::Float8E4M3:
      return fn(TypeTag<Float8E4M3>{});
    case DType::Float8E5M2:
      return fn(TypeTag<Float8E5M2>{});
  }
  throw std::invalid_argument("openneuron kernels: unknown dtype " +
                              std::to_string(static_cast<int>(dtype)));
}

// Like visit_dtype, restricted to floating dtypes.
template <typename Fn>
decltype(auto) visit_floating_dtype(DType dtype, const char* op_name, Fn&& fn) {
  if (!is_floating(dtype)) {
    throw std::invalid_argument(std::string("openneuron kernels: ") + op_name +
                                " needs a floating dtype, got " + dtype_name(dtype));
  }
  return visit_dtype(dtype, std::forward<Fn>(fn));
}

}  // namespace openneuron::kernels
