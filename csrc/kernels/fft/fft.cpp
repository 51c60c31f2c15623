// Discrete Fourier transforms: each line along `dim` is gathered into a double buffer,
// transformed, and scattered to the output.
#include "kernels/fft/fft.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <stdexcept>
#include <string>
#include <vector>

namespace openneuron::kernels {

namespace {

using Complex = std::complex<double>;
constexpr double kPi = 3.14159265358979323846;

bool is_power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// Iterative radix-2 transforms of one power-of-two length. The roots of unity are computed once,
// each from cos/sin of its own index (not by repeated multiplication), so long transforms keep
// double's precision.
class PowerOfTwoTransform {
 public:
  explicit PowerOfTwoTransform(size_t n) : n_(n), roots_(n / 2) {
    for (size_t k = 0; k < roots_.size(); ++k) {
      const double angle = -2 * kPi * static_cast<double>(k) / static_cast<double>(n);
      roots_[k] = Complex(std::cos(angle), std::sin(angle));
    }
  }

  size_t size() const { return n_; }

  // Transforms `a` (length n) in place: sign -1 forward, +1 inverse (unscaled).
  void apply(std::vector<Complex>& a, int sign) const {
    for (size_t i = 1, j = 0; i < n_; ++i) {
      size_t bit = n_ >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) std::swap(a[i], a[j]);
    }
    for (size_t len = 2; len <= n_; len <<= 1) {
      const size_t half = len / 2, step = n_ / len;
      for (size_t start = 0; start < n_; start += len) {
        for (size_t k = 0; k < half; ++k) {
          const Complex root = sign < 0 ? roots_[k * step] : std::conj(roots_[k * step]);
          const Complex u = a[start + k];
          const Complex v = a[start + k + half] * root;
          a[start + k] = u + v;
          a[start + k + half] = u - v;
        }
      }
    }
  }

 private:
  size_t n_;
  std::vector<Complex> roots_;  // exp(-2 pi i k / n), k < n / 2
};

// Bluestein's length: the smallest power of two holding the chirp convolution (2n - 1 points).
size_t convolution_length(int64_t n) {
  size_t m = 1;
  while (m < static_cast<size_t>(2 * n - 1)) m <<= 1;
  return m;
}

// A transform of one length and direction, planned once per call and applied to every line.
class LineTransform {
 public:
  LineTransform(int64_t n, int sign)
      : n_(n),
        sign_(sign),
        power_of_two_(n <= 1 || is_power_of_two(n) ? static_cast<size_t>(std::max<int64_t>(n, 1))
                                                   : convolution_length(n)) {
    if (n_ <= 1 || is_power_of_two(n_)) return;
    // Bluestein: with c_m = exp(sign i pi m^2 / n), X_k = c_k sum_j (x_j c_j) conj(c_(k-j)),
    // a convolution done by power-of-two transforms of length >= 2n - 1.
    const size_t m = power_of_two_.size();
    chirp_.resize(n_);
    for (int64_t j = 0; j < n_; ++j) {
      // j^2 mod 2n keeps the angle small for long transforms.
      const int64_t square = (j * j) % (2 * n_);
      const double angle = sign_ * kPi * static_cast<double>(square) / static_cast<double>(n_);
      chirp_[j] = Complex(std::cos(angle), std::sin(angle));
    }
    kernel_.assign(m, Complex(0, 0));
    kernel_[0] = std::conj(chirp_[0]);
    for (int64_t j = 1; j < n_; ++j) {
      kernel_[j] = kernel_[m - j] = std::conj(chirp_[j]);
    }
    power_of_two_.apply(kernel_, -1);
    work_.resize(m);
  }

  // Transforms `line` (length n) in place.
  void apply(std::vector<Complex>& line) {
    if (n_ <= 1) return;
    if (chirp_.empty()) {
      power_of_two_.apply(line, sign_);
      return;
    }
    const size_t m = work_.size();
    for (size_t j = 0; j < m; ++j) {
      work_[j] = j < static_cast<size_t>(n_) ? line[j] * chirp_[j] : Complex(0, 0);
    }
    power_of_two_.apply(work_, -1);
    for (size_t j = 0; j < m; ++j) work_[j] *= kernel_[j];
    power_of_two_.apply(work_, 1);
    const double inverse_m = 1.0 / static_cast<double>(m);
    for (int64_t k = 0; k < n_; ++k) line[k] = work_[k] * chirp_[k] * inverse_m;
  }

 private:
  int64_t n_;
  int sign_;
  PowerOfTwoTransform power_of_two_;  // of length n, or Bluestein's convolution length
  std::vector<Complex> chirp_, kernel_, work_;
};

// Calls fn(in_offset, out_offset) for every line along `dim`: offsets (in elements of the
// views) of the line's first element. `line_dims` counts the dims that index lines (the views'
// ndim less the pair dim of a complex view); lines are counted over out's sizes.
template <typename Fn>
void for_each_line(const TensorView& in, int line_dims, const TensorView& out, int dim, Fn fn) {
  int64_t lines = 1;
  for (int d = 0; d < line_dims; ++d) {
    if (d != dim) lines *= out.sizes[d];
  }
  for (int64_t line = 0; line < lines; ++line) {
    int64_t rest = line, in_offset = 0, out_offset = 0;
    for (int d = line_dims - 1; d >= 0; --d) {
      if (d == dim) continue;
      const int64_t index = rest % out.sizes[d];
      rest /= out.sizes[d];
      in_offset += index * in.strides[d];
      out_offset += index * out.strides[d];
    }
    fn(in_offset, out_offset);
  }
}

// Writes the first `count` coefficients of `line`, scaled, as float pairs from `dst` on.
void write_complex_line(float* dst, int64_t stride, const std::vector<Complex>& line, int64_t count,
                        double scale) {
  for (int64_t k = 0; k < count; ++k) {
    float* p = dst + k * stride;
    p[0] = static_cast<float>(line[k].real() * scale);
    p[1] = static_cast<float>(line[k].imag() * scale);
  }
}

void check_complex(const TensorView& view, const char* what) {
  if (view.dtype != DType::Float32 || view.ndim < 1 || view.sizes[view.ndim - 1] != 2 ||
      view.strides[view.ndim - 1] != 1) {
    throw std::invalid_argument(std::string("openneuron kernels: fft ") + what +
                                " must be complex64 viewed as float32 pairs");
  }
}

void check_real(const TensorView& view, const char* what) {
  if (view.dtype != DType::Float32) {
    throw std::invalid_argument(std::string("openneuron kernels: fft real ") + what +
                                " must be float32");
  }
}

void check_dim(int line_dims, int dim) {
  if (dim < 0 || dim >= line_dims) {
    throw std::invalid_argument("openneuron kernels: fft dim out of range");
  }
}

}  // namespace

void fft_complex(const TensorView& in, const TensorView& out, int dim, bool forward, double scale) {
  check_complex(in, "input");
  check_complex(out, "output");
  const int line_dims = in.ndim - 1;
  check_dim(line_dims, dim);
  const int64_t n = in.sizes[dim];
  if (out.numel() == 0) return;
  LineTransform transform(n, forward ? -1 : 1);
  std::vector<Complex> line(n);
  const float* src = static_cast<const float*>(in.data);
  float* dst = static_cast<float*>(out.data);
  for_each_line(in, line_dims, out, dim, [&](int64_t in_offset, int64_t out_offset) {
    for (int64_t j = 0; j < n; ++j) {
      const float* p = src + in_offset + j * in.strides[dim];
      line[j] = Complex(p[0], p[1]);
    }
    transform.apply(line);
    write_complex_line(dst + out_offset, out.strides[dim], line, n, scale);
  });
}

void fft_real_to_complex(const TensorView& in, const TensorView& out, int dim, double scale) {
  check_real(in, "input");
  check_complex(out, "output");
  const int line_dims = in.ndim;
  check_dim(line_dims, dim);
  const int64_t n = in.sizes[dim];
  if (out.numel() == 0) return;
  LineTransform transform(n, -1);
  std::vector<Complex> line(n);
  const float* src = static_cast<const float*>(in.data);
  float* dst = static_cast<float*>(out.data);
  for_each_line(in, line_dims, out, dim, [&](int64_t in_offset, int64_t out_offset) {
    for (int64_t j = 0; j < n; ++j) line[j] = Complex(src[in_offset + j * in.strides[dim]], 0);
    transform.apply(line);
    write_complex_line(dst + out_offset, out.strides[dim], line, out.sizes[dim], scale);
  });
}

void fft_complex_to_real(const TensorView& in, const TensorView& out, int dim, double scale) {
  check_complex(in, "input");
  check_real(out, "output");
  const int line_dims = out.ndim;
  check_dim(line_dims, dim);
  const int64_t n = out.sizes[dim];
  const int64_t given = in.sizes[dim];
  if (out.numel() == 0) return;
  LineTransform transform(n, 1);
  std::vector<Complex> line(n);
  const float* src = static_cast<const float*>(in.data);
  float* dst = static_cast<float*>(out.data);
  // Lines are indexed by out's sizes; in has the same sizes off `dim`.
  for_each_line(in, line_dims, out, dim, [&](int64_t in_offset, int64_t out_offset) {
    const int64_t half = n / 2;
    for (int64_t k = 0; k <= half; ++k) {
      if (k < given) {
        const float* p = src + in_offset + k * in.strides[dim];
        line[k] = Complex(p[0], p[1]);
      } else {
        line[k] = Complex(0, 0);
      }
    }
    for (int64_t k = half + 1; k < n; ++k) line[k] = std::conj(line[n - k]);
    transform.apply(line);
    for (int64_t j = 0; j < n; ++j) {
      dst[out_offset + j * out.strides[dim]] = static_cast<float>(line[j].real() * scale);
    }
  });
}

}  // namespace openneuron::kernels
