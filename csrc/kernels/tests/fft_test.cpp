// The transforms against the defining sum in double: power-of-two and other lengths (Bluestein),
// a strided batch dim, the one-sided real forward transform and the Hermitian inverse, and the
// scale; a wrong sign or a dropped term moves a coefficient far beyond the tolerance.
#include "kernels/fft/fft.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <vector>

namespace openneuron::kernels {
namespace {

using Complex = std::complex<double>;
constexpr double kPi = 3.14159265358979323846;

TensorView float_view(std::vector<float>& data, std::vector<int64_t> sizes) {
  TensorView view;
  view.data = data.data();
  view.dtype = DType::Float32;
  view.ndim = static_cast<int>(sizes.size());
  int64_t stride = 1;
  for (int d = view.ndim - 1; d >= 0; --d) {
    view.sizes[d] = sizes[d];
    view.strides[d] = stride;
    stride *= sizes[d];
  }
  return view;
}

std::vector<float> random_values(size_t count, unsigned seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> values(count);
  for (float& v : values) v = uniform(generator);
  return values;
}

// The defining sum of one line.
std::vector<Complex> direct_transform(const std::vector<Complex>& x, int sign) {
  const size_t n = x.size();
  std::vector<Complex> result(n);
  for (size_t k = 0; k < n; ++k) {
    for (size_t j = 0; j < n; ++j) {
      const double angle = sign * 2 * kPi * static_cast<double>((j * k) % n) / n;
      result[k] += x[j] * Complex(std::cos(angle), std::sin(angle));
    }
  }
  return result;
}

class ComplexLengths : public ::testing::TestWithParam<int> {};

TEST_P(ComplexLengths, MatchesTheDefiningSumAlongEitherDim) {
  const int n = GetParam();
  const int batch = 3;
  for (int dim = 0; dim < 2; ++dim) {
    for (const bool forward : {true, false}) {
      // Shape (n, batch) for dim 0, (batch, n) for dim 1, as float pairs.
      std::vector<int64_t> sizes =
          dim == 0 ? std::vector<int64_t>{n, batch, 2} : std::vector<int64_t>{batch, n, 2};
      std::vector<float> in = random_values(static_cast<size_t>(2 * n * batch), n + dim);
      std::vector<float> out(in.size());
      const double scale = forward ? 1.0 : 1.0 / n;
      fft_complex(float_view(in, sizes), float_view(out, sizes), dim, forward, scale);
      for (int b = 0; b < batch; ++b) {
        auto at = [&](const std::vector<float>& v, int j) {
          const size_t base = dim == 0 ? static_cast<size_t>(j * batch + b) * 2
                                       : static_cast<size_t>(b * n + j) * 2;
          return Complex(v[base], v[base + 1]);
        };
        std::vector<Complex> line(n);
        for (int j = 0; j < n; ++j) line[j] = at(in, j);
        const std::vector<Complex> expected = direct_transform(line, forward ? -1 : 1);
        for (int k = 0; k < n; ++k) {
          EXPECT_NEAR(at(out, k).real(), expected[k].real() * scale, 2e-5 * std::sqrt(n))
              << "n " << n << " dim " << dim << " k " << k;
          EXPECT_NEAR(at(out, k).imag(), expected[k].imag() * scale, 2e-5 * std::sqrt(n));
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(PowersOfTwoAndOthers, ComplexLengths,
                         ::testing::Values(1, 2, 3, 5, 8, 12, 17, 64, 100));

TEST(RealTransforms, OneSidedForwardAndHermitianInverseRoundTrip) {
  for (const int n : {1, 6, 7, 16, 31}) {
    std::vector<float> signal = random_values(static_cast<size_t>(n), 40 + n);
    const int kept = n / 2 + 1;
    std::vector<float> spectrum(static_cast<size_t>(2 * kept));
    fft_real_to_complex(float_view(signal, {n}), float_view(spectrum, {kept, 2}), 0, 1.0);
    std::vector<Complex> line(signal.begin(), signal.end());
    const std::vector<Complex> expected = direct_transform(line, -1);
    for (int k = 0; k < kept; ++k) {
      EXPECT_NEAR(spectrum[2 * k], expected[k].real(), 1e-5 * n) << "n " << n;
      EXPECT_NEAR(spectrum[2 * k + 1], expected[k].imag(), 1e-5 * n) << "n " << n;
    }
    std::vector<float> back(static_cast<size_t>(n));
    fft_complex_to_real(float_view(spectrum, {kept, 2}), float_view(back, {n}), 0, 1.0 / n);
    for (int j = 0; j < n; ++j) EXPECT_NEAR(back[j], signal[j], 1e-5) << "n " << n;
  }
}

TEST(RealTransforms, RefusesViewsThatAreNotComplexPairs) {
  std::vector<float> data(8);
  EXPECT_THROW(fft_complex(float_view(data, {8}), float_view(data, {8}), 0, true, 1.0),
               std::invalid_argument);
}

}  // namespace
}  // namespace openneuron::kernels
