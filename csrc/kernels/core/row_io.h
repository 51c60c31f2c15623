// Gathering a strided row of any dtype into a contiguous compute-type buffer, and scattering
// it back, so arithmetic loops only ever see dense arrays of float, double or int64.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/core/element_types.h"

namespace openneuron::kernels {

// One element read from memory. A bool is read through its byte and any nonzero byte is true,
// as on the CPU: a bool view of other bytes (uint8 viewed as bool) holds values besides 0 and 1.
template <typename T>
inline T load_value(const T* p) {
  if constexpr (std::is_same_v<T, bool>) {
    return *reinterpret_cast<const uint8_t*>(p) != 0;
  } else {
    return *p;
  }
}

// dst[j] = cast<Compute>(element j of the row at src, spaced src_stride bytes apart).
template <typename Compute>
void load_row(Compute* dst, const char* src, int64_t src_stride, DType src_dtype, int64_t count) {
  visit_dtype(src_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (src_stride == static_cast<int64_t>(sizeof(T))) {
      const T* typed = reinterpret_cast<const T*>(src);
      for (int64_t j = 0; j < count; ++j) dst[j] = cast_value<Compute>(load_value(typed + j));
    } else if (src_stride == 0) {
      const Compute value = cast_value<Compute>(load_value(reinterpret_cast<const T*>(src)));
      for (int64_t j = 0; j < count; ++j) dst[j] = value;
    } else {
      for (int64_t j = 0; j < count; ++j) {
        dst[j] = cast_value<Compute>(load_value(reinterpret_cast<const T*>(src + j * src_stride)));
      }
    }
  });
}

// Element j of the row at dst (spaced dst_stride bytes apart) = cast<dst_dtype>(src[j]).
template <typename Compute>
void store_row(char* dst, int64_t dst_stride, DType dst_dtype, const Compute* src, int64_t count) {
  visit_dtype(dst_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (dst_stride == static_cast<int64_t>(sizeof(T))) {
      T* typed = reinterpret_cast<T*>(dst);
      for (int64_t j = 0; j < count; ++j) typed[j] = cast_value<T>(src[j]);
    } else {
      for (int64_t j = 0; j < count; ++j) {
        *reinterpret_cast<T*>(dst + j * dst_stride) = cast_value<T>(src[j]);
      }
    }
  });
}

}  // namespace openneuron::kernels
