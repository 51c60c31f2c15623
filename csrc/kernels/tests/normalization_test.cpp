// Layer and RMS norm over rows (row_norm_forward / row_norm_backward) against double
// references: the contiguous-row fast path for every row dtype, row lengths around the
// 16-lane vectors, strided rows, many rows (parallel chunks), the column sums of the weight
// and bias gradients, and the general path for rows with strided elements.
#include "kernels/nn/normalization.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/tests/per_isa_test.h"
#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::get;
using testing::HostTensor;
using testing::make_tensor;
using testing::random_tensor;
using Index = std::vector<int64_t>;

struct RowCase {
  int64_t rows = 3, d = 16;
  DType dtype = DType::Float32;
  bool rms = false;
  bool affine = true;
  bool strided_rows = false;      // rows spaced further apart than d
  bool strided_elements = false;  // elements of a row spaced apart (the general path)
};

// An [rows, d] view into fresh storage laid out as the case asks.
struct RowTensor {
  HostTensor storage;
  TensorView view;
};
RowTensor rows_like(const RowCase& c, std::mt19937* rng, double low = -1.0, double high = 1.0) {
  RowTensor t;
  if (c.strided_elements) {
    t.storage = make_tensor(c.dtype, {c.d, c.rows});
    t.view = testing::permute(t.storage.view, {1, 0});
  } else if (c.strided_rows) {
    t.storage = make_tensor(c.dtype, {c.rows, c.d + 5});
    t.view = testing::slice(t.storage.view, 1, 2, c.d);
  } else {
    t.storage = make_tensor(c.dtype, {c.rows, c.d});
    t.view = t.storage.view;
  }
  if (rng != nullptr) {
    std::uniform_real_distribution<double> dist(low, high);
    testing::for_each_index(t.view, [&](const Index& i) { testing::set(t.view, i, dist(*rng)); });
  }
  return t;
}

double tol(DType dtype, double expected, double scale) {
  const double m = std::fabs(expected);
  switch (dtype) {
    case DType::BFloat16:
      return 1e-2 * scale + 8e-3 * m;
    case DType::Float16:
      return 2e-3 * scale + 1e-3 * m;
    default:
      return 1e-5 * scale + 1e-5 * m;
  }
}

void run_case(const RowCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  const double eps = 1e-5;
  RowTensor in = rows_like(c, &rng, -2.0, 3.0);
  RowTensor grad_out = rows_like(c, &rng);
  RowTensor out = rows_like(c, nullptr), grad_in = rows_like(c, nullptr);
  HostTensor weight = random_tensor(c.dtype, {c.d}, rng, 0.5, 1.5);
  HostTensor bias = random_tensor(c.dtype, {c.d}, rng);
  HostTensor mean = make_tensor(DType::Float32, {c.rows}),
             rstd = make_tensor(DType::Float32, {c.rows});
  HostTensor gw = make_tensor(DType::Float32, {c.d}), gb = make_tensor(DType::Float32, {c.d});
  const TensorView* w = c.affine ? &weight.view : nullptr;
  const TensorView* b = c.affine && !c.rms ? &bias.view : nullptr;
  row_norm_forward(out.view, c.rms ? nullptr : &mean.view, rstd.view, in.view, w, b, eps, c.rms);
  row_norm_backward(&grad_in.view, c.affine ? &gw.view : nullptr, b ? &gb.view : nullptr,
                    grad_out.view, in.view, c.rms ? nullptr : &mean.view, rstd.view, w, c.rms);
  std::vector<double> ref_gw(static_cast<size_t>(c.d), 0.0), ref_gb(static_cast<size_t>(c.d), 0.0);
  int failures = 0;
  auto check = [&](double got, double want, double scale, const std::string& what) {
    if (!(std::fabs(got - want) <= tol(c.dtype, want, scale)) && failures++ < 8) {
      ADD_FAILURE() << what << ": got " << got << ", want " << want;
    }
  };
  for (int64_t r = 0; r < c.rows; ++r) {
    double mu = 0.0, var = 0.0;
    for (int64_t i = 0; i < c.d; ++i) mu += get(in.view, {r, i}) / c.d;
    if (c.rms) mu = 0.0;
    for (int64_t i = 0; i < c.d; ++i) var += std::pow(get(in.view, {r, i}) - mu, 2) / c.d;
    const double rs = 1.0 / std::sqrt(var + eps);
    if (!c.rms) check(get(mean.view, {r}), mu, 1.0, "mean row " + std::to_string(r));
    EXPECT_NEAR(get(rstd.view, {r}), rs, 1e-4 * rs);
    // dx = rs * (wg - mean(wg) - xhat * mean(wg * xhat)) (no mean(wg) term for RMS).
    double mean_wg = 0.0, mean_wg_xhat = 0.0;
    for (int64_t i = 0; i < c.d; ++i) {
      const double xhat = (get(in.view, {r, i}) - mu) * rs;
      const double wi = c.affine ? get(weight.view, {i}) : 1.0;
      const double bi = b ? get(bias.view, {i}) : 0.0;
      check(get(out.view, {r, i}), xhat * wi + bi, 1.0,
            "out " + std::to_string(r) + "," + std::to_string(i));
      const double wg = wi * get(grad_out.view, {r, i});
      mean_wg += wg / c.d;
      mean_wg_xhat += wg * xhat / c.d;
      ref_gw[i] += get(grad_out.view, {r, i}) * xhat;
      ref_gb[i] += get(grad_out.view, {r, i});
    }
    for (int64_t i = 0; i < c.d; ++i) {
      const double xhat = (get(in.view, {r, i}) - mu) * rs;
      const double wi = c.affine ? get(weight.view, {i}) : 1.0;
      const double want =
          rs * (wi * get(grad_out.view, {r, i}) - (c.rms ? 0.0 : mean_wg) - xhat * mean_wg_xhat);
      check(get(grad_in.view, {r, i}), want, rs,
            "grad_in " + std::to_string(r) + "," + std::to_string(i));
    }
  }
  // Column sums over many rows: fp32 reads of 16-bit values, summed in double.
  const double column_scale = 1.0 + std::sqrt(static_cast<double>(c.rows));
  if (c.affine) {
    for (int64_t i = 0; i < c.d; ++i) {
      EXPECT_NEAR(get(gw.view, {i}), ref_gw[i], 1e-4 * column_scale + 1e-5 * std::fabs(ref_gw[i]))
          << i;
      if (b) {
        EXPECT_NEAR(get(gb.view, {i}), ref_gb[i], 1e-4 * column_scale + 1e-5 * std::fabs(ref_gb[i]))
            << i;
      }
    }
  }
}

class NormalizationRowsTest : public testing::PerIsaTest {};

TEST_P(NormalizationRowsTest, RowLengthsAroundTheVectorWidth) {
  for (int64_t d : {1, 7, 16, 17, 33, 256, 1000}) {
    for (bool rms : {false, true}) {
      RowCase c;
      c.d = d;
      c.rms = rms;
      SCOPED_TRACE("d " + std::to_string(d) + (rms ? " rms" : " layer"));
      run_case(c, static_cast<uint32_t>(d));
    }
  }
}

TEST_P(NormalizationRowsTest, SixteenBitRowsAndManyRows) {
  for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float16}) {
    for (bool rms : {false, true}) {
      RowCase c;
      c.rows = 300;  // several parallel chunks
      c.d = 48;
      c.dtype = dtype;
      c.rms = rms;
      SCOPED_TRACE(std::string(dtype_name(dtype)) + (rms ? " rms" : " layer"));
      run_case(c, 3);
    }
  }
}

TEST_P(NormalizationRowsTest, StridedRowsStridedElementsAndNoAffine) {
  for (DType dtype : {DType::Float32, DType::BFloat16}) {
    RowCase strided_rows;
    strided_rows.rows = 40;
    strided_rows.d = 37;
    strided_rows.dtype = dtype;
    strided_rows.strided_rows = true;
    run_case(strided_rows, 5);
    RowCase strided_elements = strided_rows;
    strided_elements.strided_rows = false;
    strided_elements.strided_elements = true;
    run_case(strided_elements, 6);
    RowCase no_affine = strided_rows;
    no_affine.affine = false;
    run_case(no_affine, 7);
  }
}

TEST_P(NormalizationRowsTest, ZeroRowsAndZeroLength) {
  for (auto [rows, d] : std::vector<std::pair<int64_t, int64_t>>{{0, 16}, {4, 0}}) {
    RowCase c;
    c.rows = rows;
    c.d = d;
    run_case(c, 9);
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, NormalizationRowsTest, testing::kernel_isas(),
                         testing::isa_test_name);

}  // namespace
}  // namespace openneuron::kernels
