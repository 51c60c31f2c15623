// Hand-vectorised fp32 loops of the fast executor (AVX-512 when use_avx512(), else AVX2), each
// giving exactly the bytes of the scalar definition in alu.h: one IEEE operation per element
// (add, subtract, multiply, divide) or a compare-and-select with alu.h's NaN rule (max, min).
#pragma once

#include <cstdint>

#include "sim/isa.h"

namespace openneuron::sim {

// Whether elementwise_vector and reduce_rows_vector handle `op`.
bool has_vector_alu(AluOp op);

// out[i] = apply_alu(op, x[i], y[i]) for i < n. `out` may be `x` or `y` itself (each vector is
// loaded before it is stored), but must not overlap them any other way. Requires has_vector_alu.
void elementwise_vector(AluOp op, float* out, const float* x, const float* y, int64_t n);

// out[r] = reduce_row(op, row r) (alu.h: eight lanes, element j into lane j mod 8, the lanes
// combined pairwise) for `rows` rows of `length` floats, row r at first + r · row_floats, op
// add, multiply, max or min. Four rows at a time, so four independent accumulator chains are
// in flight instead of one: the result of each row is unchanged.
bool reduce_rows_vector(AluOp op, const float* first, int64_t row_floats, int64_t rows,
                        int64_t length, float* out);

}  // namespace openneuron::sim
