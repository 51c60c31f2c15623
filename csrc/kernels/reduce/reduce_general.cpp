// General reductions: each output's reduced elements are streamed in row-major order through
// a small chunk buffer of double (floats) or int64 (integers) into a per-op state. Outputs are
// processed in blocks (16 neighbours at once when the reduced dims are outer in memory, so
// reads stay contiguous) and blocks run in parallel; a single large contiguous reduction is
// split across threads and its partial states merged in index order.
#include "kernels/reduce/reduce_general.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "kernels/core/element_types.h"
#include "kernels/core/row_io.h"
#include "kernels/core/strided_loop.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {
namespace {

constexpr int64_t kChunk = 512;
// Column mode: 256 neighbouring outputs advance together through short chunks, so every
// reduced step reads 256 contiguous elements (page- and line-friendly).
constexpr int kColumnBlock = 256;
constexpr int64_t kColumnChunk = 64;

using Op = GeneralReduceOp;

int pass_count(Op op) { return (op == Op::Var || op == Op::LogSumExp) ? 2 : 1; }

bool is_max_like(Op op) { return op == Op::Max || op == Op::ArgMax; }
bool is_extreme(Op op) {
  return op == Op::Max || op == Op::Min || op == Op::ArgMax || op == Op::ArgMin;
}

template <typename C>
bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) return std::isnan(v);
  return false;
}

// Running state of one output. `value` holds extremes/products, `sum` holds sums.
template <typename C>
struct State {
  C value{};
  int64_t index = -1;
  bool nan = false;
  double sum = 0;
  bool flag = false;
};

template <typename C>
State<C> initial_state(Op op, const GeneralReduceParams& params, int pass) {
  State<C> s;
  if (op == Op::Prod) s.value = C{1};
  if (op == Op::All) s.flag = true;
  if (op == Op::LogSumExp && pass == 0) {
    if constexpr (std::is_floating_point_v<C>) s.value = -std::numeric_limits<C>::infinity();
  }
  if (op == Op::Norm && std::isinf(params.p) && params.p < 0) {
    if constexpr (std::is_floating_point_v<C>) s.value = std::numeric_limits<C>::infinity();
  }
  return s;
}

// NaN-propagating max/min used by logsumexp's pivot and the infinity norms.
inline double nan_max(double a, double b) { return (std::isnan(a) || a > b) ? a : b; }
inline double nan_min(double a, double b) { return (std::isnan(a) || a < b) ? a : b; }

template <typename C>
void consume(Op op, const GeneralReduceParams& params, int pass, double pivot, State<C>& s,
             const C* x, int64_t n, int64_t base) {
  if (is_extreme(op)) {
    if (s.nan || n == 0) return;
    const bool want_max = is_max_like(op);
    if constexpr (std::is_floating_point_v<C>) {
      // Branch-free scans first: any NaN wins at its first position.
      bool has_nan = false;
      for (int64_t j = 0; j < n; ++j) has_nan |= (x[j] != x[j]);
      if (has_nan) {
        int64_t j = 0;
        while (!(x[j] != x[j])) ++j;
        s.value = x[j];
        s.index = base + j;
        s.nan = true;
        return;
      }
    }
    C best = x[0];
    if (want_max) {
      for (int64_t j = 1; j < n; ++j) best = x[j] > best ? x[j] : best;
    } else {
      for (int64_t j = 1; j < n; ++j) best = x[j] < best ? x[j] : best;
    }
    if (s.index >= 0 && !(want_max ? best > s.value : best < s.value)) return;
    int64_t j = 0;
    while (x[j] != best) ++j;
    s.value = best;
    s.index = base + j;
    return;
  }
  switch (op) {
    case Op::Prod: {
      C product = s.value;
      for (int64_t j = 0; j < n; ++j) product *= x[j];
      s.value = product;
      return;
    }
    case Op::All: {
      bool all = s.flag;
      for (int64_t j = 0; j < n; ++j) all = all && (x[j] != C{0});
      s.flag = all;
      return;
    }
    case Op::Any: {
      bool any = s.flag;
      for (int64_t j = 0; j < n; ++j) any = any || (x[j] != C{0});
      s.flag = any;
      return;
    }
    case Op::BitwiseXor:
      if constexpr (std::is_integral_v<C>) {
        C bits = s.value;
        for (int64_t j = 0; j < n; ++j) bits ^= x[j];
        s.value = bits;
        return;
      }
      throw std::invalid_argument("openneuron kernels: BitwiseXor reduces integers only");
    default:
      break;
  }
  if constexpr (std::is_floating_point_v<C>) {
    double acc = 0;
    // Eight independent partial sums let the loop vectorise without reassociation flags.
    auto lanes_sum = [&](auto&& term) {
      double partial[8] = {};
      int64_t j = 0;
      for (; j + 8 <= n; j += 8) {
        for (int lane = 0; lane < 8; ++lane) partial[lane] += term(x[j + lane]);
      }
      double total = 0;
      for (; j < n; ++j) total += term(x[j]);
      for (int lane = 0; lane < 8; ++lane) total += partial[lane];
      return total;
    };
    switch (op) {
      case Op::Var:
        if (pass == 0) {
          acc = lanes_sum([](double v) { return v; });
        } else {
          acc = lanes_sum([pivot](double v) { return (v - pivot) * (v - pivot); });
        }
        s.sum += acc;
        return;
      case Op::LogSumExp:
        if (pass == 0) {
          double m = s.value;
          for (int64_t j = 0; j < n; ++j) m = nan_max(m, x[j]);
          s.value = m;
        } else {
          for (int64_t j = 0; j < n; ++j) acc += std::exp(x[j] - pivot);
          s.sum += acc;
        }
        return;
      case Op::Norm: {
        const double p = params.p;
        if (std::isinf(p)) {
          double m = s.value;
          if (p > 0) {
            for (int64_t j = 0; j < n; ++j) m = nan_max(m, std::fabs(x[j]));
          } else {
            for (int64_t j = 0; j < n; ++j) m = nan_min(m, std::fabs(x[j]));
          }
          s.value = m;
        } else if (p == 2) {
          acc = lanes_sum([](double v) { return v * v; });
        } else if (p == 1) {
          acc = lanes_sum([](double v) { return std::fabs(v); });
        } else if (p == 0) {
          for (int64_t j = 0; j < n; ++j) acc += (x[j] != 0) ? 1.0 : 0.0;
        } else {
          for (int64_t j = 0; j < n; ++j) acc += std::pow(std::fabs(x[j]), p);
        }
        s.sum += acc;
        return;
      }
      default:
        break;
    }
  }
  throw std::invalid_argument("openneuron kernels: reduce_general op needs a floating input");
}

// Folds `later` (covering higher indices) into `s`.
template <typename C>
void merge(Op op, const GeneralReduceParams& params, int pass, State<C>& s, const State<C>& later) {
  if (is_extreme(op)) {
    if (s.nan || later.index < 0) return;
    const bool better = later.nan || s.index < 0 ||
                        (is_max_like(op) ? later.value > s.value : later.value < s.value);
    if (better) s = later;
    return;
  }
  s.sum += later.sum;
  switch (op) {
    case Op::Prod:
      s.value *= later.value;
      break;
    case Op::All:
      s.flag = s.flag && later.flag;
      break;
    case Op::Any:
      s.flag = s.flag || later.flag;
      break;
    case Op::BitwiseXor:
      if constexpr (std::is_integral_v<C>) s.value ^= later.value;
      break;
    case Op::LogSumExp:
      if (pass == 0) s.value = static_cast<C>(nan_max(s.value, later.value));
      break;
    case Op::Norm:
      if (std::isinf(params.p)) {
        s.value = static_cast<C>(params.p > 0 ? nan_max(s.value, later.value)
                                              : nan_min(s.value, later.value));
      }
      break;
    default:
      break;
  }
}

// The value carried from pass 0 into pass 1 (the mean for Var, the finite max for logsumexp).
template <typename C>
double pivot_after_first_pass(Op op, const State<C>& s, int64_t count) {
  if (op == Op::Var) return s.sum / static_cast<double>(count);
  const double m = static_cast<double>(s.value);
  return std::isinf(m) ? 0.0 : m;
}

template <typename V>
void store_value(const TensorView& out, int64_t offset, V value) {
  visit_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    static_cast<T*>(out.data)[offset] = cast_value<T>(value);
  });
}

template <typename C>
void store_result(Op op, const GeneralReduceParams& params, const State<C>& s, double pivot,
                  int64_t count, const TensorView& primary, int64_t primary_offset,
                  const TensorView& secondary, int64_t secondary_offset) {
  const bool has_secondary = secondary.data != nullptr;
  switch (op) {
    case Op::Max:
    case Op::Min:
      store_value(primary, primary_offset, s.value);
      if (has_secondary) store_value(secondary, secondary_offset, s.index);
      return;
    case Op::ArgMax:
    case Op::ArgMin:
      store_value(primary, primary_offset, s.index);
      return;
    case Op::Prod:
    case Op::BitwiseXor:
      store_value(primary, primary_offset, s.value);
      return;
    case Op::All:
    case Op::Any:
      store_value(primary, primary_offset, s.flag);
      return;
    case Op::Var: {
      const double divisor = std::max(static_cast<double>(count) - params.correction, 0.0);
      const double var = s.sum / divisor;
      store_value(primary, primary_offset, params.take_sqrt ? std::sqrt(var) : var);
      if (has_secondary) store_value(secondary, secondary_offset, pivot);
      return;
    }
    case Op::LogSumExp:
      store_value(primary, primary_offset, std::log(s.sum) + pivot);
      return;
    case Op::Norm: {
      const double p = params.p;
      double norm;
      if (std::isinf(p)) {
        norm = static_cast<double>(s.value);
      } else if (p == 2) {
        norm = std::sqrt(s.sum);
      } else if (p == 1 || p == 0) {
        norm = s.sum;
      } else {
        norm = std::pow(s.sum, 1.0 / p);
      }
      store_value(primary, primary_offset, norm);
      return;
    }
  }
}

struct Geometry {
  int kept_ndim = 0;
  int64_t kept_sizes[kMaxDims];
  int64_t kept_in_strides[kMaxDims];
  int64_t kept_primary_strides[kMaxDims];
  int64_t kept_secondary_strides[kMaxDims];
  int reduced_ndim = 0;
  int64_t reduced_sizes[kMaxDims];
  int64_t reduced_strides[kMaxDims];
  int64_t outputs = 1;
  int64_t count = 1;  // elements per output
};

template <typename C, typename T>
class Reducer {
 public:
  Reducer(Op op, const GeneralReduceParams& params, const TensorView& primary,
          const TensorView& secondary, const TensorView& in, const Geometry& g)
      : op_(op), params_(params), primary_(primary), secondary_(secondary), in_(in), g_(g) {}

  void run() {
    if (g_.outputs == 1 && g_.count >= (int64_t{1} << 17) && reduced_is_single_row()) {
      run_split_row();
      return;
    }
    const int last = g_.kept_ndim - 1;
    int block = 1;
    if (last >= 0 && g_.reduced_ndim > 0) {
      int64_t min_reduced_stride = std::numeric_limits<int64_t>::max();
      for (int d = 0; d < g_.reduced_ndim; ++d) {
        min_reduced_stride =
            std::min<int64_t>(min_reduced_stride, std::llabs(g_.reduced_strides[d]));
      }
      if (static_cast<int64_t>(std::llabs(g_.kept_in_strides[last])) < min_reduced_stride)
        block = kColumnBlock;
    }
    const int64_t row_length = last >= 0 ? g_.kept_sizes[last] : 1;
    const int64_t blocks_per_row = (row_length + block - 1) / block;
    const int64_t total_blocks = (g_.outputs / std::max<int64_t>(row_length, 1)) * blocks_per_row;
    const int64_t grain = std::max<int64_t>(1, 32768 / (g_.count * block + 1));
    const int64_t chunk = block > 1 ? kColumnChunk : kChunk;
    parallel_for(0, total_blocks, grain, [&](int64_t begin, int64_t end) {
      std::vector<C> buffer(static_cast<size_t>(chunk * block));
      std::vector<State<C>> states(static_cast<size_t>(block));
      std::vector<double> pivots(static_cast<size_t>(block));
      for (int64_t b = begin; b < end; ++b) {
        const int64_t outer = b / blocks_per_row;
        const int64_t first = (b % blocks_per_row) * block;
        const int width = static_cast<int>(std::min<int64_t>(block, row_length - first));
        reduce_block(outer, first, width, chunk, buffer.data(), states.data(), pivots.data());
      }
    });
  }

 private:
  bool reduced_is_single_row() const {
    for (int d = 0; d + 1 < g_.reduced_ndim; ++d) {
      if (g_.reduced_strides[d] != g_.reduced_strides[d + 1] * g_.reduced_sizes[d + 1])
        return false;
    }
    return true;
  }

  // One output holding a huge flat row: pieces run in parallel, states merge in order.
  void run_split_row() {
    const int64_t stride = g_.reduced_ndim > 0 ? g_.reduced_strides[g_.reduced_ndim - 1] : 1;
    const int64_t pieces = std::min<int64_t>(64, g_.count / 4096);
    const T* data = static_cast<const T*>(in_.data);
    double pivot = 0;
    State<C> total;
    for (int pass = 0; pass < pass_count(op_); ++pass) {
      std::vector<State<C>> partial(static_cast<size_t>(pieces),
                                    initial_state<C>(op_, params_, pass));
      parallel_for(0, pieces, 1, [&](int64_t begin, int64_t end) {
        std::vector<C> buffer(kChunk);
        for (int64_t piece = begin; piece < end; ++piece) {
          const int64_t lo = g_.count * piece / pieces;
          const int64_t hi = g_.count * (piece + 1) / pieces;
          for (int64_t j = lo; j < hi; j += kChunk) {
            const int64_t n = std::min(kChunk, hi - j);
            if (stride == 1) {
              for (int64_t k = 0; k < n; ++k) buffer[k] = cast_value<C>(load_value(&data[j + k]));
            } else {
              for (int64_t k = 0; k < n; ++k)
                buffer[k] = cast_value<C>(load_value(&data[(j + k) * stride]));
            }
            consume<C>(op_, params_, pass, pivot, partial[piece], buffer.data(), n, j);
          }
        }
      });
      total = partial[0];
      for (int64_t piece = 1; piece < pieces; ++piece)
        merge<C>(op_, params_, pass, total, partial[piece]);
      if (pass + 1 < pass_count(op_)) pivot = pivot_after_first_pass<C>(op_, total, g_.count);
    }
    store_result<C>(op_, params_, total, pivot, g_.count, primary_, 0, secondary_, 0);
  }

  // Reduces outputs first .. first+width-1 along the last kept dim of outer row `outer`.
  void reduce_block(int64_t outer, int64_t first, int width, int64_t chunk, C* buffer,
                    State<C>* states, double* pivots) {
    int64_t in_offset = 0, primary_offset = 0, secondary_offset = 0;
    int64_t rest = outer;
    const int last = g_.kept_ndim - 1;
    for (int d = last - 1; d >= 0; --d) {
      const int64_t i = rest % g_.kept_sizes[d];
      rest /= g_.kept_sizes[d];
      in_offset += i * g_.kept_in_strides[d];
      primary_offset += i * g_.kept_primary_strides[d];
      secondary_offset += i * g_.kept_secondary_strides[d];
    }
    if (last >= 0) {
      in_offset += first * g_.kept_in_strides[last];
      primary_offset += first * g_.kept_primary_strides[last];
      secondary_offset += first * g_.kept_secondary_strides[last];
    }
    const int64_t lane_stride = last >= 0 ? g_.kept_in_strides[last] : 0;
    for (int w = 0; w < width; ++w) pivots[w] = 0;
    const T* base = static_cast<const T*>(in_.data) + in_offset;
    if (width > 1 && lanes_direct()) {
      reduce_lanes(base, lane_stride, width, states, pivots);
    } else {
      reduce_chunked(base, lane_stride, width, chunk, buffer, states, pivots);
    }
    for (int w = 0; w < width; ++w) {
      store_result<C>(op_, params_, states[w], pivots[w], g_.count, primary_,
                      primary_offset + w * (last >= 0 ? g_.kept_primary_strides[last] : 0),
                      secondary_,
                      secondary_offset + w * (last >= 0 ? g_.kept_secondary_strides[last] : 0));
    }
  }

  // Ops whose column-mode update is a simple per-lane step (no chunk buffering needed).
  bool lanes_direct() const {
    if (is_extreme(op_)) return true;
    if constexpr (std::is_floating_point_v<C>) {
      return op_ == Op::Var || (op_ == Op::Norm && (params_.p == 1 || params_.p == 2));
    }
    return false;
  }

  // Visits the reduced elements in row-major order; fn(row pointer of lane 0, k) per element.
  template <typename Fn>
  void for_each_reduced(const T* base, Fn&& fn) {
    int64_t k = 0;
    const std::array<char*, 1> bases = {reinterpret_cast<char*>(const_cast<T*>(base))};
    const std::array<const int64_t*, 1> strides = {g_.reduced_strides};
    for_each_row<1>(g_.reduced_ndim, g_.reduced_sizes, bases, strides, {sizeof(T)},
                    LoopOrder::kRowMajor, [&](const RowPointers<1>& row, int64_t n) {
                      const T* p = reinterpret_cast<const T*>(row.ptrs[0]);
                      const int64_t step = row.strides[0] / static_cast<int64_t>(sizeof(T));
                      for (int64_t j = 0; j < n; ++j, ++k) fn(p + j * step, k);
                    });
  }

  // Column mode: `width` neighbouring outputs advance together, one reduced step at a time,
  // with branch-free lane loops over contiguous reads.
  void reduce_lanes(const T* base, int64_t lane_stride, int width, State<C>* states,
                    double* pivots) {
    std::vector<C> lane(static_cast<size_t>(width));
    auto load = [&](const T* src) {
      if (lane_stride == 1) {
        for (int w = 0; w < width; ++w) lane[w] = cast_value<C>(load_value(&src[w]));
      } else {
        for (int w = 0; w < width; ++w) lane[w] = cast_value<C>(load_value(&src[w * lane_stride]));
      }
    };
    if (is_extreme(op_)) {
      const bool want_max = is_max_like(op_);
      const bool need_index = secondary_.data != nullptr || op_ == Op::ArgMax || op_ == Op::ArgMin;
      if constexpr (std::is_same_v<T, float>) {
        if (!need_index) {
          // float amax/amin compare exactly in float: skip widening to double.
          std::vector<float> best(static_cast<size_t>(width));
          for_each_reduced(base, [&](const T* src, int64_t k) {
            if (k == 0) {
              for (int w = 0; w < width; ++w) best[w] = src[w * lane_stride];
              return;
            }
            if (lane_stride == 1) {
              for (int w = 0; w < width; ++w) {
                const float v = src[w], b = best[w];
                const float r = want_max ? (v > b ? v : b) : (v < b ? v : b);
                best[w] = (b != b) ? b : ((v != v) ? v : r);
              }
            } else {
              for (int w = 0; w < width; ++w) {
                const float v = src[w * lane_stride], b = best[w];
                const float r = want_max ? (v > b ? v : b) : (v < b ? v : b);
                best[w] = (b != b) ? b : ((v != v) ? v : r);
              }
            }
          });
          for (int w = 0; w < width; ++w) {
            states[w] = State<C>{};
            states[w].value = best[w];
          }
          return;
        }
      }
      std::vector<C> best(static_cast<size_t>(width));
      std::vector<int64_t> best_index(static_cast<size_t>(width), 0);
      for_each_reduced(base, [&](const T* src, int64_t k) {
        load(src);
        if (k == 0) {
          for (int w = 0; w < width; ++w) best[w] = lane[w];
          return;
        }
        if (!need_index) {
          // amax/amin: values only, a plain NaN-propagating max/min the compiler vectorises.
          for (int w = 0; w < width; ++w) {
            const C v = lane[w], b = best[w];
            C r = want_max ? (v > b ? v : b) : (v < b ? v : b);
            if constexpr (std::is_floating_point_v<C>) r = (b != b) ? b : ((v != v) ? v : r);
            best[w] = r;
          }
          return;
        }
        for (int w = 0; w < width; ++w) {
          const C v = lane[w], b = best[w];
          bool take = want_max ? v > b : v < b;
          // The first NaN wins and then sticks.
          if constexpr (std::is_floating_point_v<C>) take = (b == b) && (take || v != v);
          best[w] = take ? v : b;
          best_index[w] = take ? k : best_index[w];
        }
      });
      for (int w = 0; w < width; ++w) {
        states[w] = State<C>{};
        states[w].value = best[w];
        states[w].index = best_index[w];
      }
      return;
    }
    if constexpr (std::is_floating_point_v<C>) {
      std::vector<double> acc(static_cast<size_t>(width), 0.0);
      if (op_ == Op::Var) {
        for_each_reduced(base, [&](const T* src, int64_t) {
          load(src);
          for (int w = 0; w < width; ++w) acc[w] += lane[w];
        });
        for (int w = 0; w < width; ++w) pivots[w] = acc[w] / static_cast<double>(g_.count);
        std::fill(acc.begin(), acc.end(), 0.0);
        for_each_reduced(base, [&](const T* src, int64_t) {
          load(src);
          for (int w = 0; w < width; ++w) acc[w] += (lane[w] - pivots[w]) * (lane[w] - pivots[w]);
        });
      } else if (params_.p == 2) {
        for_each_reduced(base, [&](const T* src, int64_t) {
          load(src);
          for (int w = 0; w < width; ++w) acc[w] += lane[w] * lane[w];
        });
      } else {
        for_each_reduced(base, [&](const T* src, int64_t) {
          load(src);
          for (int w = 0; w < width; ++w) acc[w] += std::fabs(lane[w]);
        });
      }
      for (int w = 0; w < width; ++w) {
        states[w] = State<C>{};
        states[w].sum = acc[w];
      }
    }
  }

  void reduce_chunked(const T* base, int64_t lane_stride, int width, int64_t chunk, C* buffer,
                      State<C>* states, double* pivots) {
    for (int pass = 0; pass < pass_count(op_); ++pass) {
      for (int w = 0; w < width; ++w) states[w] = initial_state<C>(op_, params_, pass);
      int64_t filled = 0;
      int64_t consumed = 0;
      auto flush = [&] {
        for (int w = 0; w < width; ++w) {
          consume<C>(op_, params_, pass, pivots[w], states[w], buffer + w * chunk, filled,
                     consumed);
        }
        consumed += filled;
        filled = 0;
      };
      const std::array<char*, 1> bases = {reinterpret_cast<char*>(const_cast<T*>(base))};
      const std::array<const int64_t*, 1> strides = {g_.reduced_strides};
      for_each_row<1>(g_.reduced_ndim, g_.reduced_sizes, bases, strides, {sizeof(T)},
                      LoopOrder::kRowMajor, [&](const RowPointers<1>& row, int64_t n) {
                        const T* p = reinterpret_cast<const T*>(row.ptrs[0]);
                        const int64_t step = row.strides[0] / static_cast<int64_t>(sizeof(T));
                        int64_t j = 0;
                        while (j < n) {
                          const int64_t piece = std::min(n - j, chunk - filled);
                          if (width == 1) {
                            C* dst = buffer + filled;
                            const T* src = p + j * step;
                            if (step == 1) {
                              for (int64_t k = 0; k < piece; ++k)
                                dst[k] = cast_value<C>(load_value(&src[k]));
                            } else {
                              for (int64_t k = 0; k < piece; ++k)
                                dst[k] = cast_value<C>(load_value(&src[k * step]));
                            }
                          } else {
                            for (int64_t k = 0; k < piece; ++k) {
                              const T* src = p + (j + k) * step;
                              C* dst = buffer + filled + k;
                              if (lane_stride == 1) {
                                for (int w = 0; w < width; ++w)
                                  dst[w * chunk] = cast_value<C>(load_value(&src[w]));
                              } else {
                                for (int w = 0; w < width; ++w) {
                                  dst[w * chunk] = cast_value<C>(load_value(&src[w * lane_stride]));
                                }
                              }
                            }
                          }
                          filled += piece;
                          j += piece;
                          if (filled == chunk) flush();
                        }
                      });
      if (filled > 0) flush();
      if (pass + 1 < pass_count(op_)) {
        for (int w = 0; w < width; ++w)
          pivots[w] = pivot_after_first_pass<C>(op_, states[w], g_.count);
      }
    }
  }

  Op op_;
  GeneralReduceParams params_;
  TensorView primary_;
  TensorView secondary_;
  TensorView in_;
  const Geometry& g_;
};

}  // namespace

void reduce_general(GeneralReduceOp op, const GeneralReduceParams& params,
                    const TensorView& primary, const TensorView& secondary, const TensorView& in,
                    uint32_t reduce_dims) {
  if (primary.ndim != in.ndim || (secondary.data != nullptr && secondary.ndim != in.ndim)) {
    throw std::invalid_argument(
        "openneuron kernels: reduce_general() needs outputs with in's ndim");
  }
  Geometry g;
  for (int d = 0; d < in.ndim; ++d) {
    if ((reduce_dims >> d) & 1u) {
      if (primary.sizes[d] != 1) {
        throw std::invalid_argument(
            "openneuron kernels: reduce_general() out must have size 1 on reduced dims");
      }
      g.reduced_sizes[g.reduced_ndim] = in.sizes[d];
      g.reduced_strides[g.reduced_ndim] = in.strides[d];
      ++g.reduced_ndim;
      g.count *= in.sizes[d];
    } else {
      if (primary.sizes[d] != in.sizes[d]) {
        throw std::invalid_argument(
            "openneuron kernels: reduce_general() out size mismatch on a kept dim");
      }
      g.kept_sizes[g.kept_ndim] = in.sizes[d];
      g.kept_in_strides[g.kept_ndim] = in.strides[d];
      g.kept_primary_strides[g.kept_ndim] = primary.strides[d];
      g.kept_secondary_strides[g.kept_ndim] = secondary.data != nullptr ? secondary.strides[d] : 0;
      ++g.kept_ndim;
      g.outputs *= in.sizes[d];
    }
  }
  if (g.outputs == 0) return;
  visit_dtype(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (is_floating(in.dtype)) {
      Reducer<double, T>(op, params, primary, secondary, in, g).run();
    } else {
      Reducer<int64_t, T>(op, params, primary, secondary, in, g).run();
    }
  });
}

}  // namespace openneuron::kernels
