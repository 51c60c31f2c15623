// Sorting maps every element to an unsigned key whose integer order is PyTorch's order
// (NaN highest, -0.0 == 0.0; inverted for descending), then runs a stable LSD radix sort of
// (key, index) pairs, skipping byte passes in which all keys agree. Short lines use
// insertion sort. Lines run in parallel. Unstable sorts and top-k follow the CPU's standard
// library algorithms over (value, index) pairs, so ties land where the CPU puts them.
#include "kernels/shape/sort.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/core/element_types.h"
#include "kernels/core/row_io.h"
#include "kernels/runtime/parallel.h"
#include "kernels/shape/dim_lines.h"

namespace openneuron::kernels {
namespace {

template <typename T>
struct KeyOf;  // KeyOf<T>::type is the unsigned key; KeyOf<T>::key(v) maps a value

template <typename U>
inline U float_bits_key(U bits, U canonical_nan, bool is_nan) {
  constexpr U kSign = U{1} << (sizeof(U) * 8 - 1);
  if (is_nan) return canonical_nan | kSign;
  if (bits == kSign) bits = 0;  // -0.0 sorts as 0.0
  return (bits & kSign) ? static_cast<U>(~bits) : static_cast<U>(bits | kSign);
}

template <>
struct KeyOf<float> {
  using type = uint32_t;
  static type key(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return float_bits_key<uint32_t>(bits, 0x7fc00000u, v != v);
  }
};
template <>
struct KeyOf<double> {
  using type = uint64_t;
  static type key(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    return float_bits_key<uint64_t>(bits, 0x7ff8000000000000ull, v != v);
  }
};
template <>
struct KeyOf<Half> {
  using type = uint16_t;
  static type key(Half v) {
    const bool nan = (v.bits & 0x7c00) == 0x7c00 && (v.bits & 0x03ff) != 0;
    return float_bits_key<uint16_t>(v.bits, 0x7e00, nan);
  }
};
template <>
struct KeyOf<BFloat16> {
  using type = uint16_t;
  static type key(BFloat16 v) {
    const bool nan = (v.bits & 0x7f80) == 0x7f80 && (v.bits & 0x007f) != 0;
    return float_bits_key<uint16_t>(v.bits, 0x7fc0, nan);
  }
};
template <>
struct KeyOf<Float8E4M3> {
  using type = uint16_t;
  static type key(Float8E4M3 v) { return KeyOf<float>::key(narrow_to_float(v)) >> 16; }
};
template <>
struct KeyOf<Float8E5M2> {
  using type = uint16_t;
  static type key(Float8E5M2 v) { return KeyOf<float>::key(narrow_to_float(v)) >> 16; }
};
template <>
struct KeyOf<bool> {
  using type = uint8_t;
  static type key(bool v) { return v ? 1 : 0; }
};
template <>
struct KeyOf<uint8_t> {
  using type = uint8_t;
  static type key(uint8_t v) { return v; }
};
template <typename S>
struct SignedKey {
  using type = std::make_unsigned_t<S>;
  static type key(S v) {
    return static_cast<type>(static_cast<type>(v) ^ (type{1} << (sizeof(S) * 8 - 1)));
  }
};
template <>
struct KeyOf<int8_t> : SignedKey<int8_t> {};
template <>
struct KeyOf<int16_t> : SignedKey<int16_t> {};
template <>
struct KeyOf<int32_t> : SignedKey<int32_t> {};
template <>
struct KeyOf<int64_t> : SignedKey<int64_t> {};

// Per-thread scratch reused across lines.
template <typename K>
struct Scratch {
  std::vector<K> keys, keys_tmp;
  std::vector<int64_t> order, order_tmp;
  void resize(int64_t n) {
    if (static_cast<int64_t>(keys.size()) < n) {
      keys.resize(n);
      keys_tmp.resize(n);
      order.resize(n);
      order_tmp.resize(n);
    }
  }
};

// Sorts keys[0..n) with payload order[0..n) stably; the result ends in scratch.keys/order.
template <typename K>
void radix_sort(Scratch<K>& s, int64_t n) {
  K* keys = s.keys.data();
  K* keys_tmp = s.keys_tmp.data();
  int64_t* order = s.order.data();
  int64_t* order_tmp = s.order_tmp.data();
  if (n <= 64) {
    for (int64_t i = 1; i < n; ++i) {
      const K key = keys[i];
      const int64_t idx = order[i];
      int64_t j = i;
      while (j > 0 && keys[j - 1] > key) {
        keys[j] = keys[j - 1];
        order[j] = order[j - 1];
        --j;
      }
      keys[j] = key;
      order[j] = idx;
    }
    return;
  }
  constexpr int kPasses = sizeof(K);
  std::vector<int64_t> histogram(static_cast<size_t>(kPasses) * 256, 0);
  for (int64_t i = 0; i < n; ++i) {
    const K key = keys[i];
    for (int pass = 0; pass < kPasses; ++pass)
      ++histogram[pass * 256 + ((key >> (8 * pass)) & 0xff)];
  }
  for (int pass = 0; pass < kPasses; ++pass) {
    int64_t* counts = histogram.data() + pass * 256;
    // A pass where every key has the same byte changes nothing.
    if (counts[(keys[0] >> (8 * pass)) & 0xff] == n) continue;
    int64_t offset = 0;
    for (int b = 0; b < 256; ++b) {
      const int64_t c = counts[b];
      counts[b] = offset;
      offset += c;
    }
    for (int64_t i = 0; i < n; ++i) {
      const K key = keys[i];
      const int64_t dst = counts[(key >> (8 * pass)) & 0xff]++;
      keys_tmp[dst] = key;
      order_tmp[dst] = order[i];
    }
    std::swap(keys, keys_tmp);
    std::swap(order, order_tmp);
  }
  if (keys != s.keys.data()) {
    std::memcpy(s.keys.data(), keys, static_cast<size_t>(n) * sizeof(K));
    std::memcpy(s.order.data(), order, static_cast<size_t>(n) * sizeof(int64_t));
  }
}

template <typename T>
void sort_typed(const TensorView& values, const TensorView& indices, const TensorView& in, int dim,
                bool descending) {
  using K = typename KeyOf<T>::type;
  const Lines lines = make_lines(values, indices, in, dim);
  // A single line with one thread, or many lines across threads.
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(lines.length, 1));
  parallel_for(0, lines.count, grain, [&](int64_t begin, int64_t end) {
    Scratch<K> scratch;
    scratch.resize(lines.length);
    for (int64_t line = begin; line < end; ++line) {
      int64_t off[3];
      line_offsets(lines, line, off);
      const T* src = static_cast<const T*>(in.data) + off[2];
      const int64_t step = lines.steps[2];
      K* keys = scratch.keys.data();
      int64_t* order = scratch.order.data();
      for (int64_t i = 0; i < lines.length; ++i) {
        const K key = KeyOf<T>::key(load_value(&src[i * step]));
        keys[i] = descending ? static_cast<K>(~key) : key;
        order[i] = i;
      }
      radix_sort<K>(scratch, lines.length);
      order = scratch.order.data();
      T* value_out = static_cast<T*>(values.data) + off[0];
      int64_t* index_out = static_cast<int64_t*>(indices.data) + off[1];
      for (int64_t i = 0; i < lines.length; ++i) {
        value_out[i * lines.steps[0]] = load_value(&src[order[i] * step]);
        index_out[i * lines.steps[1]] = order[i];
      }
    }
  });
}

// PyTorch's orders: ascending puts NaN last, descending first; -0.0 ties with 0.0.
template <typename V>
struct AscendingNanLast {
  bool operator()(const std::pair<V, int64_t>& a, const std::pair<V, int64_t>& b) const {
    return (!is_nan_value(a.first) && is_nan_value(b.first)) || a.first < b.first;
  }
};
template <typename V>
struct DescendingNanFirst {
  bool operator()(const std::pair<V, int64_t>& a, const std::pair<V, int64_t>& b) const {
    return (is_nan_value(a.first) && !is_nan_value(b.first)) || a.first > b.first;
  }
};

// Applies fn(comparator) with the line order for `descending`.
template <typename V, typename Fn>
void with_order(bool descending, Fn&& fn) {
  if (descending) {
    fn(DescendingNanFirst<V>{});
  } else {
    fn(AscendingNanLast<V>{});
  }
}

// For every line of `in` in parallel: its (value, index) pairs, rearranged by
// arrange(pairs), which returns how many of them to write out; those are written as elements
// (read back from in, so NaN payloads and -0.0 survive) and indices.
template <typename T, typename Arrange>
void rearrange_lines(const TensorView& values, const TensorView& indices, const TensorView& in,
                     int dim, Arrange arrange) {
  const Lines lines = make_lines(values, indices, in, dim);
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(lines.length, 1));
  parallel_for(0, lines.count, grain, [&](int64_t begin, int64_t end) {
    std::vector<std::pair<CompareType<T>, int64_t>> items(static_cast<size_t>(lines.length));
    for (int64_t line = begin; line < end; ++line) {
      int64_t off[3];
      line_offsets(lines, line, off);
      const T* src = static_cast<const T*>(in.data) + off[2];
      for (int64_t i = 0; i < lines.length; ++i) {
        items[i] = {comparable(load_value(&src[i * lines.steps[2]])), i};
      }
      const int64_t n = arrange(items);
      T* value_out = static_cast<T*>(values.data) + off[0];
      int64_t* index_out = static_cast<int64_t*>(indices.data) + off[1];
      for (int64_t i = 0; i < n; ++i) {
        value_out[i * lines.steps[0]] = load_value(&src[items[i].second * lines.steps[2]]);
        index_out[i * lines.steps[1]] = items[i].second;
      }
    }
  });
}

// The CPU's unstable sort of bool, 8- and 16-bit lines: introsort over (value, index) pairs.
template <typename T>
void sort_unstable_typed(const TensorView& values, const TensorView& indices, const TensorView& in,
                         int dim, bool descending) {
  using V = CompareType<T>;
  rearrange_lines<T>(values, indices, in, dim, [&](auto& items) {
    with_order<V>(descending, [&](auto order) { std::sort(items.begin(), items.end(), order); });
    return static_cast<int64_t>(items.size());
  });
}

template <typename T>
void topk_typed(const TensorView& values, const TensorView& indices, const TensorView& in, int dim,
                int64_t k, bool largest, bool sorted) {
  using V = CompareType<T>;
  rearrange_lines<T>(values, indices, in, dim, [&](auto& items) {
    with_order<V>(largest, [&](auto order) {
      if (k * 64 <= static_cast<int64_t>(items.size())) {
        std::partial_sort(items.begin(), items.begin() + k, items.end(), order);
        return;
      }
      std::nth_element(items.begin(), items.begin() + k - 1, items.end(), order);
      if (sorted) std::sort(items.begin(), items.begin() + k - 1, order);
    });
    return k;
  });
}

void check(const TensorView& values, const TensorView& indices, const TensorView& in, int dim) {
  if (values.ndim != in.ndim || indices.ndim != in.ndim || values.dtype != in.dtype ||
      indices.dtype != DType::Int64 || dim < 0 || (in.ndim > 0 && dim >= in.ndim)) {
    throw std::invalid_argument("openneuron kernels: sort/topk output layout mismatch");
  }
}

}  // namespace

void sort(const TensorView& values, const TensorView& indices, const TensorView& in, int dim,
          bool descending, bool stable) {
  check(values, indices, in, dim);
  if (in.numel() == 0) return;
  visit_dtype(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr bool kIntrosortOnCpu =
        sizeof(T) <= 2 && !std::is_same_v<T, Float8E4M3> && !std::is_same_v<T, Float8E5M2>;
    // Lines of one repeated element (stride 0) keep their order, as the CPU skips sorting them.
    const bool repeated = in.ndim > 0 && in.strides[dim] == 0;
    if constexpr (kIntrosortOnCpu) {
      if (!stable && !repeated) {
        return sort_unstable_typed<T>(values, indices, in, dim, descending);
      }
    }
    sort_typed<T>(values, indices, in, dim, descending);
  });
}

void topk(const TensorView& values, const TensorView& indices, const TensorView& in, int dim,
          int64_t k, bool largest, bool sorted) {
  check(values, indices, in, dim);
  if (k == 0 || in.numel() == 0) return;
  const int64_t length = in.ndim == 0 ? 1 : in.sizes[dim];
  if (k > length) throw std::invalid_argument("openneuron kernels: topk k out of range");
  visit_dtype(in.dtype, [&](auto tag) {
    topk_typed<typename decltype(tag)::type>(values, indices, in, dim, k, largest, sorted);
  });
}

}  // namespace openneuron::kernels
