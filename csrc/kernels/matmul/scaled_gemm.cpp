// Scaled float8 products: the float8 operands are widened to bf16 where oneDNN multiplies bf16
// natively, else to fp32 (every float8 value is exact in both, and the product of any two in
// fp32), multiplied with fp32 accumulation (oneDNN, else OpenBLAS),
// and the scales, bias and rounding applied once per element afterwards, as the Tensor engine
// applies them when it evacuates its fp32 PSUM accumulator.
#include "kernels/matmul/scaled_gemm.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/core/dense_float.h"
#include "kernels/core/element_types.h"
#include "kernels/core/float_conversions.h"
#include "kernels/matmul/blas_gemm.h"
#include "kernels/matmul/dnnl_matmul.h"
#include "kernels/matmul/float8_byte_values.h"
#include "kernels/matmul/group_views.h"
#include "kernels/matmul/matrix_view.h"
#include "kernels/pointwise/cast.h"
#include "kernels/runtime/dnnl_runtime.h"
#include "kernels/runtime/gemm_library.h"
#include "kernels/runtime/parallel_views.h"

namespace openneuron::kernels {

namespace {

[[noreturn]] void fail(const std::string& message) {
  throw std::invalid_argument("openneuron kernels: scaled_gemm: " + message);
}

bool is_float8(DType dtype) { return dtype == DType::Float8E4M3 || dtype == DType::Float8E5M2; }

// The 256 values of a float8 format as bf16 bit patterns (every float8 value is exact in bf16).
const std::array<uint16_t, 256>& float8_bf16_bits(bool e5m2) {
  const auto make = [](bool of_e5m2) {
    std::array<uint16_t, 256> table;
    const ByteValueTable& values = float8_byte_values(of_e5m2);
    for (size_t bits = 0; bits < 256; ++bits) table[bits] = float_to_bfloat16_bits(values[bits]);
    return table;
  };
  static const std::array<uint16_t, 256> e4m3 = make(false);
  static const std::array<uint16_t, 256> e5m2_table = make(true);
  return e5m2 ? e5m2_table : e4m3;
}

// Widens the float8 matrix src [R, C] into a dense matrix of `table`'s element (fp32 values or
// bf16 bits): dst[r * C + c] = src[r, c], or, when `transposed`, dst[c * R + r] (chosen so the
// reads run along src's unit stride).
template <typename Element>
void widen(const TensorView& src, Element* dst, bool transposed,
           const std::array<Element, 256>& table) {
  const auto* bytes = static_cast<const uint8_t*>(src.data);
  const int64_t outer = transposed ? src.sizes[1] : src.sizes[0];
  const int64_t inner = transposed ? src.sizes[0] : src.sizes[1];
  const int64_t outer_stride = transposed ? src.strides[1] : src.strides[0];
  const int64_t inner_stride = transposed ? src.strides[0] : src.strides[1];
  const int64_t grain = std::max<int64_t>(1, kParallelGrainElements / std::max<int64_t>(inner, 1));
  parallel_for(0, outer, grain, [&](int64_t first, int64_t last) {
    for (int64_t o = first; o < last; ++o) {
      const uint8_t* row = bytes + o * outer_stride;
      Element* out_row = dst + o * inner;
      if (inner_stride == 1) {
        for (int64_t i = 0; i < inner; ++i) out_row[i] = table[row[i]];
      } else {
        for (int64_t i = 0; i < inner; ++i) out_row[i] = table[row[i * inner_stride]];
      }
    }
  });
}

// a and b widened through `table_of(is_e5m2)` into this thread's operand buffers (b in its
// own layout when `b_transposed`).
template <typename Element, typename TableOf>
std::pair<Element*, Element*> widen_operands(const TensorView& a, const TensorView& b,
                                             bool b_transposed, TableOf&& table_of) {
  auto* a_wide = static_cast<Element*>(dnnl_thread_buffer(
      DnnlBuffer::kScaledLeftOperand, static_cast<size_t>(a.numel()) * sizeof(Element)));
  auto* b_wide = static_cast<Element*>(dnnl_thread_buffer(
      DnnlBuffer::kScaledRightOperand, static_cast<size_t>(b.numel()) * sizeof(Element)));
  widen(a, a_wide, false, table_of(a.dtype == DType::Float8E5M2));
  widen(b, b_wide, b_transposed, table_of(b.dtype == DType::Float8E5M2));
  return {a_wide, b_wide};
}

// The product as bf16 operands with an fp32 result, where oneDNN multiplies bf16 natively (the
// same exact products and fp32 sums as the fp32 route, at the bf16 rate). False where it does
// not (then c is untouched).
bool accumulate_as_bf16(float* c, int64_t ldc, const TensorView& a, const TensorView& b,
                        bool b_transposed) {
  if (!gemm_allows_onednn_bf16()) return false;
  const int64_t m = a.sizes[0];
  const int64_t k = a.sizes[1];
  const int64_t n = b.sizes[1];
  const auto [a16, b16] = widen_operands<uint16_t>(a, b, b_transposed, float8_bf16_bits);
  return dnnl_gemm(matrix_view(c, DType::Float32, m, n, ldc),
                   matrix_view(a16, DType::BFloat16, m, k, k),
                   matrix_view(b16, DType::BFloat16, k, n, b_transposed ? k : n, b_transposed),
                   nullptr, 1.0, 0.0);
}

// The n values of a 1-D view of 1 or n elements, as fp32 (one element repeats).
std::vector<float> widened_vector(const TensorView& view, int64_t n) {
  std::vector<float> values(static_cast<size_t>(n));
  TensorView dst;
  dst.data = values.data();
  dst.dtype = DType::Float32;
  dst.ndim = 1;
  dst.sizes[0] = n;
  dst.strides[0] = 1;
  TensorView src = view;
  if (src.sizes[0] == 1) src.strides[0] = 0;
  src.sizes[0] = n;
  copy(dst, src);
  return values;
}

void check(const TensorView& out, const TensorView& a, const TensorView& b,
           const ProductScales& scales) {
  if (out.ndim != 2 || a.ndim != 2 || b.ndim != 2) fail("operands must be 2-D");
  const int64_t m = out.sizes[0];
  const int64_t n = out.sizes[1];
  if (a.sizes[0] != m || b.sizes[1] != n || a.sizes[1] != b.sizes[0]) {
    fail("shapes do not form [M,K] @ [K,N] -> [M,N]");
  }
  if (!is_float8(a.dtype) || !is_float8(b.dtype)) fail("a and b must be float8");
  const bool wide_out =
      out.dtype == DType::Float32 || out.dtype == DType::BFloat16 || out.dtype == DType::Float16;
  if (!wide_out && !is_float8(out.dtype)) fail("out must be fp32, bf16, fp16 or float8");
  const auto check_scale = [](const TensorView& scale, int64_t length, const char* name) {
    if (scale.dtype != DType::Float32 || scale.ndim != 1 ||
        (scale.sizes[0] != 1 && scale.sizes[0] != length)) {
      fail(std::string(name) + " must be 1-D fp32 with 1 or " + std::to_string(length) +
           " elements");
    }
  };
  check_scale(scales.scale_a, m, "scale_a");
  check_scale(scales.scale_b, n, "scale_b");
  if (scales.bias != nullptr &&
      (scales.bias->ndim != 1 || scales.bias->sizes[0] != n || !is_floating(scales.bias->dtype))) {
    fail("bias must be 1-D floating with N elements");
  }
  if (scales.scale_result != nullptr &&
      (scales.scale_result->dtype != DType::Float32 || scales.scale_result->numel() != 1)) {
    fail("scale_result must hold one fp32 element");
  }
}

// c [M, N] (row stride ldc) = a [M, K] @ b [K, N] in fp32, from the widened operands.
void accumulate(float* c, int64_t ldc, const TensorView& a, const TensorView& b) {
  const int64_t m = a.sizes[0];
  const int64_t k = a.sizes[1];
  const int64_t n = b.sizes[1];
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  // oneDNN wants the left operand row-major; the right one is widened in its own layout
  // (a CUDA-style column-major b becomes a transposed operand, read along its unit stride).
  const bool b_transposed = n > 1 && b.strides[0] == 1 && b.strides[1] != 1;
  if (accumulate_as_bf16(c, ldc, a, b, b_transposed)) return;
  const auto [a32, b32] = widen_operands<float>(a, b, b_transposed, float8_byte_values);
  const int64_t ldb = b_transposed ? k : n;
  if (!dense_sgemm(false, b_transposed, m, n, k, 1.0f, a32, k, b32, ldb, 0.0f, c, ldc)) {
    blas_sgemm(false, b_transposed, m, n, k, 1.0f, a32, k, b32, ldb, 0.0f, c, ldc);
  }
}

// c[i, j] = c[i, j] * (scale_a[i] * scale_b[j]) + bias[j], times scale_result if given.
void scale_in_place(float* c, int64_t ldc, int64_t m, int64_t n, const ProductScales& scales,
                    bool apply_scale_result) {
  const std::vector<float> row_scales = widened_vector(scales.scale_a, m);
  const std::vector<float> column_scales = widened_vector(scales.scale_b, n);
  const std::vector<float> bias =
      scales.bias != nullptr ? widened_vector(*scales.bias, n) : std::vector<float>();
  const float result_scale = apply_scale_result ? widened_vector(*scales.scale_result, 1)[0] : 1.0f;
  const int64_t grain = std::max<int64_t>(1, kParallelGrainElements / std::max<int64_t>(n, 1));
  parallel_for(0, m, grain, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      float* row = c + i * ldc;
      const float row_scale = row_scales[size_t(i)];
      if (bias.empty()) {
        for (int64_t j = 0; j < n; ++j) row[j] *= row_scale * column_scales[size_t(j)];
      } else {
        for (int64_t j = 0; j < n; ++j)
          row[j] = row[j] * (row_scale * column_scales[size_t(j)]) + bias[size_t(j)];
      }
      if (apply_scale_result) {
        for (int64_t j = 0; j < n; ++j) row[j] *= result_scale;
      }
    }
  });
}

}  // namespace

void scaled_gemm(const TensorView& out, const TensorView& a, const TensorView& b,
                 const ProductScales& scales) {
  check(out, a, b, scales);
  const int64_t m = out.sizes[0];
  const int64_t n = out.sizes[1];
  if (m == 0 || n == 0) return;
  const OneOpenMPThread one_openmp_thread;
  // An fp32 out with unit column stride is the accumulator itself; otherwise scratch.
  const bool direct = out.dtype == DType::Float32 && (n == 1 || out.strides[1] == 1) &&
                      (m == 1 || out.strides[0] >= n);
  float* c = direct ? static_cast<float*>(out.data)
                    : static_cast<float*>(dnnl_thread_buffer(DnnlBuffer::kScaledAccumulator,
                                                             size_t(m * n) * sizeof(float)));
  const int64_t ldc = direct ? (m == 1 ? n : out.strides[0]) : n;
  accumulate(c, ldc, a, b);
  const bool apply_scale_result = is_float8(out.dtype) && scales.scale_result != nullptr;
  scale_in_place(c, ldc, m, n, scales, apply_scale_result);
  if (!direct) {
    copy(out, dense_view_like(c, DType::Float32, out));
  }
}

void scaled_grouped_gemm(const TensorView& out, const TensorView& a, const TensorView& b,
                         const TensorView& scale_a, const TensorView& scale_b,
                         const TensorView* offsets) {
  const Scalar zero = Scalar::from_int(0);
  const auto product = [](const TensorView& out_g, const TensorView& a_g, const TensorView& b_g,
                          const TensorView& scale_a_g, const TensorView& scale_b_g) {
    scaled_gemm(out_g, a_g, b_g, ProductScales{scale_a_g, scale_b_g});
  };
  if (a.ndim == 3 && b.ndim == 3) {
    for (int64_t g = 0; g < out.sizes[0]; ++g) {
      product(select_first(out, g), select_first(a, g), select_first(b, g),
              select_first(scale_a, g), select_first(scale_b, g));
    }
    return;
  }
  if (offsets == nullptr || offsets->dtype != DType::Int32 || offsets->ndim != 1) {
    fail("grouped products need int32 offsets");
  }
  // Group g covers [begin, end) of the grouped dimension; ends are clamped as grouped_gemm's.
  const auto for_each_group = [&](int64_t extent, const auto& run) {
    int64_t begin = 0;
    for (int64_t g = 0; g < offsets->sizes[0]; ++g) {
      const int64_t end = std::clamp<int64_t>(group_end(*offsets, g), begin, extent);
      run(g, begin, end);
      begin = end;
    }
    return begin;
  };
  if (a.ndim == 2 && b.ndim == 3) {
    const int64_t rows = a.sizes[0];
    const int64_t done = for_each_group(rows, [&](int64_t g, int64_t begin, int64_t end) {
      if (end == begin) return;
      product(slice_view(out, 0, begin, end), slice_view(a, 0, begin, end), select_first(b, g),
              slice_view(scale_a, 0, begin, end), select_first(scale_b, g));
    });
    if (done < rows) fill(slice_view(out, 0, done, rows), zero);
  } else if (a.ndim == 3 && b.ndim == 2) {
    const int64_t cols = b.sizes[1];
    const int64_t done = for_each_group(cols, [&](int64_t g, int64_t begin, int64_t end) {
      if (end == begin) return;
      product(slice_view(out, 1, begin, end), select_first(a, g), slice_view(b, 1, begin, end),
              select_first(scale_a, g), slice_view(scale_b, 0, begin, end));
    });
    if (done < cols) fill(slice_view(out, 1, done, cols), zero);
  } else if (a.ndim == 2 && b.ndim == 2) {
    const int64_t m = a.sizes[0];
    const int64_t n = b.sizes[1];
    for_each_group(a.sizes[1], [&](int64_t g, int64_t begin, int64_t end) {
      const TensorView out_g = select_first(out, g);
      if (end == begin) {
        fill(out_g, zero);
        return;
      }
      product(out_g, slice_view(a, 1, begin, end), slice_view(b, 0, begin, end),
              slice_view(scale_a, 0, g * m, g * m + m), slice_view(scale_b, 0, g * n, g * n + n));
    });
  } else {
    fail("grouped operands must be 2-D or 3-D");
  }
}

}  // namespace openneuron::kernels
