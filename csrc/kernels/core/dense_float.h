// Private helper for the kernels: dense views over scratch memory and fp32 dense working copies
// of strided views, so the arithmetic loops only ever see contiguous float arrays (aliasing when
// already so).
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/core/tensor_view.h"
#include "kernels/pointwise/cast.h"

namespace openneuron::kernels {

// A dense row-major view of `data` with the given dtype and shape.
inline TensorView dense_view_like(void* data, DType dtype, const TensorView& shape_of) {
  TensorView view;
  view.data = data;
  view.dtype = dtype;
  view.ndim = shape_of.ndim;
  int64_t stride = 1;
  for (int d = shape_of.ndim - 1; d >= 0; --d) {
    view.sizes[d] = shape_of.sizes[d];
    view.strides[d] = stride;
    stride *= shape_of.sizes[d];
  }
  return view;
}

// An fp32 scratch block reused across calls on the same thread: fresh multi-megabyte
// temporaries are new mappings whose page faults cost more than the arithmetic on them.
class ScratchFloats {
 public:
  ScratchFloats() = default;
  ScratchFloats(const ScratchFloats&) = delete;
  ScratchFloats& operator=(const ScratchFloats&) = delete;
  ~ScratchFloats() { release(); }

  // `count` floats, zeroed when `zero` (otherwise uninitialised).
  float* acquire(size_t count, bool zero) {
    release();
    auto& pool = thread_pool();
    size_t best = pool.size();
    for (size_t i = 0; i < pool.size(); ++i) {
      if (pool[i].second >= count && (best == pool.size() || pool[i].second < pool[best].second)) {
        best = i;
      }
    }
    if (best < pool.size()) {
      block_ = std::move(pool[best]);
      pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(best));
    } else {
      block_ = {std::unique_ptr<float[]>(new float[count == 0 ? 1 : count]), count};
    }
    size_ = count;
    if (zero && count > 0) std::memset(block_.first.get(), 0, count * sizeof(float));
    return block_.first.get();
  }
  bool empty() const { return size_ == 0; }

 private:
  using Block = std::pair<std::unique_ptr<float[]>, size_t>;
  static std::vector<Block>& thread_pool() {
    thread_local std::vector<Block> pool;
    return pool;
  }
  void release() {
    if (!block_.first) return;
    auto& pool = thread_pool();
    if (pool.size() < 8) pool.push_back(std::move(block_));
    block_ = {};
    size_ = 0;
  }
  Block block_;
  size_t size_ = 0;
};

// Read-only fp32 dense contents of a view: the view itself when it already is dense fp32.
class DenseFloatInput {
 public:
  explicit DenseFloatInput(const TensorView& view) {
    if (view.dtype == DType::Float32 && view.is_contiguous()) {
      data_ = static_cast<const float*>(view.data);
      return;
    }
    float* dense = buffer_.acquire(static_cast<size_t>(view.numel()), /*zero=*/false);
    if (!buffer_.empty()) copy(dense_view_like(dense, DType::Float32, view), view);
    data_ = dense;
  }
  const float* data() const { return data_; }

 private:
  ScratchFloats buffer_;
  const float* data_ = nullptr;
};

// A dense fp32 place to compute a result in; commit() stores it into the target view
// (rounding once for 16-bit dtypes). Writes go straight to the target when it is dense fp32.
class DenseFloatOutput {
 public:
  explicit DenseFloatOutput(const TensorView& target) : target_(target) {
    direct_ = target.dtype == DType::Float32 && target.is_contiguous();
    if (direct_) {
      data_ = static_cast<float*>(target.data);
    } else {
      data_ = buffer_.acquire(static_cast<size_t>(target.numel()), /*zero=*/true);
    }
  }
  float* data() { return data_; }
  void commit() {
    if (!direct_ && !buffer_.empty()) {
      copy(target_, dense_view_like(data_, DType::Float32, target_));
    }
  }

 private:
  TensorView target_;
  ScratchFloats buffer_;
  float* data_ = nullptr;
  bool direct_ = false;
};

}  // namespace openneuron::kernels
