// Integer GEMM: every product and sum is taken in uint64 (wrapping, so no signed overflow)
// and truncated to the dtype once; modular arithmetic makes that equal to accumulating in the
// dtype with wraparound, in any order.
#include "kernels/matmul/integer_gemm.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {
namespace {

[[noreturn]] void fail(const std::string& message) {
  throw std::invalid_argument("openneuron kernels: integer_gemm: " + message);
}

bool is_integer_dtype(DType dtype) {
  return dtype == DType::UInt8 || dtype == DType::Int8 || dtype == DType::Int16 ||
         dtype == DType::Int32 || dtype == DType::Int64;
}

// One [M,K] @ [K,N] product for batch entry `batch` (views are 2-D or 3-D).
template <typename T>
void gemm_batch(const TensorView& out, const TensorView& a, const TensorView& b,
                const TensorView* bias, uint64_t alpha, uint64_t beta, int64_t batch) {
  const int row = out.ndim - 2;
  const int64_t m = out.sizes[row];
  const int64_t n = out.sizes[row + 1];
  const int64_t k = a.sizes[row + 1];
  const auto base = [&](const TensorView& v) {
    return static_cast<T*>(v.data) + (out.ndim == 3 ? batch * v.strides[0] : 0);
  };
  T* out_data = base(out);
  const T* a_data = base(a);
  const T* b_data = base(b);
  const T* bias_data = bias != nullptr ? base(*bias) : nullptr;
  const int64_t a_rs = a.strides[row], a_cs = a.strides[row + 1];
  const int64_t b_rs = b.strides[row], b_cs = b.strides[row + 1];
  const int64_t o_rs = out.strides[row], o_cs = out.strides[row + 1];
  // Row-wise accumulators keep the inner loop over j contiguous for b's usual layout.
  std::vector<uint64_t> acc(static_cast<size_t>(n));
  for (int64_t i = 0; i < m; ++i) {
    std::fill(acc.begin(), acc.end(), uint64_t{0});
    for (int64_t p = 0; p < k; ++p) {
      const uint64_t lhs = static_cast<uint64_t>(static_cast<int64_t>(a_data[i * a_rs + p * a_cs]));
      if (lhs == 0) continue;
      const T* b_row = b_data + p * b_rs;
      for (int64_t j = 0; j < n; ++j) {
        acc[j] += lhs * static_cast<uint64_t>(static_cast<int64_t>(b_row[j * b_cs]));
      }
    }
    for (int64_t j = 0; j < n; ++j) {
      uint64_t value = alpha * acc[j];
      if (bias_data != nullptr) {
        const int64_t b_off = i * bias->strides[row] + j * bias->strides[row + 1];
        value += beta * static_cast<uint64_t>(static_cast<int64_t>(bias_data[b_off]));
      }
      out_data[i * o_rs + j * o_cs] = static_cast<T>(value);
    }
  }
}

template <typename T>
void run(const TensorView& out, const TensorView& a, const TensorView& b, const TensorView* bias,
         int64_t alpha, int64_t beta) {
  const int64_t batches = out.ndim == 3 ? out.sizes[0] : 1;
  const TensorView* used_bias = (bias != nullptr && beta != 0) ? bias : nullptr;
  parallel_for(0, batches, 1, [&](int64_t begin, int64_t end) {
    for (int64_t batch = begin; batch < end; ++batch) {
      gemm_batch<T>(out, a, b, used_bias, static_cast<uint64_t>(alpha), static_cast<uint64_t>(beta),
                    batch);
    }
  });
}

}  // namespace

void integer_gemm(const TensorView& out, const TensorView& a, const TensorView& b_mat,
                  const TensorView* bias, int64_t alpha, int64_t beta) {
  const int nd = out.ndim;
  if (nd != 2 && nd != 3) fail("operands must be 2-D or 3-D");
  if (a.ndim != nd || b_mat.ndim != nd) fail("operands must share ndim");
  const int row = nd - 2;
  if (a.sizes[row] != out.sizes[row] || b_mat.sizes[row + 1] != out.sizes[row + 1] ||
      a.sizes[row + 1] != b_mat.sizes[row]) {
    fail("shapes do not form [M,K] @ [K,N] -> [M,N]");
  }
  if (nd == 3 && (a.sizes[0] != out.sizes[0] || b_mat.sizes[0] != out.sizes[0])) {
    fail("batch sizes differ");
  }
  if (bias != nullptr) {
    bool same = bias->ndim == nd;
    for (int d = 0; same && d < nd; ++d) same = bias->sizes[d] == out.sizes[d];
    if (!same) fail("bias must have out's ndim and sizes (stride 0 to broadcast)");
  }
  if (!is_integer_dtype(out.dtype) || a.dtype != out.dtype || b_mat.dtype != out.dtype ||
      (bias != nullptr && bias->dtype != out.dtype)) {
    fail("needs all operands of one integer dtype (uint8, int8, int16, int32, int64)");
  }
  if (out.numel() == 0) return;
  switch (out.dtype) {
    case DType::UInt8:
      return run<uint8_t>(out, a, b_mat, bias, alpha, beta);
    case DType::Int8:
      return run<int8_t>(out, a, b_mat, bias, alpha, beta);
    case DType::Int16:
      return run<int16_t>(out, a, b_mat, bias, alpha, beta);
    case DType::Int32:
      return run<int32_t>(out, a, b_mat, bias, alpha, beta);
    default:
      return run<int64_t>(out, a, b_mat, bias, alpha, beta);
  }
}

}  // namespace openneuron::kernels
