// The public entry points of the per-ISA kernel sources (isa_variant.h): each forwards to
// the copy built for cpu_isa(), the CPU's best level under OPENNEURON_MAX_CPU_ISA.
#include "kernels/attention/attention.h"
#include "kernels/attention/attention_block_ops.h"
#include "kernels/nn/normalization_rows.h"
#include "kernels/runtime/cpu_isa.h"

#define OPENNEURON_ISA_NAMESPACE isa_avx2
#include "kernels/runtime/isa_kernels.h"
#undef OPENNEURON_ISA_NAMESPACE
#define OPENNEURON_ISA_NAMESPACE isa_avx512
#include "kernels/runtime/isa_kernels.h"
#undef OPENNEURON_ISA_NAMESPACE

// Calls `function` (a name inside the ISA namespaces) from the copy for the current ISA.
#define OPENNEURON_ISA_CALL(function, ...)                                         \
  (use_avx512_kernels() ? ::openneuron::kernels::isa_avx512::function(__VA_ARGS__) \
                        : ::openneuron::kernels::isa_avx2::function(__VA_ARGS__))

namespace openneuron::kernels {

uint64_t attention_dropout_offset_increment(int64_t batch, int64_t heads, int64_t q_len,
                                            int64_t kv_len) {
  return OPENNEURON_ISA_CALL(attention_dropout_offset_increment, batch, heads, q_len, kv_len);
}

void attention_forward(const TensorView& out, const TensorView& lse, const TensorView& q,
                       const TensorView& k, const TensorView& v, const TensorView* mask,
                       const AttentionParams& params) {
  OPENNEURON_ISA_CALL(attention_forward, out, lse, q, k, v, mask, params);
}

void attention_backward(const TensorView* grad_q, const TensorView* grad_k,
                        const TensorView* grad_v, const TensorView* grad_mask,
                        const TensorView& grad_out, const TensorView& q, const TensorView& k,
                        const TensorView& v, const TensorView& out, const TensorView& lse,
                        const TensorView* mask, const AttentionParams& params) {
  OPENNEURON_ISA_CALL(attention_backward, grad_q, grad_k, grad_v, grad_mask, grad_out, q, k, v, out,
                      lse, mask, params);
}

namespace attention_blocks {

void block_gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row_stride,
                int64_t a_col_stride, const float* b, int64_t ldb, float* c, int64_t ldc,
                bool accumulate) {
  OPENNEURON_ISA_CALL(attention_blocks::block_gemm, m, n, k, a, a_row_stride, a_col_stride, b, ldb,
                      c, ldc, accumulate);
}

void transpose_16x16(const float* src, int64_t src_ld, float* dst, int64_t dst_ld) {
  OPENNEURON_ISA_CALL(attention_blocks::transpose_16x16, src, src_ld, dst, dst_ld);
}

float row_max(const float* x, int64_t n) {
  return OPENNEURON_ISA_CALL(attention_blocks::row_max, x, n);
}

float exp_shifted_sum(float* x, int64_t n, float shift) {
  return OPENNEURON_ISA_CALL(attention_blocks::exp_shifted_sum, x, n, shift);
}

void exp_shifted(float* x, int64_t n, float shift) {
  OPENNEURON_ISA_CALL(attention_blocks::exp_shifted, x, n, shift);
}

void scale_row(float* x, int64_t n, float factor) {
  OPENNEURON_ISA_CALL(attention_blocks::scale_row, x, n, factor);
}

float dot(const float* x, const float* y, int64_t n) {
  return OPENNEURON_ISA_CALL(attention_blocks::dot, x, y, n);
}

void widen_half(const uint16_t* src, float* dst, int64_t n) {
  OPENNEURON_ISA_CALL(attention_blocks::widen_half, src, dst, n);
}

void narrow_half(const float* src, uint16_t* dst, int64_t n) {
  OPENNEURON_ISA_CALL(attention_blocks::narrow_half, src, dst, n);
}

void widen_bfloat16(const uint16_t* src, float* dst, int64_t n) {
  OPENNEURON_ISA_CALL(attention_blocks::widen_bfloat16, src, dst, n);
}

void narrow_bfloat16(const float* src, uint16_t* dst, int64_t n) {
  OPENNEURON_ISA_CALL(attention_blocks::narrow_bfloat16, src, dst, n);
}

}  // namespace attention_blocks

namespace normalization_rows {

bool supports(std::initializer_list<const TensorView*> row_views) {
  return OPENNEURON_ISA_CALL(normalization_rows::supports, row_views);
}

void forward(const TensorView& out, const TensorView& input, const std::vector<float>& w,
             const std::vector<float>& b, double eps, bool rms, std::vector<double>& mean,
             std::vector<double>& rstd) {
  OPENNEURON_ISA_CALL(normalization_rows::forward, out, input, w, b, eps, rms, mean, rstd);
}

void backward(const TensorView* grad_input, const TensorView& grad_out, const TensorView& input,
              const std::vector<float>& w, const std::vector<float>& mean,
              const std::vector<float>& rstd, bool rms, bool want_columns, std::vector<double>& gw,
              std::vector<double>& gb) {
  OPENNEURON_ISA_CALL(normalization_rows::backward, grad_input, grad_out, input, w, mean, rstd, rms,
                      want_columns, gw, gb);
}

}  // namespace normalization_rows

}  // namespace openneuron::kernels
