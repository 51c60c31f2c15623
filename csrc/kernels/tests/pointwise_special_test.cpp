// kernels::pointwise special functions (gamma, Bessel, inverse error families; copysign, fmax,
// heaviside, logit ...) against reference values of the functions at chosen points, at float64
// (tight) and the device's float dtypes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/pointwise/pointwise.h"
#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::close;
using testing::get;
using testing::make_tensor;
using testing::set;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// op(x) at `dtype` for each x (rounded to dtype first), checked against `expected`.
void expect_unary(PointwiseOp op, DType dtype, const std::vector<double>& xs,
                  const std::vector<double>& expected, PointwiseParams params = {}) {
  const auto n = static_cast<int64_t>(xs.size());
  auto in = make_tensor(dtype, {n});
  auto out = make_tensor(dtype, {n});
  for (int64_t i = 0; i < n; ++i) set(in.view, {i}, xs[i]);
  pointwise(op, out.view, &in.view, 1, dtype, params);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_TRUE(close(dtype, get(out.view, {i}), expected[i]))
        << "op " << static_cast<int>(op) << " dtype " << dtype_name(dtype) << " x=" << xs[i]
        << ": got " << get(out.view, {i}) << ", expected " << expected[i];
  }
}

void expect_binary(PointwiseOp op, DType dtype, const std::vector<double>& xs,
                   const std::vector<double>& ys, const std::vector<double>& expected,
                   PointwiseParams params = {}) {
  const auto n = static_cast<int64_t>(xs.size());
  auto a = make_tensor(dtype, {n});
  auto b = make_tensor(dtype, {n});
  auto out = make_tensor(dtype, {n});
  for (int64_t i = 0; i < n; ++i) {
    set(a.view, {i}, xs[i]);
    set(b.view, {i}, ys[i]);
  }
  const TensorView inputs[2] = {a.view, b.view};
  pointwise(op, out.view, inputs, 2, dtype, params);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_TRUE(close(dtype, get(out.view, {i}), expected[i]))
        << "op " << static_cast<int>(op) << " x=" << xs[i] << " y=" << ys[i] << ": got "
        << get(out.view, {i}) << ", expected " << expected[i];
  }
}

const std::vector<double> kBesselPoints = {-7.5, -0.3, 0.25, 1.0, 3.3, 12.0, 35.0, 60.0};

TEST(PointwiseSpecial, BesselFunctionsMatchReferenceValues) {
  expect_unary(PointwiseOp::BesselI0, DType::Float64, kBesselPoints,
               {268.1613115151893, 1.0226268793515967, 1.015686141223608, 1.2660658777520082,
                6.242630465183029, 18948.92534929631, 107338818494514.08, 5.8940770556098e+24});
  expect_unary(
      PointwiseOp::BesselI0e, DType::Float64, kBesselPoints,
      {0.1483158300773955, 0.7575806251825477, 0.7910171621397194, 0.46575960759364043,
       0.23024798447142647, 0.11642622121344044, 0.06767837835041363, 0.05161154917360984});
  expect_unary(PointwiseOp::BesselI1, DType::Float64, kBesselPoints,
               {-249.58436542268808, -0.15169384000359282, 0.12597910894546793, 0.5651591039924851,
                5.180958855355929, 18141.348781638833, 105794126051896.27, 5.844751588390468e+24});
  expect_unary(PointwiseOp::BesselI1e, DType::Float64, kBesselPoints,
               {-0.13804121154855417, -0.11237756063983881, 0.09811262869736825, 0.2079104153497085,
                0.19109017276102955, 0.111464299290181, 0.06670443172949143, 0.05117963018902872});
  // Overflow to inf in float32, scaled forms stay finite.
  expect_unary(PointwiseOp::BesselI0, DType::Float32, {100.0, -100.0}, {kInf, kInf});
  expect_unary(PointwiseOp::BesselI1, DType::Float32, {100.0, -100.0}, {kInf, -kInf});
  expect_unary(PointwiseOp::BesselI0e, DType::BFloat16, {1.0, 1e30}, {0.46575960759364043, 0.0});
}

const std::vector<double> kGammaPoints = {-2.5, -0.5, 0.1, 1.0, 4.5, 30.0};

TEST(PointwiseSpecial, GammaFamilyMatchesReferenceValues) {
  expect_unary(PointwiseOp::Digamma, DType::Float64, kGammaPoints,
               {1.1031566406452433, 0.03648997397857639, -10.423754940411076, -0.5772156649015328,
                1.3888709263595287, 3.384438132685525});
  PointwiseParams n;
  n.values[0] = Scalar::from_int(1);
  n.present[0] = true;
  // Trigamma from psi1(1) = pi^2/6, psi1(1/2) = pi^2/2 and psi1(x) = psi1(x + 1) + 1/x^2.
  expect_unary(PointwiseOp::Polygamma, DType::Float64, {-2.5, -0.5, 0.5, 1.0, 4.5},
               {9.539246644989124, 8.934802200544679, 4.934802200544679, 1.6449340668482264,
                0.24872510303900963},
               n);
  n.values[0] = Scalar::from_int(2);
  expect_unary(PointwiseOp::Polygamma, DType::Float64, kGammaPoints,
               {-0.1082040516417282, -0.82879664423432, -2001.8614573783439, -2.404113806319188,
                -0.061556821321027695, -0.0011487652037285997},
               n);
  n.values[0] = Scalar::from_int(3);
  expect_unary(PointwiseOp::Polygamma, DType::Float64, kGammaPoints,
               {194.74787621918756, 193.40909103400242, 60004.512876790235, 6.493939402266829,
                0.03032250854236658, 7.786003664736127e-05},
               n);
  expect_unary(PointwiseOp::Lgamma, DType::Float32, kGammaPoints,
               {-0.05624371649767405, 1.2655121234846454, 2.252712651734206, 0.0,
                2.4537365708424423, 71.25703896716801});
  // Poles: digamma's sign follows the zero's sign; negative integers are NaN.
  expect_unary(PointwiseOp::Digamma, DType::Float32, {0.0, -0.0, -3.0}, {-kInf, kInf, kNaN});
}

TEST(PointwiseSpecial, ErrorFunctionsMatchReferenceValues) {
  expect_unary(PointwiseOp::Erfinv, DType::Float64, {-0.999999, -0.5, 0.2, 0.9, 0.99999},
               {-3.458910737275499, -0.4769362762044699, 0.1791434546212917, 1.1630871536766743,
                3.123413274341571});
  expect_unary(PointwiseOp::Erfinv, DType::Float32, {1.0, -1.0, 1.5, 0.0}, {kInf, -kInf, kNaN, 0});
  expect_unary(PointwiseOp::Erfcx, DType::Float64, {-3.0, 0.5, 10.0, 30.0, 1e4},
               {16205.988853999586, 0.6156903441929258, 0.05614099274382259, 0.018795888861416754,
                5.641895807268084e-05});
}

TEST(PointwiseSpecial, ElementaryFunctionsAndEdgesAt16Bit) {
  for (DType dtype : {DType::BFloat16, DType::Float16, DType::Float32}) {
    expect_unary(PointwiseOp::Acos, dtype, {-1.0, 0.5}, {M_PI, std::acos(0.5)});
    expect_unary(PointwiseOp::Atanh, dtype, {1.0, 0.5}, {kInf, std::atanh(0.5)});
    expect_unary(PointwiseOp::Entr, dtype, {0.0, 0.5, -1.0}, {0.0, 0.5 * std::log(2.0), -kInf});
    expect_unary(PointwiseOp::Angle, dtype, {-2.0, 0.0, 3.0, kNaN}, {M_PI, 0.0, 0.0, kNaN});
    expect_binary(PointwiseOp::Copysign, dtype, {2.0, 2.0, -3.0}, {-0.0, 1.0, 5.0},
                  {-2.0, 2.0, 3.0});
    expect_binary(PointwiseOp::Fmax, dtype, {kNaN, 1.0, kNaN}, {2.0, kNaN, kNaN}, {2.0, 1.0, kNaN});
    expect_binary(PointwiseOp::Fmin, dtype, {kNaN, 1.0, 4.0}, {2.0, kNaN, 3.0}, {2.0, 1.0, 3.0});
    expect_binary(PointwiseOp::Heaviside, dtype, {-1.0, 0.0, 2.0}, {0.5, 0.5, 0.5},
                  {0.0, 0.5, 1.0});
    expect_binary(PointwiseOp::Xlog1py, dtype, {0.0, 2.0, 0.0}, {-1.0, 1.0, kNaN},
                  {0.0, 2.0 * std::log(2.0), kNaN});
  }
}

TEST(PointwiseSpecial, LogitClampsToItsBounds) {
  PointwiseParams eps;
  eps.values[0] = Scalar::from_double(0.25);
  eps.present[0] = true;
  expect_unary(PointwiseOp::Logit, DType::Float32, {0.0, 0.5, 0.9, 0.6},
               {std::log(1.0 / 3), 0.0, std::log(3.0), std::log(1.5)}, eps);
  expect_unary(PointwiseOp::Logit, DType::Float32, {0.0, 1.0, 0.2}, {-kInf, kInf, std::log(0.25)});
  // Gradient: zero outside the clamp, NaN outside [0, 1] without eps.
  expect_binary(PointwiseOp::LogitBackward, DType::Float32, {1.0, 1.0}, {0.1, 0.5}, {0.0, 4.0},
                eps);
  expect_binary(PointwiseOp::LogitBackward, DType::Float32, {1.0, 1.0}, {1.5, 0.5}, {kNaN, 4.0});
}

TEST(PointwiseSpecial, SignbitAndHeavisideTakeIntegers) {
  auto in = make_tensor(DType::Int32, {3});
  auto out = make_tensor(DType::Bool, {3});
  set(in.view, {0}, -4);
  set(in.view, {1}, 0);
  set(in.view, {2}, 7);
  pointwise(PointwiseOp::Signbit, out.view, &in.view, 1, DType::Int32, {});
  EXPECT_EQ(get(out.view, {0}), 1);
  EXPECT_EQ(get(out.view, {1}), 0);
  EXPECT_EQ(get(out.view, {2}), 0);
  auto minus_zero = make_tensor(DType::Float32, {1});
  set(minus_zero.view, {0}, -0.0);
  auto minus_zero_sign = make_tensor(DType::Bool, {1});
  pointwise(PointwiseOp::Signbit, minus_zero_sign.view, &minus_zero.view, 1, DType::Float32, {});
  EXPECT_EQ(get(minus_zero_sign.view, {0}), 1);
  expect_binary(PointwiseOp::Heaviside, DType::Int64, {-3, 0, 5}, {7, 7, 7}, {0, 7, 1});
  expect_binary(PointwiseOp::Fmax, DType::Int32, {-3, 9}, {2, 1}, {2, 9});
}

}  // namespace
}  // namespace openneuron::kernels
