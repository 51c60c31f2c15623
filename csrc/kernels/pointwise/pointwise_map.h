// The generic elementwise engine behind kernels::pointwise: applies a per-element functor to N
// strided, broadcast inputs of any dtype and writes one output. Private to the kernel library.
//
// One inner loop per op: every row is processed in chunks of kChunk elements; an operand that is
// already dense in the compute type is read (or written) in place, anything else (other dtype,
// strided, broadcast) is gathered into an L1-resident buffer first. The loop itself is therefore
// always `out[j] = op(in0[j], in1[j], ...)` over dense arrays, which the compiler vectorizes.
// Large tensors are split across the kernel thread pool along one dimension (parallel_views.h).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "kernels/core/element_types.h"
#include "kernels/core/row_io.h"
#include "kernels/core/strided_loop.h"
#include "kernels/core/tensor_view.h"
#include "kernels/runtime/parallel_views.h"

namespace openneuron::kernels::pointwise_detail {

// Elements per chunk; a few buffers of this many doubles stay in L1.
constexpr int64_t kChunk = 512;

template <typename T>
constexpr DType storage_dtype() {
  if constexpr (std::is_same_v<T, float>) return DType::Float32;
  if constexpr (std::is_same_v<T, double>) return DType::Float64;
  if constexpr (std::is_same_v<T, int64_t>) return DType::Int64;
  if constexpr (std::is_same_v<T, bool>) return DType::Bool;
}

// Calls fn(TypeTag<C>{}) with C the compute type of `dtype`: double for float64, float for the
// other floats, int64 for integers and bool.
template <typename Fn>
void visit_compute(DType dtype, Fn&& fn) {
  if (dtype == DType::Float64) {
    fn(TypeTag<double>{});
  } else if (is_floating(dtype)) {
    fn(TypeTag<float>{});
  } else {
    fn(TypeTag<int64_t>{});
  }
}

template <typename R, typename C, size_t N, typename Op, size_t... Is>
void map_rows(const TensorView& out, const std::array<TensorView, N>& in, const Op& op,
              std::index_sequence<Is...>) {
  std::array<const TensorView*, N + 1> views;
  views[0] = &out;
  for (size_t k = 0; k < N; ++k) views[k + 1] = &in[k];
  const bool out_direct = out.dtype == storage_dtype<R>();
  std::array<bool, N> in_direct;
  // Bools go through load_row, which reads any nonzero byte as true.
  for (size_t k = 0; k < N; ++k)
    in_direct[k] = in[k].dtype == storage_dtype<C>() && !std::is_same_v<C, bool>;

  for_each_row<N + 1>(
      views, LoopOrder::kFirstOperandMemory, [&](const RowPointers<N + 1>& row, int64_t n) {
        alignas(64) C buffers[N > 0 ? N : 1][kChunk];
        alignas(64) R results[kChunk];
        const bool out_dense = out_direct && row.strides[0] == static_cast<int64_t>(sizeof(R));
        for (int64_t start = 0; start < n; start += kChunk) {
          const int64_t m = std::min(kChunk, n - start);
          std::array<const C*, N> src;
          for (size_t k = 0; k < N; ++k) {
            const char* p = row.ptrs[k + 1] + start * row.strides[k + 1];
            if (in_direct[k] && row.strides[k + 1] == static_cast<int64_t>(sizeof(C))) {
              src[k] = reinterpret_cast<const C*>(p);
            } else {
              load_row<C>(buffers[k], p, row.strides[k + 1], in[k].dtype, m);
              src[k] = buffers[k];
            }
          }
          char* out_ptr = row.ptrs[0] + start * row.strides[0];
          R* dst = out_dense ? reinterpret_cast<R*>(out_ptr) : results;
          for (int64_t j = 0; j < m; ++j) dst[j] = op(src[Is][j]...);
          if (!out_dense) store_row<R>(out_ptr, row.strides[0], out.dtype, results, m);
        }
      });
}

template <typename R, typename C, size_t N, typename Op, size_t... Is>
void map_one(const TensorView& out, const std::array<TensorView, N>& in, const Op& op,
             std::index_sequence<Is...>) {
  C values[N > 0 ? N : 1];
  for (size_t k = 0; k < N; ++k) {
    load_row<C>(&values[k], static_cast<const char*>(in[k].data), 0, in[k].dtype, 1);
  }
  const R result = op(values[Is]...);
  store_row<R>(static_cast<char*>(out.data), 0, out.dtype, &result, 1);
}

// out[i] = op(in[0][i], ..., in[N-1][i]) for every index of out. Inputs have out's ndim and sizes
// (stride 0 where broadcast) and any dtype: they are read as C. Results of type R are converted to
// out's dtype. out may alias an input exactly (in-place); partial overlap is not supported.
template <typename R, typename C, size_t N, typename Op>
void map(const TensorView& out, const std::array<TensorView, N>& in, const Op& op) {
  const int64_t numel = out.numel();
  if (numel == 0) return;
  const auto indices = std::make_index_sequence<N>{};
  if (numel == 1) {
    // One element (a loss, a step count; every 0-dim tensor): the same conversions and
    // functor, without the row machinery, whose setup costs more than the element.
    map_one<R, C, N>(out, in, op, indices);
    return;
  }
  std::array<TensorView, N + 1> views;
  views[0] = out;
  for (size_t k = 0; k < N; ++k) views[k + 1] = in[k];
  parallel_over_views<N + 1>(views, [&](const std::array<TensorView, N + 1>& parts) {
    std::array<TensorView, N> inputs;
    for (size_t k = 0; k < N; ++k) inputs[k] = parts[k + 1];
    map_rows<R, C, N>(parts[0], inputs, op, indices);
  });
}

}  // namespace openneuron::kernels::pointwise_detail
