// MX products: every block-scaled element is widened to fp32 (an fp8 or fp4 value times a power
// of two is exact there), the product runs as one fp32 GEMM, and the bias and the rounding to the
// output dtype happen once per element afterwards, as the Tensor engine applies them when it
// evacuates its fp32 PSUM accumulator.
#include "kernels/matmul/mx_scaled_gemm.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/core/dense_float.h"
#include "kernels/matmul/float8_byte_values.h"
#include "kernels/matmul/nn_blas.h"
#include "kernels/pointwise/cast.h"
#include "kernels/runtime/dnnl_runtime.h"
#include "kernels/runtime/parallel_views.h"

namespace openneuron::kernels {

namespace {

[[noreturn]] void fail(const std::string& message) {
  throw std::invalid_argument("openneuron kernels: mx_scaled_gemm: " + message);
}

// Every byte's value in one element format (fp4: the low nibble's value).
const ByteValueTable& element_values(MxElement element) {
  static const ByteValueTable e2m1 = [] {
    // E2M1: sign, two exponent bits (bias 1), one mantissa bit; no inf or NaN.
    constexpr std::array<float, 8> magnitudes = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    ByteValueTable table;
    for (int bits = 0; bits < 256; ++bits) {
      const float magnitude = magnitudes[size_t(bits & 7)];
      table[bits] = (bits & 8) != 0 ? -magnitude : magnitude;
    }
    return table;
  }();
  switch (element) {
    case MxElement::kFloat8E4M3:
      return float8_byte_values(false);
    case MxElement::kFloat8E5M2:
      return float8_byte_values(true);
    case MxElement::kFloat4E2M1:
      return e2m1;
  }
  fail("unknown element format");
}

float e8m0_value(uint8_t bits) {
  if (bits == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, int(bits) - 127);
}

int64_t round_up(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// dst [rows, k] (dense fp32) = the operand's elements times their block scales.
void widen(const MxOperand& operand, float* dst) {
  const ByteValueTable& values = element_values(operand.element);
  const bool fp4 = operand.element == MxElement::kFloat4E2M1;
  const int64_t k = operand.k;
  const int64_t k_blocks = (k + kMxBlock - 1) / kMxBlock;
  const auto* bytes = static_cast<const uint8_t*>(operand.data);
  const int64_t grain = std::max<int64_t>(1, kParallelGrainElements / std::max<int64_t>(k, 1));
  parallel_for(0, operand.rows, grain, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const uint8_t* row = bytes + r * operand.row_stride_bytes;
      float* out_row = dst + r * k;
      for (int64_t block = 0; block < k_blocks; ++block) {
        const float scale = e8m0_value(operand.scales[mx_scale_offset(
            operand.scale_layout, operand.rows, k_blocks, r, block)]);
        const int64_t end = std::min(k, (block + 1) * kMxBlock);
        for (int64_t c = block * kMxBlock; c < end; ++c) {
          const uint8_t byte = fp4 ? uint8_t(row[c / 2] >> (4 * (c % 2))) : row[c];
          out_row[c] = values[byte] * scale;
        }
      }
    }
  });
}

void check(const TensorView& out, const MxOperand& a, const MxOperand& b, const TensorView* bias) {
  if (out.ndim != 2) fail("out must be 2-D");
  if (out.sizes[0] != a.rows || out.sizes[1] != b.rows) fail("out must be [a rows, b rows]");
  if (a.k != b.k) fail("a and b must have the same K");
  if ((a.element == MxElement::kFloat4E2M1) != (b.element == MxElement::kFloat4E2M1)) {
    fail("a and b must be both fp4 or both fp8");
  }
  if (a.element == MxElement::kFloat4E2M1 && a.k % 2 != 0) fail("fp4 operands need an even K");
  if (out.dtype != DType::Float32 && out.dtype != DType::BFloat16 && out.dtype != DType::Float16) {
    fail("out must be fp32, bf16 or fp16");
  }
  if (a.rows > 0 && a.k > 0 && (a.data == nullptr || a.scales == nullptr)) fail("a has no data");
  if (b.rows > 0 && b.k > 0 && (b.data == nullptr || b.scales == nullptr)) fail("b has no data");
  if (bias != nullptr &&
      (bias->ndim != 1 || bias->sizes[0] != b.rows || !is_floating(bias->dtype))) {
    fail("bias must be 1-D floating with N elements");
  }
}

}  // namespace

int64_t mx_scale_offset(MxScaleLayout layout, int64_t rows, int64_t k_blocks, int64_t row,
                        int64_t block) {
  if (layout == MxScaleLayout::kRowMajor) return row * k_blocks + block;
  (void)rows;
  const int64_t tiles_per_row = round_up(k_blocks, 4) / 4;
  const int64_t tile = (row / 128) * tiles_per_row + block / 4;
  const int64_t r = row % 128;
  return tile * 512 + (r % 32) * 16 + (r / 32) * 4 + block % 4;
}

void mx_scaled_gemm(const TensorView& out, const MxOperand& a, const MxOperand& b,
                    const TensorView* bias) {
  check(out, a, b, bias);
  const int64_t m = a.rows;
  const int64_t n = b.rows;
  const int64_t k = a.k;
  if (m == 0 || n == 0) return;
  const OneOpenMPThread one_openmp_thread;
  auto* c = static_cast<float*>(
      dnnl_thread_buffer(DnnlBuffer::kScaledAccumulator, size_t(m * n) * sizeof(float)));
  if (k == 0) {
    std::fill(c, c + m * n, 0.0f);
  } else {
    auto* a32 = static_cast<float*>(
        dnnl_thread_buffer(DnnlBuffer::kScaledLeftOperand, size_t(m * k) * sizeof(float)));
    auto* b32 = static_cast<float*>(
        dnnl_thread_buffer(DnnlBuffer::kScaledRightOperand, size_t(n * k) * sizeof(float)));
    widen(a, a32);
    widen(b, b32);
    nn_sgemm(false, true, m, n, k, 1.0f, a32, k, b32, k, 0.0f, c, n);
    if (bias != nullptr) {
      std::vector<float> bias_values(static_cast<size_t>(n));
      copy(dense_view_like(bias_values.data(), DType::Float32, *bias), *bias);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) c[i * n + j] += bias_values[size_t(j)];
      }
    }
  }
  copy(out, dense_view_like(c, DType::Float32, out));
}

}  // namespace openneuron::kernels
