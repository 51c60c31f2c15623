// Scans walk every line along `dim`; lines are visited as rows of neighbours so that, when
// `dim` is outer in memory, each step along it reads and writes a contiguous row.
#include "kernels/reduce/scan.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "kernels/core/element_types.h"
#include "kernels/core/row_io.h"
#include "kernels/core/strided_loop.h"

namespace openneuron::kernels {
namespace {

// log(e^x + e^running) as the CPU's logcumsumexp steps: NaN propagates, and equal infinities
// (the identity -inf included) are kept rather than turned into NaN.
template <typename Acc>
Acc log_add_exp(Acc x, Acc running) {
  if constexpr (std::is_floating_point_v<Acc>) {
    const Acc low = std::isnan(running) ? running : std::min(x, running);
    const Acc high = std::isnan(running) ? running : std::max(x, running);
    if (low != high || std::isfinite(low)) return std::log1p(std::exp(low - high)) + high;
    return x;
  } else {
    throw std::invalid_argument("openneuron kernels: logcumsumexp needs a floating dtype");
  }
}

template <typename Acc>
Acc scan_step(ScanOp op, Acc running, Acc v) {
  switch (op) {
    case ScanOp::Sum:
      return running + v;
    case ScanOp::Prod:
      return running * v;
    default:
      return log_add_exp(v, running);
  }
}

template <typename Acc>
Acc scan_identity(ScanOp op) {
  if (op == ScanOp::Sum) return Acc{0};
  if (op == ScanOp::Prod) return Acc{1};
  if constexpr (std::is_floating_point_v<Acc>) return -std::numeric_limits<Acc>::infinity();
  return Acc{0};
}

template <typename Acc, typename In, typename Out>
void scan_typed(ScanOp op, const TensorView& out, const TensorView& in, int dim) {
  const int64_t length = in.sizes[dim];
  const int64_t in_step = in.strides[dim];
  const int64_t out_step = out.strides[dim];
  // Iterate the line starts: every dim but `dim`.
  int64_t sizes[kMaxDims];
  for (int d = 0; d < in.ndim; ++d) sizes[d] = d == dim ? 1 : in.sizes[d];
  const std::array<char*, 2> bases = {static_cast<char*>(in.data), static_cast<char*>(out.data)};
  std::vector<Acc> running;
  for_each_row<2>(in.ndim, sizes, bases, {in.strides, out.strides}, {sizeof(In), sizeof(Out)},
                  LoopOrder::kFirstOperandMemory, [&](const RowPointers<2>& row, int64_t n) {
                    const In* src = reinterpret_cast<const In*>(row.ptrs[0]);
                    Out* dst = reinterpret_cast<Out*>(row.ptrs[1]);
                    const int64_t src_lane = row.strides[0] / static_cast<int64_t>(sizeof(In));
                    const int64_t dst_lane = row.strides[1] / static_cast<int64_t>(sizeof(Out));
                    const Acc identity = scan_identity<Acc>(op);
                    if (n == 1 || std::llabs(in_step) < std::llabs(src_lane)) {
                      // Lines are contiguous-ish: scan each line in turn.
                      for (int64_t lane = 0; lane < n; ++lane) {
                        Acc acc = identity;
                        const In* s = src + lane * src_lane;
                        Out* o = dst + lane * dst_lane;
                        for (int64_t i = 0; i < length; ++i) {
                          const Acc v = cast_value<Acc>(load_value(&s[i * in_step]));
                          acc = scan_step(op, acc, v);
                          o[i * out_step] = cast_value<Out>(acc);
                        }
                      }
                      return;
                    }
                    running.assign(static_cast<size_t>(n), identity);
                    for (int64_t i = 0; i < length; ++i) {
                      const In* s = src + i * in_step;
                      Out* o = dst + i * out_step;
                      if (op == ScanOp::Sum) {
                        for (int64_t lane = 0; lane < n; ++lane) {
                          running[lane] += cast_value<Acc>(load_value(&s[lane * src_lane]));
                          o[lane * dst_lane] = cast_value<Out>(running[lane]);
                        }
                      } else {
                        for (int64_t lane = 0; lane < n; ++lane) {
                          running[lane] = scan_step(
                              op, running[lane], cast_value<Acc>(load_value(&s[lane * src_lane])));
                          o[lane * dst_lane] = cast_value<Out>(running[lane]);
                        }
                      }
                    }
                  });
}

}  // namespace

void scan(ScanOp op, const TensorView& out, const TensorView& in, int dim) {
  if (out.ndim != in.ndim || dim < 0 || (in.ndim > 0 && dim >= in.ndim)) {
    throw std::invalid_argument("openneuron kernels: scan() needs matching ndim and a valid dim");
  }
  if (in.numel() == 0) return;
  if (in.ndim == 0) {
    // A 0-dim scan is a copy.
    TensorView in1 = in, out1 = out;
    in1.ndim = out1.ndim = 1;
    in1.sizes[0] = out1.sizes[0] = 1;
    in1.strides[0] = out1.strides[0] = 1;
    scan(op, out1, in1, 0);
    return;
  }
  visit_dtype(in.dtype, [&](auto in_tag) {
    using In = typename decltype(in_tag)::type;
    visit_dtype(out.dtype, [&](auto out_tag) {
      using Out = typename decltype(out_tag)::type;
      if (is_floating(in.dtype) || is_floating(out.dtype)) {
        scan_typed<double, In, Out>(op, out, in, dim);
      } else {
        scan_typed<int64_t, In, Out>(op, out, in, dim);
      }
    });
  });
}

}  // namespace openneuron::kernels
