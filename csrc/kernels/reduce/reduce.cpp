// Sum and mean: the input is streamed once in its memory order into a dense accumulator
// shaped like the output (stride 0 along reduced dims), which is then stored rounded once.
#include "kernels/reduce/reduce.h"

#include <limits>
#include <stdexcept>
#include <vector>

#include "kernels/core/element_types.h"
#include "kernels/core/row_io.h"
#include "kernels/core/strided_loop.h"

namespace openneuron::kernels {
namespace {

// Sums a row into one value with independent partial sums, so the loop vectorises
// without reassociation flags.
template <typename Acc, typename T>
Acc sum_row(const char* data, int64_t stride, int64_t n) {
  constexpr int kLanes = 8;
  Acc partial[kLanes] = {};
  int64_t j = 0;
  if (stride == static_cast<int64_t>(sizeof(T))) {
    const T* typed = reinterpret_cast<const T*>(data);
    for (; j + kLanes <= n; j += kLanes) {
      for (int lane = 0; lane < kLanes; ++lane) {
        partial[lane] += cast_value<Acc>(load_value(typed + j + lane));
      }
    }
  }
  Acc total = 0;
  for (; j < n; ++j)
    total += cast_value<Acc>(load_value(reinterpret_cast<const T*>(data + j * stride)));
  for (int lane = 0; lane < kLanes; ++lane) total += partial[lane];
  return total;
}

template <typename Acc, typename T>
void accumulate_input(const TensorView& in, Acc* accumulator, const int64_t* acc_strides) {
  const std::array<char*, 2> bases = {static_cast<char*>(in.data),
                                      reinterpret_cast<char*>(accumulator)};
  for_each_row<2>(in.ndim, in.sizes, bases, {in.strides, acc_strides}, {sizeof(T), sizeof(Acc)},
                  LoopOrder::kFirstOperandMemory, [&](const RowPointers<2>& row, int64_t n) {
                    Acc* acc = reinterpret_cast<Acc*>(row.ptrs[1]);
                    if (row.strides[1] == 0) {
                      *acc += sum_row<Acc, T>(row.ptrs[0], row.strides[0], n);
                      return;
                    }
                    const int64_t acc_step = row.strides[1] / static_cast<int64_t>(sizeof(Acc));
                    if (acc_step == 1 && row.strides[0] == static_cast<int64_t>(sizeof(T))) {
                      const T* typed = reinterpret_cast<const T*>(row.ptrs[0]);
                      for (int64_t j = 0; j < n; ++j)
                        acc[j] += cast_value<Acc>(load_value(typed + j));
                      return;
                    }
                    for (int64_t j = 0; j < n; ++j) {
                      acc[j * acc_step] += cast_value<Acc>(
                          load_value(reinterpret_cast<const T*>(row.ptrs[0] + j * row.strides[0])));
                    }
                  });
}

// Writes the dense accumulator (row-major over out's sizes) into out, rounding once.
template <typename Value>
void store_dense(const TensorView& out, const Value* values) {
  int64_t dense_strides[kMaxDims];
  int64_t step = 1;
  for (int d = out.ndim - 1; d >= 0; --d) {
    dense_strides[d] = step;
    step *= out.sizes[d];
  }
  const std::array<char*, 2> bases = {static_cast<char*>(out.data),
                                      reinterpret_cast<char*>(const_cast<Value*>(values))};
  for_each_row<2>(out.ndim, out.sizes, bases, {out.strides, dense_strides},
                  {element_size(out.dtype), sizeof(Value)}, LoopOrder::kRowMajor,
                  [&](const RowPointers<2>& row, int64_t n) {
                    // Row-major order keeps the dense operand's row stride at one element.
                    store_row<Value>(row.ptrs[0], row.strides[0], out.dtype,
                                     reinterpret_cast<const Value*>(row.ptrs[1]), n);
                  });
}

template <typename Acc>
void reduce_with(ReduceOp op, const TensorView& out, const TensorView& in, const bool* reduced,
                 int64_t reduced_count) {
  std::vector<Acc> accumulator(static_cast<size_t>(out.numel()), Acc{0});
  int64_t acc_strides[kMaxDims];
  int64_t step = 1;
  for (int d = out.ndim - 1; d >= 0; --d) {
    acc_strides[d] = reduced[d] ? 0 : step;
    step *= out.sizes[d];
  }
  if (in.numel() > 0) {
    visit_dtype(in.dtype, [&](auto tag) {
      accumulate_input<Acc, typename decltype(tag)::type>(in, accumulator.data(), acc_strides);
    });
  }
  if (op == ReduceOp::Sum) {
    store_dense<Acc>(out, accumulator.data());
    return;
  }
  // Mean of an empty reduction is 0/0 = NaN, as in PyTorch.
  std::vector<double> means(accumulator.size());
  for (size_t j = 0; j < accumulator.size(); ++j) {
    means[j] = static_cast<double>(accumulator[j]) / static_cast<double>(reduced_count);
  }
  store_dense<double>(out, means.data());
}

}  // namespace

void reduce(ReduceOp op, const TensorView& out, const TensorView& in, uint32_t reduce_dims) {
  if (out.ndim != in.ndim) {
    throw std::invalid_argument("openneuron kernels: reduce() needs out with in's ndim");
  }
  bool reduced[kMaxDims] = {};
  int64_t reduced_count = 1;
  for (int d = 0; d < in.ndim; ++d) {
    reduced[d] = ((reduce_dims >> d) & 1u) != 0 || (out.sizes[d] == 1 && in.sizes[d] != 1);
    if (reduced[d]) {
      if (out.sizes[d] != 1) {
        throw std::invalid_argument(
            "openneuron kernels: reduce() out must have size 1 on reduced dims");
      }
      reduced_count *= in.sizes[d];
    } else if (out.sizes[d] != in.sizes[d]) {
      throw std::invalid_argument("openneuron kernels: reduce() out size mismatch on a kept dim");
    }
  }
  if (out.numel() == 0) return;
  if (is_floating(in.dtype) || is_floating(out.dtype)) {
    reduce_with<double>(op, out, in, reduced, reduced_count);
  } else {
    reduce_with<int64_t>(op, out, in, reduced, reduced_count);
  }
}

}  // namespace openneuron::kernels
