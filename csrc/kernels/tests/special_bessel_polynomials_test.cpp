// The double-precision special functions behind torch.special's Bessel, Airy, normal and zeta
// ops and its orthogonal polynomials, against values computed with mpmath at 50 digits, and
// PyTorch's values at the edges of each domain.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/pointwise/bessel_airy.h"
#include "kernels/pointwise/incomplete_gamma.h"
#include "kernels/pointwise/normal_distribution.h"
#include "kernels/pointwise/orthogonal_polynomials.h"
#include "kernels/pointwise/special_functions.h"

namespace openneuron::kernels::special {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

void expect_relative(double actual, double expected, double tolerance = 1e-12) {
  EXPECT_NEAR(actual, expected, tolerance * std::fabs(expected)) << "expected " << expected;
}

TEST(BesselAiry, ReferenceValues) {
  expect_relative(bessel_j0(2.5), -0.048383776468198);
  expect_relative(bessel_j0(-2.5), -0.048383776468198);
  expect_relative(bessel_y1(0.7), -1.1032498719076334);
  expect_relative(bessel_k(0, 3, false), 0.03473950438627925);
  expect_relative(bessel_k(1, 800, true), 0.04433210911141211);  // the asymptotic branch
  expect_relative(airy_ai(-4.2), 0.08921076323945072, 1e-10);
  expect_relative(airy_ai(1.3), 0.09347466577150271, 1e-10);   // the series
  expect_relative(airy_ai(3.5), 0.002584098786989635, 1e-10);  // through K_1/3
}

TEST(BesselAiry, EdgesAsPyTorch) {
  EXPECT_TRUE(std::isnan(bessel_j0(kInf)));
  EXPECT_EQ(bessel_y0(0), -kInf);
  EXPECT_TRUE(std::isnan(bessel_y1(-1)));
  EXPECT_EQ(bessel_k(0, 0, false), kInf);
  EXPECT_EQ(bessel_k(1, kInf, true), 0);
  EXPECT_EQ(spherical_bessel_j0(0), 1);
  EXPECT_EQ(spherical_bessel_j0(-kInf), 0);
  EXPECT_TRUE(std::isnan(airy_ai(kInf)));
}

TEST(NormalAndZeta, ReferenceValuesAndEdges) {
  expect_relative(log_ndtr(-20), -203.91715537109727);
  expect_relative(ndtri(1e-12), -7.0344838253011319, 1e-14);
  expect_relative(ndtri(1 - 1e-12), 7.0344838253011319, 1e-4);  // 1 - p keeps 4 digits of p
  EXPECT_EQ(ndtri(0), -kInf);
  EXPECT_TRUE(std::isnan(ndtri(1.5)));
  expect_relative(zeta(2.5, 0.7), 2.9028675777573465);
  EXPECT_EQ(zeta(1, 3), kInf);
  EXPECT_TRUE(std::isnan(zeta(0.5, 1)));
  EXPECT_EQ(zeta(2, -1), kInf);
  EXPECT_TRUE(std::isnan(zeta(2.5, -1.5)));
}

TEST(IncompleteGamma, ReferenceValuesAndEdges) {
  expect_relative(regularized_gamma(2.5, 1.0, false), 0.15085496391539036);  // the series
  expect_relative(regularized_gamma(3.0, 7.0, true), 0.029636163880521777);  // the fraction
  expect_relative(regularized_gamma(50, 47, false), 0.34987546433902096);
  expect_relative(regularized_gamma(50, 47, true), 0.65012453566097904);
  // Large a: the uniform expansion; at a = x the lower function is 1/2 less O(1/sqrt(a)).
  expect_relative(regularized_gamma(1e20, 1e20, false), 0.5, 1e-9);
  EXPECT_TRUE(std::isnan(regularized_gamma(0, 0, false)));
  EXPECT_EQ(regularized_gamma(0, 2, false), 1);
  EXPECT_EQ(regularized_gamma(3, 0, true), 1);
  EXPECT_EQ(regularized_gamma(kInf, std::nan(""), false), 0);  // PyTorch's order of checks
  EXPECT_TRUE(std::isnan(regularized_gamma(-1, 2, true)));
}

TEST(OrthogonalPolynomials, ReferenceValuesAndDegrees) {
  using F = OrthogonalFamily;
  expect_relative(orthogonal_polynomial<double>(F::ChebyshevT, false, 0.3, 9), 0.3888276480000001);
  expect_relative(orthogonal_polynomial<double>(F::ChebyshevT, true, 0.65, 9), 0.3888276480000001);
  expect_relative(orthogonal_polynomial<double>(F::HermiteH, false, 1.7, 6), -503.4035839999999);
  expect_relative(orthogonal_polynomial<double>(F::LaguerreL, false, 2.2, 5), 0.9041973333333334);
  expect_relative(orthogonal_polynomial<double>(F::LegendreP, false, -0.4, 7), 0.0145904, 1e-10);
  // Degrees: truncated, 0 below zero; the endpoint forms.
  EXPECT_EQ(orthogonal_polynomial<double>(F::ChebyshevU, false, 0.5, -1), 0);
  expect_relative(orthogonal_polynomial<double>(F::ChebyshevT, false, 0.3, 9.9),
                  0.3888276480000001);
  EXPECT_EQ(orthogonal_polynomial<double>(F::ChebyshevV, false, -1, 3), -7);
  EXPECT_EQ(orthogonal_polynomial<double>(F::ChebyshevW, false, 1, 3), 7);
  // In float a recurrence that overflows ends in NaN (inf - inf), as the CPU's float kernel.
  EXPECT_TRUE(std::isnan(orthogonal_polynomial<float>(F::ChebyshevT, false, -55.0f, 127.0f)));
}

}  // namespace
}  // namespace openneuron::kernels::special
