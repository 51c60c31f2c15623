// gemm through cblas: operands BLAS can read in place (row-major or transposed) are passed
// as they are; anything else, including 16-bit and 8-bit floats, is packed into fp32 scratch.
#include "kernels/matmul/matmul.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/core/element_types.h"
#include "kernels/matmul/blas_gemm.h"
#include "kernels/matmul/dnnl_matmul.h"
#include "kernels/matmul/few_row_gemm.h"
#include "kernels/matmul/matrix_view.h"
#include "kernels/pointwise/cast.h"

namespace openneuron::kernels {
namespace {

[[noreturn]] void fail(const std::string& message) {
  throw std::invalid_argument("openneuron kernels: gemm: " + message);
}

template <typename C>
constexpr DType dtype_of() {
  return std::is_same_v<C, double> ? DType::Float64 : DType::Float32;
}

TensorView dense_matrix(void* data, DType dtype, int64_t rows, int64_t cols) {
  return matrix_view(data, dtype, rows, cols, cols);
}

// The 2-D matrix of batch entry `batch` of a 3-D view (the view itself when 2-D).
TensorView batch_matrix(const TensorView& view, int64_t batch) {
  if (view.ndim == 2) return view;
  TensorView matrix;
  matrix.data = static_cast<char*>(view.data) +
                batch * view.strides[0] * static_cast<int64_t>(element_size(view.dtype));
  matrix.dtype = view.dtype;
  matrix.ndim = 2;
  for (int d = 0; d < 2; ++d) {
    matrix.sizes[d] = view.sizes[d + 1];
    matrix.strides[d] = view.strides[d + 1];
  }
  return matrix;
}

bool fits_blas_int(int64_t value) { return value >= 0 && value <= INT_MAX; }

// How BLAS reads an operand: in place (possibly as a transpose) or from a packed copy.
struct BlasMatrix {
  const void* data;
  CBLAS_TRANSPOSE trans;
  int64_t ld;
};

template <typename C>
BlasMatrix as_blas_matrix(const TensorView& m, std::vector<C>& scratch) {
  const int64_t rows = m.sizes[0];
  const int64_t cols = m.sizes[1];
  const int64_t row_stride = m.strides[0];
  const int64_t col_stride = m.strides[1];
  if (m.dtype == dtype_of<C>()) {
    const bool rows_dense = cols <= 1 || col_stride == 1;
    if (rows_dense && (rows <= 1 || row_stride >= std::max<int64_t>(cols, 1))) {
      const int64_t ld = rows <= 1 ? std::max<int64_t>(cols, 1) : row_stride;
      if (fits_blas_int(ld)) return {m.data, CblasNoTrans, ld};
    }
    const bool cols_dense = rows <= 1 || row_stride == 1;
    if (cols_dense && (cols <= 1 || col_stride >= std::max<int64_t>(rows, 1))) {
      const int64_t ld = cols <= 1 ? std::max<int64_t>(rows, 1) : col_stride;
      if (fits_blas_int(ld)) return {m.data, CblasTrans, ld};
    }
  }
  scratch.resize(static_cast<size_t>(rows * cols));
  copy(dense_matrix(scratch.data(), dtype_of<C>(), rows, cols), m);
  return {scratch.data(), CblasNoTrans, std::max<int64_t>(cols, 1)};
}

void blas_gemm(CBLAS_TRANSPOSE trans_a, CBLAS_TRANSPOSE trans_b, int64_t m, int64_t n, int64_t k,
               double alpha, const float* a, int64_t lda, const float* b, int64_t ldb, double beta,
               float* c, int64_t ldc) {
  // Packed fp16/fp8 operands end up here as fp32: oneDNN first, as for fp32 tensors.
  if (dense_sgemm(trans_a == CblasTrans, trans_b == CblasTrans, m, n, k, static_cast<float>(alpha),
                  a, lda, b, ldb, static_cast<float>(beta), c, ldc)) {
    return;
  }
  blas_sgemm(trans_a == CblasTrans, trans_b == CblasTrans, m, n, k, static_cast<float>(alpha), a,
             lda, b, ldb, static_cast<float>(beta), c, ldc);
}

void blas_gemm(CBLAS_TRANSPOSE trans_a, CBLAS_TRANSPOSE trans_b, int64_t m, int64_t n, int64_t k,
               double alpha, const double* a, int64_t lda, const double* b, int64_t ldb,
               double beta, double* c, int64_t ldc) {
  blas_dgemm(trans_a == CblasTrans, trans_b == CblasTrans, m, n, k, alpha, a, lda, b, ldb, beta, c,
             ldc);
}

template <typename C>
struct GemmScratch {
  std::vector<C> a, b, c;
};

// One [M,K] @ [K,N] product in compute type C (float or double).
template <typename C>
void gemm_matrix(const TensorView& out, const TensorView& a, const TensorView& b,
                 const TensorView* bias, double alpha, double beta, GemmScratch<C>& scratch) {
  const int64_t m = out.sizes[0];
  const int64_t n = out.sizes[1];
  const int64_t k = a.sizes[1];
  if (m == 0 || n == 0) return;

  // Write straight into out when BLAS can address it; otherwise into dense scratch.
  const bool direct = out.dtype == dtype_of<C>() && (n <= 1 || out.strides[1] == 1) &&
                      (m <= 1 || out.strides[0] >= n) && fits_blas_int(m <= 1 ? n : out.strides[0]);
  C* c_data;
  int64_t ldc;
  TensorView c_view;
  if (direct) {
    c_data = static_cast<C*>(out.data);
    ldc = m <= 1 ? std::max<int64_t>(n, 1) : out.strides[0];
    c_view = out;
  } else {
    scratch.c.resize(static_cast<size_t>(m * n));
    c_data = scratch.c.data();
    ldc = n;
    c_view = dense_matrix(c_data, dtype_of<C>(), m, n);
  }

  // beta == 0 ignores bias entirely (so NaN in bias does not propagate), as addmm does.
  const bool use_bias = bias != nullptr && beta != 0.0;
  if (use_bias) copy(c_view, *bias);
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        C& value = c_data[i * ldc + j];
        value = use_bias ? static_cast<C>(beta * value) : C(0);
      }
    }
  } else {
    const BlasMatrix blas_a = as_blas_matrix<C>(a, scratch.a);
    const BlasMatrix blas_b = as_blas_matrix<C>(b, scratch.b);
    blas_gemm(blas_a.trans, blas_b.trans, m, n, k, alpha, static_cast<const C*>(blas_a.data),
              blas_a.ld, static_cast<const C*>(blas_b.data), blas_b.ld, use_bias ? beta : 0.0,
              c_data, ldc);
  }
  if (!direct) copy(out, c_view);
}

void check_shapes(const TensorView& out, const TensorView& a, const TensorView& b,
                  const TensorView* bias) {
  const int nd = out.ndim;
  if (nd != 2 && nd != 3) fail("operands must be 2-D or 3-D");
  if (a.ndim != nd || b.ndim != nd) fail("operands must share ndim");
  const int row = nd - 2;
  const int col = nd - 1;
  if (a.sizes[row] != out.sizes[row] || b.sizes[col] != out.sizes[col] ||
      a.sizes[col] != b.sizes[row]) {
    fail("shapes do not form [M,K] @ [K,N] -> [M,N]");
  }
  if (nd == 3 && (a.sizes[0] != out.sizes[0] || b.sizes[0] != out.sizes[0])) {
    fail("batch sizes differ (broadcast batches need stride 0, not size 1)");
  }
  if (bias != nullptr) {
    bool same = bias->ndim == nd;
    for (int d = 0; same && d < nd; ++d) same = bias->sizes[d] == out.sizes[d];
    if (!same) fail("bias must have out's ndim and sizes (stride 0 to broadcast)");
  }
  // A 16-bit product may keep its fp32 accumulator (a widened out): nothing is rounded.
  const bool widened =
      out.dtype == DType::Float32 && (a.dtype == DType::BFloat16 || a.dtype == DType::Float16);
  const bool bias_dtype_ok =
      bias == nullptr || bias->dtype == a.dtype || (widened && bias->dtype == out.dtype);
  if (!is_floating(out.dtype) || (a.dtype != out.dtype && !widened) || b.dtype != a.dtype ||
      !bias_dtype_ok) {
    fail(
        "needs all operands of one floating dtype (out, and bias, may be fp32 for 16-bit "
        "operands)");
  }
}

// A batch that shares one b matrix, with a, out (and bias) rows evenly spaced across
// batches, is a single [B*M, K] @ [K, N] product: one large BLAS call instead of B small ones.
bool fold_batch(const TensorView& out, const TensorView& a, const TensorView& b,
                const TensorView* bias, TensorView folded[4]) {
  const int64_t m = out.sizes[1];
  if (b.strides[0] != 0 || out.sizes[0] <= 1 || m <= 1) return false;
  const auto rows_even = [m](const TensorView& v) { return v.strides[0] == m * v.strides[1]; };
  if (!rows_even(a) || !rows_even(out) || (bias != nullptr && !rows_even(*bias))) return false;
  const TensorView* sources[4] = {&out, &a, &b, bias};
  for (int i = 0; i < 4; ++i) {
    if (sources[i] == nullptr) continue;
    const TensorView& v = *sources[i];
    folded[i] = batch_matrix(v, 0);
    if (i != 2) folded[i].sizes[0] = v.sizes[0] * v.sizes[1];
  }
  return true;
}

template <typename C>
void run_gemm(const TensorView& out, const TensorView& a, const TensorView& b,
              const TensorView* bias, double alpha, double beta) {
  GemmScratch<C> scratch;
  if (out.ndim == 2) {
    gemm_matrix<C>(out, a, b, bias, alpha, beta, scratch);
    return;
  }
  TensorView folded[4];
  if (fold_batch(out, a, b, bias, folded)) {
    gemm_matrix<C>(folded[0], folded[1], folded[2], bias ? &folded[3] : nullptr, alpha, beta,
                   scratch);
    return;
  }
  for (int64_t batch = 0; batch < out.sizes[0]; ++batch) {
    const TensorView bias_matrix = bias ? batch_matrix(*bias, batch) : TensorView{};
    gemm_matrix<C>(batch_matrix(out, batch), batch_matrix(a, batch), batch_matrix(b, batch),
                   bias ? &bias_matrix : nullptr, alpha, beta, scratch);
  }
}

}  // namespace

void gemm(const TensorView& out, const TensorView& a, const TensorView& b_mat,
          const TensorView* bias, double alpha, double beta) {
  check_shapes(out, a, b_mat, bias);
  if (dnnl_gemm(out, a, b_mat, bias, alpha, beta)) return;
  // 16-bit products BLAS would read through whole widened copies: a few rows read b in place.
  if (few_row_gemm(out, a, b_mat, bias, alpha, beta)) return;
  if (out.dtype == DType::Float64) {
    run_gemm<double>(out, a, b_mat, bias, alpha, beta);
  } else {
    run_gemm<float>(out, a, b_mat, bias, alpha, beta);
  }
}

}  // namespace openneuron::kernels
