// The Tensor engine's fp32 product as a register-blocked CPU kernel: every output element is
// the fused multiply-add chain of isa.h (k = 0..K-1 from 0), so results equal the reference
// interpreter's loop bit for bit, on the ISA vector_isa.h chooses.
#pragma once

#include <cstdint>

namespace openneuron::sim {

// out(m, n) = (accumulate ? out(m, n) : 0) + Σ_k a(k, m) · b(k, n), where a(k, m) is
// a[k·lda + m], b(k, n) is b[k·ldb + n] and out(m, n) is out[m·ldc + n]. With accumulate the
// previous value is added to the finished sum (one rounding), as the reference does. out
// must not overlap a or b.
void matmul_fp32(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t k, int64_t m,
                 int64_t n, float* out, int64_t ldc, bool accumulate);

}  // namespace openneuron::sim
