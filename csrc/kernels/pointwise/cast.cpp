// copy() and fill(): dtype conversion over strided, broadcast views.
#include "kernels/pointwise/cast.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "kernels/core/element_types.h"
#include "kernels/core/row_io.h"
#include "kernels/core/strided_loop.h"
#include "kernels/runtime/parallel_views.h"

namespace openneuron::kernels {
namespace {

void check_same_shape(const TensorView& dst, const TensorView& src) {
  bool same = dst.ndim == src.ndim;
  for (int d = 0; same && d < dst.ndim; ++d) same = dst.sizes[d] == src.sizes[d];
  if (!same) throw std::invalid_argument("openneuron kernels: copy() needs src shaped like dst");
}

// Same-dtype rows move bytes; T is an unsigned integer of the element's width.
template <typename T>
void move_row(char* dst, int64_t dst_stride, const char* src, int64_t src_stride, int64_t n) {
  if (src_stride == 0) {
    const T value = *reinterpret_cast<const T*>(src);
    for (int64_t j = 0; j < n; ++j) *reinterpret_cast<T*>(dst + j * dst_stride) = value;
    return;
  }
  for (int64_t j = 0; j < n; ++j) {
    *reinterpret_cast<T*>(dst + j * dst_stride) = *reinterpret_cast<const T*>(src + j * src_stride);
  }
}

// dst(r, c) = src(r, c) over a rows x cols plane where dst is dense along c and src along r:
// square tiles keep the cache lines of both sides in use (a plain loop misses on every read).
template <typename T>
void transpose_plane(char* dst, int64_t dst_row_stride, const char* src, int64_t src_col_stride,
                     int64_t rows, int64_t cols) {
  constexpr int64_t kTile = 16;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    const int64_t r1 = std::min(rows, r0 + kTile);
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t c1 = std::min(cols, c0 + kTile);
      for (int64_t r = r0; r < r1; ++r) {
        T* out = reinterpret_cast<T*>(dst + r * dst_row_stride);
        const char* in = src + r * static_cast<int64_t>(sizeof(T));
        for (int64_t c = c0; c < c1; ++c)
          out[c] = *reinterpret_cast<const T*>(in + c * src_col_stride);
      }
    }
  }
}

// A same-dtype copy between layouts dense along different dims (a transpose), done in tiles.
// Returns false, having copied nothing, for other layouts.
bool copy_transposed(const TensorView& dst, const TensorView& src) {
  int dst_inner = -1, src_inner = -1;
  for (int d = 0; d < dst.ndim; ++d) {
    if (dst.sizes[d] < 2) continue;
    if (dst.strides[d] == 1) dst_inner = d;
    if (src.strides[d] == 1) src_inner = d;
  }
  constexpr int64_t kMinSide = 16;  // narrower planes gain nothing from tiles
  if (dst_inner < 0 || src_inner < 0 || dst_inner == src_inner || dst.sizes[dst_inner] < kMinSide ||
      dst.sizes[src_inner] < kMinSide) {
    return false;
  }
  const auto width = static_cast<int64_t>(element_size(dst.dtype));
  int others[kMaxDims];
  int other_count = 0;
  for (int d = 0; d < dst.ndim; ++d) {
    if (d != dst_inner && d != src_inner && dst.sizes[d] > 1) others[other_count++] = d;
  }
  int64_t index[kMaxDims] = {};
  for (;;) {
    int64_t dst_offset = 0, src_offset = 0;
    for (int k = 0; k < other_count; ++k) {
      dst_offset += index[k] * dst.strides[others[k]];
      src_offset += index[k] * src.strides[others[k]];
    }
    char* out = static_cast<char*>(dst.data) + dst_offset * width;
    const char* in = static_cast<const char*>(src.data) + src_offset * width;
    const int64_t rows = dst.sizes[src_inner], cols = dst.sizes[dst_inner];
    const int64_t dst_row_stride = dst.strides[src_inner] * width;
    const int64_t src_col_stride = src.strides[dst_inner] * width;
    switch (width) {
      case 1:
        transpose_plane<uint8_t>(out, dst_row_stride, in, src_col_stride, rows, cols);
        break;
      case 2:
        transpose_plane<uint16_t>(out, dst_row_stride, in, src_col_stride, rows, cols);
        break;
      case 4:
        transpose_plane<uint32_t>(out, dst_row_stride, in, src_col_stride, rows, cols);
        break;
      default:
        transpose_plane<uint64_t>(out, dst_row_stride, in, src_col_stride, rows, cols);
        break;
    }
    int k = other_count - 1;
    while (k >= 0 && ++index[k] == dst.sizes[others[k]]) index[k--] = 0;
    if (k < 0) return true;
  }
}

void copy_same_dtype(const TensorView& dst, const TensorView& src) {
  if (copy_transposed(dst, src)) return;
  const int64_t width = static_cast<int64_t>(element_size(dst.dtype));
  for_each_row<2>({&dst, &src}, LoopOrder::kFirstOperandMemory,
                  [&](const RowPointers<2>& row, int64_t n) {
                    char* out = row.ptrs[0];
                    const char* in = row.ptrs[1];
                    if (row.strides[0] == width && row.strides[1] == width) {
                      std::memmove(out, in, static_cast<size_t>(n * width));
                      return;
                    }
                    switch (width) {
                      case 1:
                        move_row<uint8_t>(out, row.strides[0], in, row.strides[1], n);
                        break;
                      case 2:
                        move_row<uint16_t>(out, row.strides[0], in, row.strides[1], n);
                        break;
                      case 4:
                        move_row<uint32_t>(out, row.strides[0], in, row.strides[1], n);
                        break;
                      default:
                        move_row<uint64_t>(out, row.strides[0], in, row.strides[1], n);
                        break;
                    }
                  });
}

template <typename To, typename From>
void convert_rows(const TensorView& dst, const TensorView& src) {
  for_each_row<2>(
      {&dst, &src}, LoopOrder::kFirstOperandMemory, [&](const RowPointers<2>& row, int64_t n) {
        char* out = row.ptrs[0];
        const char* in = row.ptrs[1];
        const int64_t out_stride = row.strides[0];
        const int64_t in_stride = row.strides[1];
        if (out_stride == sizeof(To) && in_stride == sizeof(From)) {
          To* typed_out = reinterpret_cast<To*>(out);
          const From* typed_in = reinterpret_cast<const From*>(in);
          for (int64_t j = 0; j < n; ++j) typed_out[j] = cast_value<To>(load_value(typed_in + j));
          return;
        }
        for (int64_t j = 0; j < n; ++j) {
          *reinterpret_cast<To*>(out + j * out_stride) =
              cast_value<To>(load_value(reinterpret_cast<const From*>(in + j * in_stride)));
        }
      });
}

// One unsigned value in dst's type: integers wrap, floats round once (narrow ones through fp32).
template <typename To, typename Unsigned>
To convert_unsigned(Unsigned value) {
  if constexpr (std::is_same_v<To, bool>) {
    return value != 0;
  } else if constexpr (std::is_integral_v<To> || std::is_floating_point_v<To>) {
    return static_cast<To>(value);
  } else {
    return narrow_from_float<To>(static_cast<float>(value));
  }
}

template <typename To, typename Unsigned>
void convert_unsigned_rows(const TensorView& dst, const TensorView& src) {
  for_each_row<2>(
      {&dst, &src}, LoopOrder::kFirstOperandMemory, [&](const RowPointers<2>& row, int64_t n) {
        for (int64_t j = 0; j < n; ++j) {
          const Unsigned value =
              *reinterpret_cast<const Unsigned*>(row.ptrs[1] + j * row.strides[1]);
          *reinterpret_cast<To*>(row.ptrs[0] + j * row.strides[0]) = convert_unsigned<To>(value);
        }
      });
}

// Every element of dst = value.
template <typename T>
void fill_rows(const TensorView& dst, T converted) {
  for_each_row<1>({&dst}, LoopOrder::kFirstOperandMemory,
                  [converted](const RowPointers<1>& row, int64_t n) {
                    char* out = row.ptrs[0];
                    if (row.strides[0] == sizeof(T)) {
                      T* typed = reinterpret_cast<T*>(out);
                      for (int64_t j = 0; j < n; ++j) typed[j] = converted;
                      return;
                    }
                    for (int64_t j = 0; j < n; ++j) {
                      *reinterpret_cast<T*>(out + j * row.strides[0]) = converted;
                    }
                  });
}

}  // namespace

void copy(const TensorView& dst, const TensorView& src) {
  check_same_shape(dst, src);
  if (dst.numel() == 0) return;
  if (dst.dtype == src.dtype) {
    bool exact_alias = dst.data == src.data;
    for (int d = 0; exact_alias && d < dst.ndim; ++d)
      exact_alias = dst.strides[d] == src.strides[d];
    if (exact_alias) return;  // in-place same-dtype copy: nothing to move
    parallel_over_views<2>({dst, src}, [](const std::array<TensorView, 2>& part) {
      copy_same_dtype(part[0], part[1]);
    });
    return;
  }
  visit_dtype(dst.dtype, [&](auto to_tag) {
    visit_dtype(src.dtype, [&](auto from_tag) {
      using To = typename decltype(to_tag)::type;
      using From = typename decltype(from_tag)::type;
      parallel_over_views<2>({dst, src}, [](const std::array<TensorView, 2>& part) {
        convert_rows<To, From>(part[0], part[1]);
      });
    });
  });
}

void copy_from_unsigned(const TensorView& dst, const TensorView& src_bits) {
  check_same_shape(dst, src_bits);
  if (dst.numel() == 0) return;
  visit_dtype(dst.dtype, [&](auto to_tag) {
    using To = typename decltype(to_tag)::type;
    const auto run = [&](auto unsigned_tag) {
      using Unsigned = typename decltype(unsigned_tag)::type;
      parallel_over_views<2>({dst, src_bits}, [](const std::array<TensorView, 2>& part) {
        convert_unsigned_rows<To, Unsigned>(part[0], part[1]);
      });
    };
    switch (src_bits.dtype) {
      case DType::Int16:
        return run(TypeTag<uint16_t>{});
      case DType::Int32:
        return run(TypeTag<uint32_t>{});
      case DType::Int64:
        return run(TypeTag<uint64_t>{});
      default:
        throw std::invalid_argument(
            "openneuron kernels: copy_from_unsigned() reads 16-, 32- or 64-bit elements");
    }
  });
}

void fill(const TensorView& dst, Scalar value) {
  if (dst.numel() == 0) return;
  visit_dtype(dst.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T converted = value.is_integral ? cast_value<T>(value.i) : cast_value<T>(value.f);
    parallel_over_views<1>(
        {dst}, [&](const std::array<TensorView, 1>& part) { fill_rows(part[0], converted); });
  });
}

}  // namespace openneuron::kernels
