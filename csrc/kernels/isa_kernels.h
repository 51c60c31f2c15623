// The entry points of the per-ISA kernel sources (see isa_variant.h), declared in namespace
// OPENNEURON_ISA_NAMESPACE: once per ISA by isa_dispatch.cpp, and by each variant source for
// its own ISA (so definitions and declarations are checked against each other). No include
// guard: every inclusion declares the namespace OPENNEURON_ISA_NAMESPACE names at that point.
// The contracts are those of the public headers named below.

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "kernels/attention.h"
#include "kernels/tensor_view.h"
#if !defined(OPENNEURON_ISA_NAMESPACE)
#include "kernels/isa_variant.h"  // a variant source: its own ISA's namespace
#endif

namespace openneuron::kernels::OPENNEURON_ISA_NAMESPACE {

// attention.h
uint64_t attention_dropout_offset_increment(int64_t batch, int64_t heads, int64_t q_len,
                                            int64_t kv_len);
void attention_forward(const TensorView& out, const TensorView& lse, const TensorView& q,
                       const TensorView& k, const TensorView& v, const TensorView* mask,
                       const AttentionParams& params);
void attention_backward(const TensorView* grad_q, const TensorView* grad_k,
                        const TensorView* grad_v, const TensorView* grad_mask,
                        const TensorView& grad_out, const TensorView& q, const TensorView& k,
                        const TensorView& v, const TensorView& out, const TensorView& lse,
                        const TensorView* mask, const AttentionParams& params);

// attention_block_ops.h
namespace attention_blocks {
void block_gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row_stride,
                int64_t a_col_stride, const float* b, int64_t ldb, float* c, int64_t ldc,
                bool accumulate);
void transpose_16x16(const float* src, int64_t src_ld, float* dst, int64_t dst_ld);
float row_max(const float* x, int64_t n);
float exp_shifted_sum(float* x, int64_t n, float shift);
void exp_shifted(float* x, int64_t n, float shift);
void scale_row(float* x, int64_t n, float factor);
float dot(const float* x, const float* y, int64_t n);
void widen_half(const uint16_t* src, float* dst, int64_t n);
void narrow_half(const float* src, uint16_t* dst, int64_t n);
void widen_bfloat16(const uint16_t* src, float* dst, int64_t n);
void narrow_bfloat16(const float* src, uint16_t* dst, int64_t n);
}  // namespace attention_blocks

// normalization_rows.h
namespace normalization_rows {
bool supports(std::initializer_list<const TensorView*> row_views);
void forward(const TensorView& out, const TensorView& input, const std::vector<float>& w,
             const std::vector<float>& b, double eps, bool rms, std::vector<double>& mean,
             std::vector<double>& rstd);
void backward(const TensorView* grad_input, const TensorView& grad_out, const TensorView& input,
              const std::vector<float>& w, const std::vector<float>& mean,
              const std::vector<float>& rstd, bool rms, bool want_columns, std::vector<double>& gw,
              std::vector<double>& gb);
}  // namespace normalization_rows

}  // namespace openneuron::kernels::OPENNEURON_ISA_NAMESPACE
