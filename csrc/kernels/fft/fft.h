// Discrete Fourier transforms along one dim of strided data, the building block of
// torch.fft on the device. Complex tensors are float32 views whose last dim holds (real, imag)
// (torch.view_as_real); `dim` indexes the complex dims, never that last one. Sums are formed in
// double (any length: radix-2 for powers of two, Bluestein's chirp-z otherwise) and rounded once.
#pragma once

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// out[k] = scale * sum_j in[j] exp(-+2 pi i j k / n) along `dim` (minus sign when `forward`),
// n = in.sizes[dim] = out.sizes[dim]; in and out are complex (float32, last dim 2) of one shape
// and may be the same memory.
void fft_complex(const TensorView& in, const TensorView& out, int dim, bool forward, double scale);

// Forward transform of real float32 `in` (n = in.sizes[dim]) into complex `out`, which keeps the
// first out.sizes[dim] coefficients (n / 2 + 1 for the one-sided form, or n).
void fft_real_to_complex(const TensorView& in, const TensorView& out, int dim, double scale);

// Inverse transform of a one-sided Hermitian spectrum `in` (complex) into real float32 `out`
// of length n = out.sizes[dim]: coefficients k > n / 2 are the conjugates of n - k, and
// in.sizes[dim] may hold fewer (missing ones are zero) or more (ignored) than n / 2 + 1.
void fft_complex_to_real(const TensorView& in, const TensorView& out, int dim, double scale);

}  // namespace openneuron::kernels
