// Binary and unary elementwise kernels. Operands sharing the compute dtype run typed loops
// directly on memory; anything else is converted in small chunks through compute buffers.
#include "kernels/elementwise.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/element_types.h"
#include "kernels/row_io.h"
#include "kernels/strided_loop.h"

namespace openneuron::kernels {
namespace {

// Elements converted per chunk in the buffered path; small enough to stay in L1.
constexpr int64_t kChunk = 256;

template <typename C>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::Float32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::Float64;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::Int64;
}

// fp32 for fp32 and narrower floats, double for fp64, int64 for integers and bool.
template <typename Fn>
void visit_compute_type(DType out_dtype, Fn&& fn) {
  if (out_dtype == DType::Float64) {
    fn(TypeTag<double>{});
  } else if (is_floating(out_dtype)) {
    fn(TypeTag<float>{});
  } else {
    fn(TypeTag<int64_t>{});
  }
}

template <typename C>
C scalar_as(Scalar value) {
  if constexpr (std::is_integral_v<C>) {
    return value.is_integral ? value.i : cast_value<int64_t>(value.f);
  } else {
    return static_cast<C>(value.to_double());
  }
}

// Integer negation wraps (through uint64) instead of overflowing into undefined behaviour.
template <typename C>
C negate(C x) {
  if constexpr (std::is_integral_v<C>) {
    return static_cast<C>(uint64_t{0} - static_cast<uint64_t>(x));
  } else {
    return -x;
  }
}
void check_operand_shape(const TensorView& out, const TensorView& operand, const char* op) {
  bool same = out.ndim == operand.ndim;
  for (int d = 0; same && d < out.ndim; ++d) same = out.sizes[d] == operand.sizes[d];
  if (!same) {
    throw std::invalid_argument(std::string("openneuron kernels: ") + op +
                                " operand must have the output's ndim and sizes");
  }
}

template <typename T, typename Op>
void binary_row_direct(const RowPointers<3>& row, int64_t n, const Op& op) {
  T* out = reinterpret_cast<T*>(row.ptrs[0]);
  const T* x = reinterpret_cast<const T*>(row.ptrs[1]);
  const T* y = reinterpret_cast<const T*>(row.ptrs[2]);
  const int64_t so = row.strides[0] / static_cast<int64_t>(sizeof(T));
  const int64_t sx = row.strides[1] / static_cast<int64_t>(sizeof(T));
  const int64_t sy = row.strides[2] / static_cast<int64_t>(sizeof(T));
  if (so == 1 && sx == 1 && sy == 1) {
    for (int64_t j = 0; j < n; ++j) out[j] = op(x[j], y[j]);
  } else if (so == 1 && sx == 1 && sy == 0) {
    const T y0 = *y;
    for (int64_t j = 0; j < n; ++j) out[j] = op(x[j], y0);
  } else if (so == 1 && sx == 0 && sy == 1) {
    const T x0 = *x;
    for (int64_t j = 0; j < n; ++j) out[j] = op(x0, y[j]);
  } else {
    for (int64_t j = 0; j < n; ++j) out[j * so] = op(x[j * sx], y[j * sy]);
  }
}

// out = op(x, y) elementwise, evaluated in compute type C (threshold_backward's loop).
template <typename C, typename Op>
void run_binary(const TensorView& out, const TensorView& x, const TensorView& y, const Op& op) {
  if (out.dtype == dtype_of<C>() && x.dtype == out.dtype && y.dtype == out.dtype) {
    for_each_row<3>(
        {&out, &x, &y}, LoopOrder::kFirstOperandMemory,
        [&](const RowPointers<3>& row, int64_t n) { binary_row_direct<C>(row, n, op); });
    return;
  }
  for_each_row<3>(
      {&out, &x, &y}, LoopOrder::kFirstOperandMemory, [&](const RowPointers<3>& row, int64_t n) {
        C xs[kChunk], ys[kChunk], results[kChunk];
        for (int64_t start = 0; start < n; start += kChunk) {
          const int64_t m = std::min(kChunk, n - start);
          load_row<C>(xs, row.ptrs[1] + start * row.strides[1], row.strides[1], x.dtype, m);
          load_row<C>(ys, row.ptrs[2] + start * row.strides[2], row.strides[2], y.dtype, m);
          for (int64_t j = 0; j < m; ++j) results[j] = op(xs[j], ys[j]);
          store_row<C>(row.ptrs[0] + start * row.strides[0], row.strides[0], out.dtype, results, m);
        }
      });
}

template <typename T, typename Op>
void unary_row_direct(const RowPointers<2>& row, int64_t n, const Op& op) {
  T* out = reinterpret_cast<T*>(row.ptrs[0]);
  const T* x = reinterpret_cast<const T*>(row.ptrs[1]);
  const int64_t so = row.strides[0] / static_cast<int64_t>(sizeof(T));
  const int64_t sx = row.strides[1] / static_cast<int64_t>(sizeof(T));
  if (so == 1 && sx == 1) {
    for (int64_t j = 0; j < n; ++j) out[j] = op(x[j]);
  } else {
    for (int64_t j = 0; j < n; ++j) out[j * so] = op(x[j * sx]);
  }
}

template <typename C, typename Op>
void run_unary(const TensorView& out, const TensorView& x, const Op& op) {
  if (out.dtype == dtype_of<C>() && x.dtype == out.dtype) {
    for_each_row<2>({&out, &x}, LoopOrder::kFirstOperandMemory,
                    [&](const RowPointers<2>& row, int64_t n) { unary_row_direct<C>(row, n, op); });
    return;
  }
  for_each_row<2>(
      {&out, &x}, LoopOrder::kFirstOperandMemory, [&](const RowPointers<2>& row, int64_t n) {
        C xs[kChunk], results[kChunk];
        for (int64_t start = 0; start < n; start += kChunk) {
          const int64_t m = std::min(kChunk, n - start);
          load_row<C>(xs, row.ptrs[1] + start * row.strides[1], row.strides[1], x.dtype, m);
          for (int64_t j = 0; j < m; ++j) results[j] = op(xs[j]);
          store_row<C>(row.ptrs[0] + start * row.strides[0], row.strides[0], out.dtype, results, m);
        }
      });
}

}  // namespace

void unary(UnaryOp op, const TensorView& out, const TensorView& in) {
  check_operand_shape(out, in, "unary");
  if (out.numel() == 0) return;
  visit_compute_type(out.dtype, [&](auto tag) {
    using C = typename decltype(tag)::type;
    switch (op) {
      case UnaryOp::Relu:
        // x < 0 keeps NaN and -0.0 as they are, like torch.relu.
        run_unary<C>(out, in, [](C x) { return x < C(0) ? C(0) : x; });
        break;
      case UnaryOp::Neg:
        run_unary<C>(out, in, [](C x) { return negate(x); });
        break;
    }
  });
}

void threshold_backward(const TensorView& grad_in, const TensorView& grad_out,
                        const TensorView& self, Scalar threshold) {
  check_operand_shape(grad_in, grad_out, "threshold_backward");
  check_operand_shape(grad_in, self, "threshold_backward");
  if (grad_in.numel() == 0) return;
  visit_compute_type(grad_in.dtype, [&](auto tag) {
    using C = typename decltype(tag)::type;
    const C bound = scalar_as<C>(threshold);
    // Written as "self <= bound -> 0" so a NaN self passes the gradient, as PyTorch does.
    run_binary<C>(grad_in, grad_out, self,
                  [bound](C grad, C x) { return x <= bound ? C(0) : grad; });
  });
}

}  // namespace openneuron::kernels
