// Bernoulli, dropout, integer, permutation, exponential, moment-wise normal and multinomial
// draws on the Philox stream; values depend only on (seed, offset, element index).
#include "kernels/random/random_discrete.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/core/element_types.h"
#include "kernels/core/strided_loop.h"
#include "kernels/random/philox.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {
namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;
constexpr int64_t kParallelGrain = 16384;

// 24 random bits scaled into [0, 1): exactly representable in fp32 (as random.cpp does).
inline float unit_float(uint32_t bits) {
  return static_cast<float>(bits >> 8) * static_cast<float>(1.0 / 16777216.0);
}

// 53 random bits scaled into [0, 1).
inline double unit_double(uint64_t bits) {
  return static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);
}

// Caches the Philox block of the most recent counter position.
class BlockCache {
 public:
  BlockCache(uint64_t seed, uint64_t offset) : seed_(seed), offset_(offset) {}

  const PhiloxBlock& at(uint64_t position) {
    if (!valid_ || position != cached_) {
      block_ = philox_block(seed_, offset_ + position);
      cached_ = position;
      valid_ = true;
    }
    return block_;
  }
  // 32-bit draw i: lane i % 4 of block i / 4.
  uint32_t draw32(uint64_t i) { return at(i >> 2)[i & 3]; }
  // 64-bit draw i: lanes 2(i % 2) (low) and 2(i % 2) + 1 (high) of block i / 2.
  uint64_t draw64(uint64_t i) {
    const PhiloxBlock& block = at(i >> 1);
    const unsigned lane = static_cast<unsigned>(i & 1) * 2;
    return static_cast<uint64_t>(block[lane]) | (static_cast<uint64_t>(block[lane + 1]) << 32);
  }

 private:
  uint64_t seed_;
  uint64_t offset_;
  bool valid_ = false;
  uint64_t cached_ = 0;
  PhiloxBlock block_{};
};

bool all_contiguous(const TensorView* const* views, size_t n) {
  for (size_t k = 0; k < n; ++k) {
    if (!views[k]->is_contiguous()) return false;
  }
  return true;
}

// Calls fn(cache, ptrs, index) for every element of views[0]'s shape with its row-major
// index; dense operands run in parallel chunks (values depend only on the index).
template <size_t N, typename Fn>
void for_each_indexed(const std::array<const TensorView*, N>& views, uint64_t seed, uint64_t offset,
                      Fn&& fn) {
  const int64_t numel = views[0]->numel();
  if (numel == 0) return;
  if (all_contiguous(views.data(), N)) {
    std::array<size_t, N> element_sizes;
    for (size_t k = 0; k < N; ++k) element_sizes[k] = element_size(views[k]->dtype);
    parallel_for(0, numel, kParallelGrain, [&](int64_t begin, int64_t end) {
      BlockCache cache(seed, offset);
      std::array<char*, N> ptrs;
      for (int64_t i = begin; i < end; ++i) {
        for (size_t k = 0; k < N; ++k) {
          ptrs[k] = static_cast<char*>(views[k]->data) + i * static_cast<int64_t>(element_sizes[k]);
        }
        fn(cache, ptrs, static_cast<uint64_t>(i));
      }
    });
    return;
  }
  BlockCache cache(seed, offset);
  uint64_t index = 0;
  for_each_row<N>(views, LoopOrder::kRowMajor, [&](const RowPointers<N>& row, int64_t n) {
    std::array<char*, N> ptrs;
    for (int64_t j = 0; j < n; ++j) {
      for (size_t k = 0; k < N; ++k) ptrs[k] = row.ptrs[k] + j * row.strides[k];
      fn(cache, ptrs, index++);
    }
  });
}

void require_dtype(const TensorView& view, DType dtype, const char* op, const char* what) {
  if (view.dtype != dtype) {
    throw std::invalid_argument(std::string("openneuron kernels: ") + op + " needs " + what +
                                " of dtype " + dtype_name(dtype) + ", got " +
                                dtype_name(view.dtype));
  }
}

template <typename T>
T& element(char* ptr) {
  return *reinterpret_cast<T*>(ptr);
}

}  // namespace

uint64_t random_offset_increment_64(int64_t draws) {
  return draws <= 0 ? 0 : (static_cast<uint64_t>(draws) + 1) / 2;
}

void bernoulli_scalar(const TensorView& dst, uint64_t seed, uint64_t offset, double p) {
  const float threshold = static_cast<float>(p);
  visit_dtype(dst.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T one = cast_value<T>(int64_t{1});
    const T zero = cast_value<T>(int64_t{0});
    for_each_indexed<1>({&dst}, seed, offset, [&](BlockCache& cache, auto& ptrs, uint64_t i) {
      element<T>(ptrs[0]) = unit_float(cache.draw32(i)) < threshold ? one : zero;
    });
  });
}

void bernoulli_tensor(const TensorView& dst, const TensorView& probs, uint64_t seed,
                      uint64_t offset) {
  require_dtype(probs, DType::Float32, "bernoulli", "probabilities");
  visit_dtype(dst.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T one = cast_value<T>(int64_t{1});
    const T zero = cast_value<T>(int64_t{0});
    for_each_indexed<2>({&dst, &probs}, seed, offset,
                        [&](BlockCache& cache, auto& ptrs, uint64_t i) {
                          const float p = element<float>(ptrs[1]);
                          element<T>(ptrs[0]) = unit_float(cache.draw32(i)) < p ? one : zero;
                        });
  });
}

void dropout_forward(const TensorView& input, const TensorView& output, const TensorView& mask,
                     uint64_t seed, uint64_t offset, double p, double scale) {
  require_dtype(mask, DType::Bool, "dropout", "a mask");
  require_dtype(output, input.dtype, "dropout", "an output");
  const float drop_below = static_cast<float>(p);
  const float scale_f = static_cast<float>(scale);
  visit_floating_dtype(input.dtype, "dropout", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_indexed<3>({&input, &output, &mask}, seed, offset,
                        [&](BlockCache& cache, auto& ptrs, uint64_t i) {
                          const bool keep = unit_float(cache.draw32(i)) >= drop_below;
                          const float x = cast_value<float>(element<T>(ptrs[0]));
                          element<T>(ptrs[1]) = cast_value<T>(x * (keep ? scale_f : 0.0f));
                          element<bool>(ptrs[2]) = keep;
                        });
  });
}

void dropout_backward(const TensorView& grad_output, const TensorView& mask,
                      const TensorView& grad_input, double scale) {
  require_dtype(mask, DType::Bool, "dropout_backward", "a mask");
  require_dtype(grad_input, grad_output.dtype, "dropout_backward", "a grad_input");
  const float scale_f = static_cast<float>(scale);
  visit_floating_dtype(grad_output.dtype, "dropout_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_indexed<3>(
        {&grad_input, &grad_output, &mask}, 0, 0, [&](BlockCache&, auto& ptrs, uint64_t) {
          const float g = cast_value<float>(element<T>(ptrs[1]));
          element<T>(ptrs[0]) = cast_value<T>(g * (element<bool>(ptrs[2]) ? scale_f : 0.0f));
        });
  });
}

void random_integers(const TensorView& dst, uint64_t seed, uint64_t offset, int64_t low,
                     uint64_t range) {
  visit_dtype(dst.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_indexed<1>({&dst}, seed, offset, [&](BlockCache& cache, auto& ptrs, uint64_t i) {
      const uint64_t bits = cache.draw64(i);
      const uint64_t step = range == 0 ? bits : bits % range;
      element<T>(ptrs[0]) = cast_value<T>(static_cast<int64_t>(static_cast<uint64_t>(low) + step));
    });
  });
}

void random_permutation(const TensorView& dst, uint64_t seed, uint64_t offset) {
  if (dst.ndim != 1) throw std::invalid_argument("openneuron kernels: randperm needs a 1-D output");
  const int64_t n = dst.sizes[0];
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  BlockCache cache(seed, offset);
  for (int64_t k = n - 1; k > 0; --k) {
    const uint64_t pick =
        cache.draw64(static_cast<uint64_t>(n - 1 - k)) % static_cast<uint64_t>(k + 1);
    std::swap(order[k], order[pick]);
  }
  visit_dtype(dst.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    char* base = static_cast<char*>(dst.data);
    const int64_t stride_bytes = dst.strides[0] * static_cast<int64_t>(sizeof(T));
    for (int64_t k = 0; k < n; ++k) element<T>(base + k * stride_bytes) = cast_value<T>(order[k]);
  });
}

void exponential(const TensorView& dst, uint64_t seed, uint64_t offset, double lambda) {
  const float inverse_rate = static_cast<float>(1.0 / lambda);
  visit_floating_dtype(dst.dtype, "exponential", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_indexed<1>({&dst}, seed, offset, [&](BlockCache& cache, auto& ptrs, uint64_t i) {
      const float u = unit_float(cache.draw32(i));
      element<T>(ptrs[0]) = cast_value<T>(-std::log1p(-u) * inverse_rate);
    });
  });
}

void cauchy(const TensorView& dst, uint64_t seed, uint64_t offset, double median, double sigma) {
  visit_floating_dtype(dst.dtype, "cauchy", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_indexed<1>({&dst}, seed, offset, [&](BlockCache& cache, auto& ptrs, uint64_t i) {
      const double u = unit_float(cache.draw32(i));
      element<T>(ptrs[0]) = cast_value<T>(median + sigma * std::tan(M_PI * (u - 0.5)));
    });
  });
}

void geometric(const TensorView& dst, uint64_t seed, uint64_t offset, double p) {
  const double log_failure = std::log1p(-p);
  visit_dtype(dst.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_indexed<1>({&dst}, seed, offset, [&](BlockCache& cache, auto& ptrs, uint64_t i) {
      const double u = unit_float(cache.draw32(i));
      const double trials = std::ceil(std::log1p(-u) / log_failure);
      element<T>(ptrs[0]) = cast_value<T>(trials < 1 ? 1.0 : trials);
    });
  });
}

void normal_with_moments(const TensorView& dst, const TensorView* mean, double mean_scalar,
                         const TensorView* std, double std_scalar, uint64_t seed, uint64_t offset) {
  // A scalar moment becomes a 0-stride view of a local float, so one loop serves all forms.
  float mean_value = static_cast<float>(mean_scalar);
  float std_value = static_cast<float>(std_scalar);
  TensorView mean_view = dst;
  TensorView std_view = dst;
  if (mean != nullptr) {
    require_dtype(*mean, DType::Float32, "normal", "a mean");
    mean_view = *mean;
  } else {
    mean_view.data = &mean_value;
    mean_view.dtype = DType::Float32;
    for (int d = 0; d < dst.ndim; ++d) mean_view.strides[d] = 0;
  }
  if (std != nullptr) {
    require_dtype(*std, DType::Float32, "normal", "a std");
    std_view = *std;
  } else {
    std_view.data = &std_value;
    std_view.dtype = DType::Float32;
    for (int d = 0; d < dst.ndim; ++d) std_view.strides[d] = 0;
  }
  visit_floating_dtype(dst.dtype, "normal", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_indexed<3>(
        {&dst, &mean_view, &std_view}, seed, offset,
        [&](BlockCache& cache, auto& ptrs, uint64_t i) {
          // Elements 2j, 2j+1 are the cosine and sine halves of one Box-Muller.
          const PhiloxBlock& block = cache.at(i >> 2);
          const unsigned pair = static_cast<unsigned>(i & 2);
          const float u1 = unit_float(block[pair]) + static_cast<float>(1.0 / 16777216.0);
          const float angle = static_cast<float>(kTwoPi) * unit_float(block[pair + 1]);
          const float radius = std::sqrt(-2.0f * std::log(u1));
          const float z = (i & 1) ? radius * std::sin(angle) : radius * std::cos(angle);
          element<T>(ptrs[0]) =
              cast_value<T>(element<float>(ptrs[1]) + element<float>(ptrs[2]) * z);
        });
  });
}

void multinomial(const TensorView& probs, const TensorView& dst, int64_t samples, bool replacement,
                 uint64_t seed, uint64_t offset) {
  require_dtype(probs, DType::Float32, "multinomial", "probabilities");
  require_dtype(dst, DType::Int64, "multinomial", "an output");
  if (probs.ndim != 2 || dst.ndim != 2) {
    throw std::invalid_argument("openneuron kernels: multinomial needs 2-D probs and output");
  }
  const int64_t rows = probs.sizes[0];
  const int64_t categories = probs.sizes[1];
  const uint64_t draws_per_row = static_cast<uint64_t>(std::max(samples, categories));
  parallel_for(
      0, rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, categories)),
      [&](int64_t begin, int64_t end) {
        BlockCache cache(seed, offset);
        std::vector<double> cumulative(static_cast<size_t>(categories));
        std::vector<std::pair<double, int64_t>> keys(static_cast<size_t>(categories));
        for (int64_t r = begin; r < end; ++r) {
          const float* row = static_cast<const float*>(probs.data) + r * probs.strides[0];
          int64_t* out = static_cast<int64_t*>(dst.data) + r * dst.strides[0];
          const uint64_t first_draw = static_cast<uint64_t>(r) * draws_per_row;
          if (replacement) {
            double total = 0.0;
            for (int64_t j = 0; j < categories; ++j) {
              total += row[j * probs.strides[1]];
              cumulative[j] = total;
            }
            for (int64_t s = 0; s < samples; ++s) {
              const double target = unit_double(cache.draw64(first_draw + s)) * total;
              // First category whose cumulative weight exceeds the target (zero weights never win).
              auto it = std::upper_bound(cumulative.begin(), cumulative.end(), target);
              int64_t pick = std::min<int64_t>(it - cumulative.begin(), categories - 1);
              out[s * dst.strides[1]] = pick;
            }
          } else {
            for (int64_t j = 0; j < categories; ++j) {
              const double w = row[j * probs.strides[1]];
              const double u = unit_double(cache.draw64(first_draw + j)) + 0x1p-54;  // (0, 1)
              keys[j] = {w > 0 ? std::log(u) / w : -std::numeric_limits<double>::infinity(), j};
            }
            std::partial_sort(
                keys.begin(), keys.begin() + samples, keys.end(), [](const auto& a, const auto& b) {
                  return a.first > b.first || (a.first == b.first && a.second < b.second);
                });
            for (int64_t s = 0; s < samples; ++s) out[s * dst.strides[1]] = keys[s].second;
          }
        }
      });
}

}  // namespace openneuron::kernels
