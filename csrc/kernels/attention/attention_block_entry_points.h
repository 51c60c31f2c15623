// The functions attention_block_ops.h declares, without namespace or include guard: included
// inside namespace attention_blocks of openneuron::kernels and of each ISA's namespace
// (isa_kernels.h), so one list declares the public functions and every per-ISA copy.

// c[i, j] = (accumulate ? c[i, j] : 0) + sum_p a[i, p] * b[p, j] for i < m, j < n, p < k.
// a is read through strides (element (i, p) at a[i * a_row_stride + p * a_col_stride]), so a
// transposed operand costs nothing; b and c are row-major with leading dimensions ldb, ldc.
// k == 0 gives c = 0 (or leaves c unchanged when accumulating).
void block_gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row_stride,
                int64_t a_col_stride, const float* b, int64_t ldb, float* c, int64_t ldc,
                bool accumulate);

// dst[c * dst_ld + r] = src[r * src_ld + c] for r, c < 16: one 16 x 16 fp32 tile transposed.
void transpose_16x16(const float* src, int64_t src_ld, float* dst, int64_t dst_ld);

// Largest of x[0..n) (-inf for n == 0; NaNs are not propagated).
float row_max(const float* x, int64_t n);

// x[j] = exp(x[j] - shift) for j < n; returns the sum of the new values.
float exp_shifted_sum(float* x, int64_t n, float shift);

// x[j] = exp(x[j] - shift) for j < n.
void exp_shifted(float* x, int64_t n, float shift);

// x[j] *= factor for j < n.
void scale_row(float* x, int64_t n, float factor);

// sum_j x[j] * y[j] for j < n.
float dot(const float* x, const float* y, int64_t n);

// Runs of float16/bfloat16 bits widened to / rounded from fp32 (attention_convert.h's
// vectorised forms, for tests): equal to float_conversions.h's per-element results.
void widen_half(const uint16_t* src, float* dst, int64_t n);
void narrow_half(const float* src, uint16_t* dst, int64_t n);
void widen_bfloat16(const uint16_t* src, float* dst, int64_t n);
void narrow_bfloat16(const float* src, uint16_t* dst, int64_t n);
