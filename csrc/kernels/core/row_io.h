// Gathering a strided row of any dtype into a contiguous compute-type buffer, and scattering
// it back, so arithmetic loops only ever see dense arrays of float, double or int64.
#pragma once

#include <cstdint>

#include "kernels/core/element_types.h"

namespace openneuron::kernels {

// dst[j] = cast<Compute>(element j of the row at src, spaced src_stride bytes apart).
template <typename Compute>
void load_row(Compute* dst, const char* src, int64_t src_stride, DType src_dtype, int64_t count) {
  visit_dtype(src_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (src_stride == static_cast<int64_t>(sizeof(T))) {
      const T* typed = reinterpret_cast<const T*>(src);
      for (int64_t j = 0; j < count; ++j) dst[j] = cast_value<Compute>(typed[j]);
    } else if (src_stride == 0) {
      const Compute value = cast_value<Compute>(*reinterpret_cast<const T*>(src));
      for (int64_t j = 0; j < count; ++j) dst[j] = value;
    } else {
      for (int64_t j = 0; j < count; ++j) {
        dst[j] = cast_value<Compute>(*reinterpret_cast<const T*>(src + j * src_stride));
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
