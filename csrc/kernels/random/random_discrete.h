// Random draws beyond uniform/normal fills: Bernoulli, dropout, integers, permutations,
// exponential, normal with per-element moments, multinomial. All read the same Philox
// stream as random.h, so a (seed, offset) pair fully determines the result.
//
// Counter layouts (the caller advances its generator by the matching increment):
//  - 32-bit draws: element i (row-major over the output shape) reads lane i % 4 of the block
//    at offset + i / 4; increment random_offset_increment(numel) from random.h.
//  - 64-bit draws: draw i reads lanes 2(i % 2), 2(i % 2) + 1 of the block at offset + i / 2;
//    increment random_offset_increment_64(draws).
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// Counter positions consumed by `draws` 64-bit draws.
uint64_t random_offset_increment_64(int64_t draws);

// dst[i] = (u_i < p) for a 32-bit uniform u_i in [0, 1); any dtype (stored as 0 / 1).
void bernoulli_scalar(const TensorView& dst, uint64_t seed, uint64_t offset, double p);

// dst[i] = (u_i < probs[i]); probs is a floating view with dst's shape (strides may be 0).
void bernoulli_tensor(const TensorView& dst, const TensorView& probs, uint64_t seed,
                      uint64_t offset);

// Dropout in training: mask[i] = (u_i >= p) (kept with probability 1 - p), output[i] =
// input[i] * (mask[i] ? scale : 0) computed in fp32 (NaN inputs stay NaN, like x * 0).
// input/output floating with one shape; mask bool of that shape. 32-bit draws.
void dropout_forward(const TensorView& input, const TensorView& output, const TensorView& mask,
                     uint64_t seed, uint64_t offset, double p, double scale);

// grad_input[i] = grad_output[i] * (mask[i] ? scale : 0), in fp32; views share one shape.
void dropout_backward(const TensorView& grad_output, const TensorView& mask,
                      const TensorView& grad_input, double scale);

// dst[i] = low + (b_i mod range) for 64-bit draws b_i, with range == 0 meaning the full
// 2^64 range (the sum wraps as int64). Any dtype; values are stored by value conversion.
void random_integers(const TensorView& dst, uint64_t seed, uint64_t offset, int64_t low,
                     uint64_t range);

// dst (1-D, n elements, any non-bool dtype) = a uniform random permutation of 0..n-1
// (Fisher-Yates: swap position k with a position below k+1 chosen by 64-bit draw n-1-k).
void random_permutation(const TensorView& dst, uint64_t seed, uint64_t offset);

// dst[i] = -log(1 - u_i) / lambda (u_i 32-bit uniform in [0, 1)); floating dst.
void exponential(const TensorView& dst, uint64_t seed, uint64_t offset, double lambda);

// dst[i] = median + sigma * tan(pi * (u_i - 1/2)) (u_i 32-bit uniform in [0, 1)), computed in
// double and rounded once; floating dst.
void cauchy(const TensorView& dst, uint64_t seed, uint64_t offset, double median, double sigma);

// dst[i] = the number of Bernoulli(p) trials up to the first success, ceil(log(1 - u_i) /
// log(1 - p)) (at least 1; u_i 32-bit uniform in [0, 1)), for 0 < p < 1; any numeric dst.
void geometric(const TensorView& dst, uint64_t seed, uint64_t offset, double p);

// dst[i] = mean[i] + std[i] * z_i, z_i standard normal by the same Box-Muller pairing as
// normal() in random.h. mean/std are floating views with dst's shape, or null to use the
// scalar instead. 32-bit draws.
void normal_with_moments(const TensorView& dst, const TensorView* mean, double mean_scalar,
                         const TensorView* std, double std_scalar, uint64_t seed, uint64_t offset);

// Draws `samples` category indices per row of probs ([rows, categories], floating,
// non-negative weights, not necessarily normalized) into dst ([rows, samples], int64).
// With replacement: inverse CDF of 64-bit draw row * draws_per_row + s. Without: the
// `samples` largest keys log(u_j) / w_j over categories j (exponential races), draws
// row * draws_per_row + j. draws_per_row = max(samples, categories).
void multinomial(const TensorView& probs, const TensorView& dst, int64_t samples, bool replacement,
                 uint64_t seed, uint64_t offset);

}  // namespace openneuron::kernels
