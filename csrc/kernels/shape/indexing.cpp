// Indexing kernels. Advanced indexing moves whole sub-blocks (the non-indexed dims) per index
// position, with a memcpy when the block is one dense row in both tensors; positions run in
// parallel for gathers. Scatters with accumulation run in index order (as on CPU), split
// across threads by block columns when the block is a long dense row.
#include "kernels/shape/indexing.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/core/element_types.h"
#include "kernels/core/row_io.h"
#include "kernels/core/strided_loop.h"
#include "kernels/pointwise/cast.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {
namespace {

[[noreturn]] void throw_out_of_bounds(int64_t index, int dim, int64_t size) {
  throw std::out_of_range("index " + std::to_string(index) + " is out of bounds for dimension " +
                          std::to_string(dim) + " with size " + std::to_string(size));
}

inline int64_t read_index(const char* p, DType dtype) {
  return dtype == DType::Int32 ? *reinterpret_cast<const int32_t*>(p)
                               : *reinterpret_cast<const int64_t*>(p);
}

void check_index_dtype(const TensorView& index) {
  if (index.dtype != DType::Int64 && index.dtype != DType::Int32) {
    throw std::invalid_argument("openneuron kernels: index tensors must be int64 or int32");
  }
}

// The non-indexed dims shared by the two sides of an advanced-index copy.
struct Block {
  int ndim = 0;
  int64_t sizes[kMaxDims];
  int64_t a_strides[kMaxDims];  // the indexed tensor (in / self)
  int64_t b_strides[kMaxDims];  // the position-major tensor (out / values)
  int64_t numel = 1;
  bool dense_row = false;          // one contiguous run in both tensors
  int64_t a_step = 1, b_step = 1;  // element steps when the block is a single row
  bool single_row = false;
};

Block make_block(const TensorView& a, const TensorView& b, int first, int index_count,
                 int position_ndim) {
  Block block;
  const int post = a.ndim - first - index_count;
  auto add = [&](int64_t size, int64_t sa, int64_t sb) {
    if (size == 1) return;
    block.sizes[block.ndim] = size;
    block.a_strides[block.ndim] = sa;
    block.b_strides[block.ndim] = sb;
    ++block.ndim;
    block.numel *= size;
  };
  for (int d = 0; d < first; ++d) add(a.sizes[d], a.strides[d], b.strides[d]);
  for (int d = 0; d < post; ++d) {
    add(a.sizes[first + index_count + d], a.strides[first + index_count + d],
        b.strides[first + position_ndim + d]);
  }
  // Merge dims contiguous in both tensors.
  int merged = 0;
  for (int d = 0; d < block.ndim; ++d) {
    if (merged > 0 && block.a_strides[merged - 1] == block.a_strides[d] * block.sizes[d] &&
        block.b_strides[merged - 1] == block.b_strides[d] * block.sizes[d]) {
      block.sizes[merged - 1] *= block.sizes[d];
      block.a_strides[merged - 1] = block.a_strides[d];
      block.b_strides[merged - 1] = block.b_strides[d];
      continue;
    }
    block.sizes[merged] = block.sizes[d];
    block.a_strides[merged] = block.a_strides[d];
    block.b_strides[merged] = block.b_strides[d];
    ++merged;
  }
  block.ndim = merged;
  block.single_row = merged <= 1;
  if (merged == 1) {
    block.a_step = block.a_strides[0];
    block.b_step = block.b_strides[0];
  }
  block.dense_row = block.single_row && (merged == 0 || (block.a_step == 1 && block.b_step == 1));
  return block;
}

// Walks the index positions in row-major order, yielding each position's element offset
// into the indexed tensor (sum of index * stride) and into the position-major tensor.
class PositionWalker {
 public:
  PositionWalker(const TensorView& a, const TensorView& b, int first, const TensorView* indices,
                 int index_count)
      : a_(a), first_(first), indices_(indices), count_(index_count) {
    ndim_ = indices[0].ndim;
    for (int d = 0; d < ndim_; ++d) {
      sizes_[d] = indices[0].sizes[d];
      b_strides_[d] = b.strides[first + d];
    }
  }
  int64_t positions() const {
    int64_t n = 1;
    for (int d = 0; d < ndim_; ++d) n *= sizes_[d];
    return n;
  }
  void seek(int64_t position) {
    int64_t rest = position;
    for (int d = ndim_ - 1; d >= 0; --d) {
      coord_[d] = rest % sizes_[d];
      rest /= sizes_[d];
    }
  }
  void advance() {
    for (int d = ndim_ - 1; d >= 0; --d) {
      if (++coord_[d] < sizes_[d]) return;
      coord_[d] = 0;
    }
  }
  // Offsets (in elements) of the current position; throws for an out-of-range index.
  void offsets(int64_t* a_offset, int64_t* b_offset) const {
    int64_t a = 0, b = 0;
    for (int d = 0; d < ndim_; ++d) b += coord_[d] * b_strides_[d];
    for (int k = 0; k < count_; ++k) {
      const TensorView& index = indices_[k];
      int64_t at = 0;
      for (int d = 0; d < ndim_; ++d) at += coord_[d] * index.strides[d];
      const char* p = static_cast<const char*>(index.data) +
                      at * static_cast<int64_t>(element_size(index.dtype));
      int64_t i = read_index(p, index.dtype);
      const int64_t size = a_.sizes[first_ + k];
      if (i < -size || i >= size) throw_out_of_bounds(i, first_ + k, size);
      if (i < 0) i += size;
      a += i * a_.strides[first_ + k];
    }
    *a_offset = a;
    *b_offset = b;
  }

 private:
  const TensorView& a_;
  int first_;
  const TensorView* indices_;
  int count_;
  int ndim_ = 0;
  int64_t sizes_[kMaxDims] = {};
  int64_t b_strides_[kMaxDims] = {};
  int64_t coord_[kMaxDims] = {};
};

// Copies one block of element size `bytes` from src (strides s) to dst (strides d).
template <typename Word>
void copy_block_typed(char* dst, const int64_t* dst_strides, const char* src,
                      const int64_t* src_strides, const Block& block) {
  const std::array<char*, 2> bases = {dst, const_cast<char*>(src)};
  for_each_row<2>(block.ndim, block.sizes, bases, {dst_strides, src_strides},
                  {sizeof(Word), sizeof(Word)}, LoopOrder::kRowMajor,
                  [&](const RowPointers<2>& row, int64_t n) {
                    Word* o = reinterpret_cast<Word*>(row.ptrs[0]);
                    const Word* i = reinterpret_cast<const Word*>(row.ptrs[1]);
                    const int64_t so = row.strides[0] / static_cast<int64_t>(sizeof(Word));
                    const int64_t si = row.strides[1] / static_cast<int64_t>(sizeof(Word));
                    for (int64_t j = 0; j < n; ++j) o[j * so] = i[j * si];
                  });
}

void copy_block(char* dst, const int64_t* dst_strides, const char* src, const int64_t* src_strides,
                const Block& block, size_t bytes) {
  switch (bytes) {
    case 1:
      return copy_block_typed<uint8_t>(dst, dst_strides, src, src_strides, block);
    case 2:
      return copy_block_typed<uint16_t>(dst, dst_strides, src, src_strides, block);
    case 4:
      return copy_block_typed<uint32_t>(dst, dst_strides, src, src_strides, block);
    default:
      return copy_block_typed<uint64_t>(dst, dst_strides, src, src_strides, block);
  }
}

void check_advanced(const TensorView& a, const TensorView& b, int first, const TensorView* indices,
                    int index_count) {
  if (index_count < 1 || first < 0 || first + index_count > a.ndim) {
    throw std::invalid_argument("openneuron kernels: bad indexed dim range");
  }
  for (int k = 0; k < index_count; ++k) {
    check_index_dtype(indices[k]);
    if (indices[k].ndim != indices[0].ndim) {
      throw std::invalid_argument("openneuron kernels: index views must share one shape");
    }
  }
  if (b.ndim != a.ndim - index_count + indices[0].ndim) {
    throw std::invalid_argument("openneuron kernels: advanced-index operand has the wrong ndim");
  }
}

template <typename T>
void accumulate_block(char* self, const int64_t* self_strides, const char* values,
                      const int64_t* value_strides, const Block& block, Scalar alpha) {
  using Compute =
      std::conditional_t<std::is_floating_point_v<T> || kIsNarrowFloat<T>,
                         std::conditional_t<std::is_same_v<T, double>, double, float>, int64_t>;
  const Compute a = std::is_same_v<Compute, int64_t> ? static_cast<Compute>(alpha.i)
                                                     : static_cast<Compute>(alpha.to_double());
  const bool unit = alpha.to_double() == 1.0;
  if constexpr (!std::is_same_v<T, bool>) {
    if (unit && block.single_row) {
      // The common case (index_put_ accumulate, embedding backward): one strided row.
      T* o = reinterpret_cast<T*>(self);
      const T* v = reinterpret_cast<const T*>(values);
      const int64_t so = block.ndim == 0 ? 0 : block.a_step;
      const int64_t sv = block.ndim == 0 ? 0 : block.b_step;
      if (so == 1 && sv == 1) {
        for (int64_t j = 0; j < block.numel; ++j) {
          o[j] = cast_value<T>(cast_value<Compute>(o[j]) + cast_value<Compute>(v[j]));
        }
      } else {
        for (int64_t j = 0; j < block.numel; ++j) {
          o[j * so] =
              cast_value<T>(cast_value<Compute>(o[j * so]) + cast_value<Compute>(v[j * sv]));
        }
      }
      return;
    }
  }
  const std::array<char*, 2> bases = {self, const_cast<char*>(values)};
  for_each_row<2>(
      block.ndim, block.sizes, bases, {self_strides, value_strides}, {sizeof(T), sizeof(T)},
      LoopOrder::kRowMajor, [&](const RowPointers<2>& row, int64_t n) {
        T* o = reinterpret_cast<T*>(row.ptrs[0]);
        const T* v = reinterpret_cast<const T*>(row.ptrs[1]);
        const int64_t so = row.strides[0] / static_cast<int64_t>(sizeof(T));
        const int64_t sv = row.strides[1] / static_cast<int64_t>(sizeof(T));
        if constexpr (std::is_same_v<T, bool>) {
          // bool: o + v * alpha is o || (v && alpha), so alpha=False leaves self unchanged.
          if (alpha.i == 0) return;
          for (int64_t j = 0; j < n; ++j) o[j * so] = o[j * so] || v[j * sv];
        } else if (unit) {
          for (int64_t j = 0; j < n; ++j) {
            o[j * so] =
                cast_value<T>(cast_value<Compute>(o[j * so]) + cast_value<Compute>(v[j * sv]));
          }
        } else {
          for (int64_t j = 0; j < n; ++j) {
            // source * alpha rounds to the dtype first, as CPU's scalar_t math does.
            const T scaled = cast_value<T>(cast_value<Compute>(v[j * sv]) * a);
            o[j * so] = cast_value<T>(cast_value<Compute>(o[j * so]) + cast_value<Compute>(scaled));
          }
        }
      });
}

}  // namespace

void index_gather(const TensorView& out, const TensorView& in, int first, const TensorView* indices,
                  int index_count) {
  check_advanced(in, out, first, indices, index_count);
  if (out.numel() == 0) return;
  if (in.dtype != out.dtype)
    throw std::invalid_argument("openneuron kernels: index_gather dtype mismatch");
  const Block block = make_block(in, out, first, index_count, indices[0].ndim);
  const size_t bytes = element_size(in.dtype);
  const int64_t positions = PositionWalker(in, out, first, indices, index_count).positions();
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(block.numel, 1));
  if (index_count == 1 && indices[0].ndim == 1 && block.single_row) {
    // One 1-D index (index_select, embedding, x[idx]): no position walker, typed moves.
    const TensorView& index = indices[0];
    const int64_t size = in.sizes[first];
    const int64_t in_dim_stride = in.strides[first];
    const int64_t out_dim_stride = out.strides[first];
    const size_t index_bytes = element_size(index.dtype);
    visit_dtype(in.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      parallel_for(0, positions, grain, [&](int64_t begin, int64_t end) {
        const T* src_base = static_cast<const T*>(in.data);
        T* dst_base = static_cast<T*>(out.data);
        const char* index_base = static_cast<const char*>(index.data);
        for (int64_t p = begin; p < end; ++p) {
          int64_t i = read_index(
              index_base + p * index.strides[0] * static_cast<int64_t>(index_bytes), index.dtype);
          if (i < -size || i >= size) throw_out_of_bounds(i, first, size);
          if (i < 0) i += size;
          const T* src = src_base + i * in_dim_stride;
          T* dst = dst_base + p * out_dim_stride;
          if (block.ndim == 0) {
            *dst = *src;
          } else if (block.dense_row) {
            std::memcpy(dst, src, static_cast<size_t>(block.numel) * sizeof(T));
          } else {
            for (int64_t j = 0; j < block.numel; ++j) dst[j * block.b_step] = src[j * block.a_step];
          }
        }
      });
    });
    return;
  }
  parallel_for(0, positions, grain, [&](int64_t begin, int64_t end) {
    PositionWalker walker(in, out, first, indices, index_count);
    walker.seek(begin);
    const char* in_base = static_cast<const char*>(in.data);
    char* out_base = static_cast<char*>(out.data);
    for (int64_t p = begin; p < end; ++p, walker.advance()) {
      int64_t in_offset, out_offset;
      walker.offsets(&in_offset, &out_offset);
      const char* src = in_base + in_offset * static_cast<int64_t>(bytes);
      char* dst = out_base + out_offset * static_cast<int64_t>(bytes);
      if (block.dense_row) {
        std::memcpy(dst, src, static_cast<size_t>(block.numel) * bytes);
      } else {
        copy_block(dst, block.b_strides, src, block.a_strides, block, bytes);
      }
    }
  });
}

void index_scatter(IndexScatterMode mode, const TensorView& self, const TensorView& values,
                   int first, const TensorView* indices, int index_count, Scalar alpha) {
  check_advanced(self, values, first, indices, index_count);
  if (self.dtype != values.dtype)
    throw std::invalid_argument("openneuron kernels: index_scatter dtype mismatch");
  const Block block = make_block(self, values, first, index_count, indices[0].ndim);
  if (block.numel == 0 || self.numel() == 0) {
    // Still validate the indices, as CPU does.
    if (self.numel() == 0 && indices[0].ndim >= 0) {
      PositionWalker walker(self, values, first, indices, index_count);
      int64_t a, b;
      const int64_t positions = walker.positions();
      for (int64_t p = 0; p < positions; ++p, walker.advance()) walker.offsets(&a, &b);
    }
    return;
  }
  const size_t bytes = element_size(self.dtype);
  const int64_t positions = PositionWalker(self, values, first, indices, index_count).positions();
  // Long dense rows split into column ranges, each walking every position in order.
  const bool split_columns = block.single_row && block.numel >= 64;
  const int64_t columns = split_columns ? block.numel : 1;
  parallel_for(0, columns, split_columns ? 32 : 1, [&](int64_t col_begin, int64_t col_end) {
    Block part = block;
    int64_t col_offset_a = 0, col_offset_b = 0;
    if (split_columns) {
      part.sizes[0] = col_end - col_begin;
      part.numel = part.sizes[0];
      col_offset_a = col_begin * block.a_step;
      col_offset_b = col_begin * block.b_step;
    }
    char* self_base = static_cast<char*>(self.data);
    const char* value_base = static_cast<const char*>(values.data);
    // Writes (or adds) one block of values at src into self at dst.
    const auto apply_block = [&](char* dst, const char* src) {
      if (mode == IndexScatterMode::Assign) {
        if (part.dense_row) {
          std::memcpy(dst, src, static_cast<size_t>(part.numel) * bytes);
        } else {
          copy_block(dst, part.a_strides, src, part.b_strides, part, bytes);
        }
      } else {
        visit_dtype(self.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          accumulate_block<T>(dst, part.a_strides, src, part.b_strides, part, alpha);
        });
      }
    };
    if (index_count == 1 && indices[0].ndim == 1 && part.single_row) {
      // One 1-D index (index_add_, embedding backward, x[idx] += v): no position walker.
      const TensorView& index = indices[0];
      const int64_t size = self.sizes[first];
      const int64_t index_step = index.strides[0] * static_cast<int64_t>(element_size(index.dtype));
      const char* index_base = static_cast<const char*>(index.data);
      for (int64_t p = 0; p < positions; ++p) {
        int64_t i = read_index(index_base + p * index_step, index.dtype);
        if (i < -size || i >= size) throw_out_of_bounds(i, first, size);
        if (i < 0) i += size;
        char* dst =
            self_base + (i * self.strides[first] + col_offset_a) * static_cast<int64_t>(bytes);
        const char* src =
            value_base + (p * values.strides[first] + col_offset_b) * static_cast<int64_t>(bytes);
        apply_block(dst, src);
      }
      return;
    }
    PositionWalker walker(self, values, first, indices, index_count);
    for (int64_t p = 0; p < positions; ++p, walker.advance()) {
      int64_t a_offset, b_offset;
      walker.offsets(&a_offset, &b_offset);
      char* dst = self_base + (a_offset + col_offset_a) * static_cast<int64_t>(bytes);
      const char* src = value_base + (b_offset + col_offset_b) * static_cast<int64_t>(bytes);
      apply_block(dst, src);
    }
  });
}

void gather(const TensorView& out, const TensorView& in, int dim, const TensorView& index) {
  check_index_dtype(index);
  if (out.numel() == 0) return;
  TensorView source = in;  // index's sizes, in's strides, nothing along dim
  for (int d = 0; d < index.ndim; ++d) source.sizes[d] = index.sizes[d];
  const int64_t dim_size = in.ndim == 0 ? 1 : in.sizes[dim];
  const int64_t dim_stride = in.ndim == 0 ? 0 : in.strides[dim];
  if (in.ndim > 0) source.strides[dim] = 0;
  visit_dtype(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_row<3>(
        {&out, &index, &source}, LoopOrder::kRowMajor, [&](const RowPointers<3>& row, int64_t n) {
          for (int64_t j = 0; j < n; ++j) {
            const int64_t i = read_index(row.ptrs[1] + j * row.strides[1], index.dtype);
            if (i < 0 || i >= dim_size) throw_out_of_bounds(i, dim, dim_size);
            *reinterpret_cast<T*>(row.ptrs[0] + j * row.strides[0]) =
                reinterpret_cast<const T*>(row.ptrs[2] + j * row.strides[2])[i * dim_stride];
          }
        });
  });
}

namespace {

template <typename T>
void scatter_typed(ScatterReduce op, bool include_self, const TensorView& self, int dim,
                   const TensorView& index, const TensorView& src, Scalar value) {
  using Compute = std::conditional_t<std::is_integral_v<T>, int64_t,
                                     std::conditional_t<std::is_same_v<T, double>, double, float>>;
  const bool track = op == ScatterReduce::Mean || !include_self;
  // Contribution counts per self element, dense row-major (only when needed).
  std::vector<int64_t> counts;
  int64_t dense_strides[kMaxDims];
  int64_t step = 1;
  for (int d = self.ndim - 1; d >= 0; --d) {
    dense_strides[d] = step;
    step *= self.sizes[d];
  }
  if (track) counts.assign(static_cast<size_t>(self.numel()), include_self ? 1 : 0);

  TensorView target = self;  // index's sizes, self's strides, nothing along dim
  for (int d = 0; d < index.ndim; ++d) target.sizes[d] = index.sizes[d];
  const int64_t dim_size = self.ndim == 0 ? 1 : self.sizes[dim];
  const int64_t dim_stride = self.ndim == 0 ? 0 : self.strides[dim];
  const int64_t dense_dim_stride = self.ndim == 0 ? 0 : dense_strides[dim];
  int64_t dense_target_strides[kMaxDims];
  for (int d = 0; d < self.ndim; ++d) dense_target_strides[d] = d == dim ? 0 : dense_strides[d];
  if (self.ndim > 0) target.strides[dim] = 0;
  TensorView source = src;
  const T constant = cast_value<T>(value.is_integral ? static_cast<double>(value.i) : value.f);
  const bool from_value = src.data == nullptr;
  if (from_value) {
    source = index;
    source.dtype = self.dtype;
    source.data = const_cast<T*>(&constant);
    for (int d = 0; d < source.ndim; ++d) source.strides[d] = 0;
  } else {
    for (int d = 0; d < index.ndim; ++d) source.sizes[d] = index.sizes[d];
  }
  TensorView dense = index;  // an int64 stand-in addressing the counts
  dense.dtype = DType::Int64;
  dense.data = track ? counts.data() : nullptr;
  for (int d = 0; d < dense.ndim; ++d) dense.strides[d] = dense_target_strides[d];
  std::array<char*, 4> bases = {static_cast<char*>(index.data), static_cast<char*>(target.data),
                                static_cast<char*>(source.data), static_cast<char*>(dense.data)};
  for_each_row<4>(index.ndim, index.sizes, bases,
                  {index.strides, target.strides, source.strides, dense.strides},
                  {element_size(index.dtype), sizeof(T), sizeof(T), sizeof(int64_t)},
                  LoopOrder::kRowMajor, [&](const RowPointers<4>& row, int64_t n) {
                    for (int64_t j = 0; j < n; ++j) {
                      const int64_t i = read_index(row.ptrs[0] + j * row.strides[0], index.dtype);
                      if (i < 0 || i >= dim_size) throw_out_of_bounds(i, dim, dim_size);
                      T* slot =
                          reinterpret_cast<T*>(row.ptrs[1] + j * row.strides[1]) + i * dim_stride;
                      const T v = *reinterpret_cast<const T*>(row.ptrs[2] + j * row.strides[2]);
                      int64_t* count = nullptr;
                      if (track) {
                        count = reinterpret_cast<int64_t*>(row.ptrs[3] + j * row.strides[3]) +
                                i * dense_dim_stride;
                      }
                      if (op == ScatterReduce::Assign || (track && *count == 0)) {
                        *slot = v;
                        if (track) ++*count;
                        continue;
                      }
                      if (track) ++*count;
                      const Compute a = cast_value<Compute>(*slot);
                      const Compute b = cast_value<Compute>(v);
                      Compute r;
                      switch (op) {
                        case ScatterReduce::Add:
                        case ScatterReduce::Mean:
                          r = a + b;
                          break;
                        case ScatterReduce::Prod:
                          r = a * b;
                          break;
                        case ScatterReduce::Max:
                          r = a >= b ? a : b;
                          if constexpr (std::is_floating_point_v<Compute>) {
                            if (std::isnan(b)) r = b;
                            if (std::isnan(a)) r = a;
                          }
                          break;
                        default:  // Min
                          r = a <= b ? a : b;
                          if constexpr (std::is_floating_point_v<Compute>) {
                            if (std::isnan(b)) r = b;
                            if (std::isnan(a)) r = a;
                          }
                          break;
                      }
                      if constexpr (std::is_same_v<T, bool>) {
                        *slot = r != 0;
                      } else {
                        *slot = cast_value<T>(r);
                      }
                    }
                  });
  if (op != ScatterReduce::Mean) return;
  // Divide every slot with contributions by its count.
  std::array<char*, 2> mean_bases = {static_cast<char*>(self.data),
                                     reinterpret_cast<char*>(counts.data())};
  for_each_row<2>(self.ndim, self.sizes, mean_bases, {self.strides, dense_strides},
                  {sizeof(T), sizeof(int64_t)}, LoopOrder::kRowMajor,
                  [&](const RowPointers<2>& row, int64_t n) {
                    for (int64_t j = 0; j < n; ++j) {
                      const int64_t c =
                          *reinterpret_cast<const int64_t*>(row.ptrs[1] + j * row.strides[1]);
                      if (c <= 1) continue;
                      T* slot = reinterpret_cast<T*>(row.ptrs[0] + j * row.strides[0]);
                      if constexpr (std::is_integral_v<Compute>) {
                        const int64_t a = cast_value<int64_t>(*slot);
                        int64_t q = a / c;
                        if ((a % c != 0) && ((a < 0) != (c < 0))) --q;
                        *slot = cast_value<T>(q);
                      } else {
                        *slot = cast_value<T>(cast_value<Compute>(*slot) / static_cast<Compute>(c));
                      }
                    }
                  });
}

}  // namespace

// A dense fp32 copy of `view` (its sizes, row-major strides) held by `storage`.
TensorView widened_copy(const TensorView& view, std::vector<float>* storage) {
  storage->resize(static_cast<size_t>(view.numel()));
  TensorView wide = view;
  wide.dtype = DType::Float32;
  wide.data = storage->data();
  int64_t step = 1;
  for (int d = view.ndim - 1; d >= 0; --d) {
    wide.strides[d] = step;
    step *= view.sizes[d];
  }
  if (view.numel() > 0) copy(wide, view);
  return wide;
}

void scatter(ScatterReduce op, bool include_self, const TensorView& self, int dim,
             const TensorView& index, const TensorView& src, Scalar value) {
  check_index_dtype(index);
  if (index.numel() == 0) return;
  const bool accumulates =
      op == ScatterReduce::Add || op == ScatterReduce::Mean || op == ScatterReduce::Prod;
  if (accumulates && (self.dtype == DType::Float16 || self.dtype == DType::BFloat16)) {
    // 16-bit sums and products accumulate in fp32 and round once per element, as the CPU's
    // kernels do (rounding after every contribution drifts by an ulp per few terms).
    std::vector<float> self_storage, src_storage;
    const TensorView wide_self = widened_copy(self, &self_storage);
    TensorView wide_src = src;
    if (src.data != nullptr) wide_src = widened_copy(src, &src_storage);
    if (op != ScatterReduce::Mean) {
      scatter_typed<float>(op, include_self, wide_self, dim, index, wide_src, value);
      copy(self, wide_self);
      return;
    }
    // Mean: the fp32 sum is rounded to the 16-bit dtype before the division, as on the CPU.
    std::vector<float> count_storage;
    const TensorView counts = widened_copy(self, &count_storage);
    std::fill(count_storage.begin(), count_storage.end(), include_self ? 1.0f : 0.0f);
    scatter_typed<float>(ScatterReduce::Add, include_self, wide_self, dim, index, wide_src, value);
    scatter_typed<float>(ScatterReduce::Add, true, counts, dim, index, TensorView{},
                         Scalar::from_double(1.0));
    copy(self, wide_self);
    copy(wide_self, self);
    for (size_t k = 0; k < self_storage.size(); ++k) {
      if (count_storage[k] > 1.0f) self_storage[k] /= count_storage[k];
    }
    copy(self, wide_self);
    return;
  }
  visit_dtype(self.dtype, [&](auto tag) {
    scatter_typed<typename decltype(tag)::type>(op, include_self, self, dim, index, src, value);
  });
}

void scatter_rounding_each_step(ScatterReduce op, bool include_self, const TensorView& self,
                                int dim, const TensorView& index, const TensorView& src,
                                Scalar value) {
  check_index_dtype(index);
  if (index.numel() == 0) return;
  visit_dtype(self.dtype, [&](auto tag) {
    scatter_typed<typename decltype(tag)::type>(op, include_self, self, dim, index, src, value);
  });
}

namespace {

template <typename T>
bool find_outside_typed(const TensorView& index, int64_t lo, int64_t hi, const int64_t* skip,
                        int64_t* found) {
  bool any = false;
  for_each_row<1>({&index}, LoopOrder::kRowMajor, [&](const RowPointers<1>& row, int64_t count) {
    if (any) return;
    const char* p = row.ptrs[0];
    for (int64_t k = 0; k < count; ++k, p += row.strides[0]) {
      const int64_t value = *reinterpret_cast<const T*>(p);
      if ((value < lo || value >= hi) && (skip == nullptr || value != *skip)) {
        *found = value;
        any = true;
        return;
      }
    }
  });
  return any;
}

}  // namespace

bool find_index_outside(const TensorView& index, int64_t lo, int64_t hi, const int64_t* skip,
                        int64_t* found) {
  check_index_dtype(index);
  return index.dtype == DType::Int32 ? find_outside_typed<int32_t>(index, lo, hi, skip, found)
                                     : find_outside_typed<int64_t>(index, lo, hi, skip, found);
}

int64_t count_nonzero(const TensorView& in) {
  int64_t count = 0;
  visit_dtype(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_row<1>(
        {&in}, LoopOrder::kFirstOperandMemory, [&](const RowPointers<1>& row, int64_t n) {
          const char* p = row.ptrs[0];
          int64_t c = 0;
          for (int64_t j = 0; j < n; ++j)
            c += cast_value<bool>(load_value(reinterpret_cast<const T*>(p + j * row.strides[0])))
                     ? 1
                     : 0;
          count += c;
        });
  });
  return count;
}

void nonzero(const TensorView& out, const TensorView& in) {
  const int ndim = in.ndim;
  int64_t* base = static_cast<int64_t*>(out.data);
  const int64_t row_stride = out.strides[0];
  const int64_t col_stride = out.ndim > 1 ? out.strides[1] : 0;
  int64_t written = 0;
  const int64_t total = in.numel();
  if (total == 0) return;
  std::vector<int64_t> coord(static_cast<size_t>(ndim), 0);
  visit_dtype(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const char* data = static_cast<const char*>(in.data);
    const int64_t esize = sizeof(T);
    int64_t offset = 0;
    for (int64_t e = 0; e < total; ++e) {
      if (cast_value<bool>(load_value(reinterpret_cast<const T*>(data + offset * esize)))) {
        int64_t* row = base + written * row_stride;
        for (int d = 0; d < ndim; ++d) row[d * col_stride] = coord[d];
        ++written;
      }
      for (int d = ndim - 1; d >= 0; --d) {
        offset += in.strides[d];
        if (++coord[d] < in.sizes[d]) break;
        offset -= in.strides[d] * in.sizes[d];
        coord[d] = 0;
      }
    }
  });
}

void masked_select(const TensorView& out, const TensorView& in, const TensorView& mask) {
  const int64_t out_stride = out.ndim > 0 ? out.strides[0] : 1;
  int64_t written = 0;
  visit_dtype(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = static_cast<T*>(out.data);
    visit_dtype(mask.dtype, [&](auto mask_tag) {
      using M = typename decltype(mask_tag)::type;
      for_each_row<2>(
          {&in, &mask}, LoopOrder::kRowMajor, [&](const RowPointers<2>& row, int64_t n) {
            for (int64_t j = 0; j < n; ++j) {
              if (cast_value<bool>(
                      load_value(reinterpret_cast<const M*>(row.ptrs[1] + j * row.strides[1])))) {
                dst[written++ * out_stride] =
                    *reinterpret_cast<const T*>(row.ptrs[0] + j * row.strides[0]);
              }
            }
          });
    });
  });
}

}  // namespace openneuron::kernels
