// The few-row product reads each weight element once, in place, on every kernel thread's share
// of the columns. A transposed weight (columns contiguous along k) is widened a column at a
// time and dotted with every row of a in 16 fp32 lanes; a row-major b is widened in tiles of
// 256 k by 64 columns that update fp32 accumulators row by row of a, k ascending.
#include "kernels/matmul/few_row_gemm.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/core/dense_float.h"
#include "kernels/core/float_conversions.h"
#include "kernels/matmul/matrix_view.h"
#include "kernels/pointwise/cast.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {

namespace {

constexpr int64_t kColumnBlock = 64;
constexpr int64_t kDepthBlock = 256;

float widen_bfloat16(uint16_t bits) { return bits_to_float(static_cast<uint32_t>(bits) << 16); }
float widen_half(uint16_t bits) { return half_bits_to_float(bits); }

// tile[k - k0][j] = b[k][n0 + j] (b row-major, row stride stride_k) for k in [k0, k1),
// j < width; columns past width are zero.
template <float (*Widen)(uint16_t)>
void widen_tile(float* tile, const uint16_t* b, int64_t stride_k, int64_t k0, int64_t k1,
                int64_t n0, int64_t width) {
  if (width < kColumnBlock) std::fill(tile, tile + (k1 - k0) * kColumnBlock, 0.0f);
  for (int64_t k = k0; k < k1; ++k) {
    const uint16_t* row = b + k * stride_k + n0;
    float* dst = tile + (k - k0) * kColumnBlock;
    for (int64_t j = 0; j < width; ++j) dst[j] = Widen(row[j]);
  }
}

// result[:, n0:n0 + width] = a32 @ b[:, n0:n0 + width] for a row-major b, in fp32, k ascending.
template <float (*Widen)(uint16_t)>
void row_major_block(float* result, const float* a32, int64_t a_stride, const TensorView& b,
                     int64_t rows, int64_t depth, int64_t cols, int64_t n0) {
  const int64_t width = std::min(kColumnBlock, cols - n0);
  thread_local std::vector<float> tile, acc;
  tile.resize(static_cast<size_t>(kDepthBlock * kColumnBlock));
  acc.assign(static_cast<size_t>(rows * kColumnBlock), 0.0f);
  const auto* b_bits = static_cast<const uint16_t*>(b.data);
  for (int64_t k0 = 0; k0 < depth; k0 += kDepthBlock) {
    const int64_t k1 = std::min(depth, k0 + kDepthBlock);
    widen_tile<Widen>(tile.data(), b_bits, b.strides[0], k0, k1, n0, width);
    for (int64_t m = 0; m < rows; ++m) {
      float* acc_row = acc.data() + m * kColumnBlock;
      const float* a_row = a32 + m * a_stride;
      for (int64_t k = k0; k < k1; ++k) {
        const float a_mk = a_row[k];
        const float* tile_row = tile.data() + (k - k0) * kColumnBlock;
        for (int64_t j = 0; j < kColumnBlock; ++j) acc_row[j] += a_mk * tile_row[j];
      }
    }
  }
  for (int64_t m = 0; m < rows; ++m) {
    std::copy_n(acc.data() + m * kColumnBlock, width, result + m * cols + n0);
  }
}

constexpr int64_t kLanes = 16;

// result[:, n] = a32 @ b[:, n] for n in [n_begin, n_end), b a transposed weight (column n
// contiguous along k, `stride_n` apart). a32's rows are zero-padded to `padded` (a multiple of
// kLanes), so each dot product runs whole lanes; lane l sums the k = l (mod 16) terms, k
// ascending, and the lanes are summed in order.
template <float (*Widen)(uint16_t)>
void transposed_columns(float* result, const float* a32, const TensorView& b, int64_t rows,
                        int64_t depth, int64_t padded, int64_t cols, int64_t n_begin,
                        int64_t n_end) {
  thread_local std::vector<float> column;
  column.assign(static_cast<size_t>(padded), 0.0f);
  const auto* b_bits = static_cast<const uint16_t*>(b.data);
  for (int64_t n = n_begin; n < n_end; ++n) {
    const uint16_t* source = b_bits + n * b.strides[1];
    for (int64_t k = 0; k < depth; ++k) column[k] = Widen(source[k]);
    for (int64_t m = 0; m < rows; ++m) {
      const float* a_row = a32 + m * padded;
      float lanes[kLanes] = {};
      for (int64_t k = 0; k < padded; k += kLanes) {
        for (int64_t l = 0; l < kLanes; ++l) lanes[l] += a_row[k + l] * column[k + l];
      }
      float sum = 0.0f;
      for (float lane : lanes) sum += lane;
      result[m * cols + n] = sum;
    }
  }
}

}  // namespace

bool few_row_gemm(const TensorView& out, const TensorView& a, const TensorView& b,
                  const TensorView* bias, double alpha, double beta) {
  const bool sixteen_bit = a.dtype == DType::BFloat16 || a.dtype == DType::Float16;
  if (out.ndim != 2 || a.ndim != 2 || b.ndim != 2 || !sixteen_bit || b.dtype != a.dtype) {
    return false;
  }
  if (out.dtype != a.dtype && out.dtype != DType::Float32) return false;
  const bool use_bias = bias != nullptr && beta != 0.0;
  if (use_bias && bias->dtype != a.dtype && bias->dtype != out.dtype) return false;
  const int64_t rows = out.sizes[0], cols = out.sizes[1], depth = a.sizes[1];
  if (rows == 0 || rows > kFewRowsMax || cols == 0 || depth == 0) return false;
  if (b.strides[0] != 1 && b.strides[1] != 1) return false;

  // a in fp32, rows zero-padded to whole lanes.
  const int64_t padded = (depth + kLanes - 1) / kLanes * kLanes;
  std::vector<float> a32(static_cast<size_t>(rows * padded), 0.0f);
  copy(matrix_view(a32.data(), DType::Float32, rows, depth, padded), a);
  std::vector<float> result(static_cast<size_t>(rows * cols));
  const bool bf16 = a.dtype == DType::BFloat16;
  if (b.strides[0] == 1) {
    parallel_for(0, cols, kColumnBlock / 4, [&](int64_t first, int64_t last) {
      if (bf16) {
        transposed_columns<widen_bfloat16>(result.data(), a32.data(), b, rows, depth, padded, cols,
                                           first, last);
      } else {
        transposed_columns<widen_half>(result.data(), a32.data(), b, rows, depth, padded, cols,
                                       first, last);
      }
    });
  } else {
    const int64_t blocks = (cols + kColumnBlock - 1) / kColumnBlock;
    parallel_for(0, blocks, 1, [&](int64_t first, int64_t last) {
      for (int64_t block = first; block < last; ++block) {
        if (bf16) {
          row_major_block<widen_bfloat16>(result.data(), a32.data(), padded, b, rows, depth, cols,
                                          block * kColumnBlock);
        } else {
          row_major_block<widen_half>(result.data(), a32.data(), padded, b, rows, depth, cols,
                                      block * kColumnBlock);
        }
      }
    });
  }

  const TensorView result_view = dense_view_like(result.data(), DType::Float32, out);
  if (use_bias) {
    std::vector<float> bias32(result.size());
    copy(dense_view_like(bias32.data(), DType::Float32, out), *bias);
    for (size_t i = 0; i < result.size(); ++i) {
      result[i] = static_cast<float>(beta) * bias32[i] + static_cast<float>(alpha) * result[i];
    }
  } else if (alpha != 1.0) {
    for (float& value : result) value *= static_cast<float>(alpha);
  }
  copy(out, result_view);  // the one rounding to a 16-bit out
  return true;
}

}  // namespace openneuron::kernels
