// Indexing kernels: advanced-index gather/scatter, gather/scatter along a dim, nonzero and
// masked_select. Index tensors are int64 or int32; out-of-range indices throw
// std::out_of_range naming the index, the dimension and its size.
#pragma once

#include <cstdint>

#include "kernels/core/scalar.h"
#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// Advanced indexing. in's dims [first, first + index_count) are indexed by the index views,
// which all share one shape B (broadcast already, any strides); negative indices count from
// the end. out has dims [in's dims before first] + B + [in's dims after the indexed ones]:
//   out[pre, b, post] = in[pre, idx_0[b], ..., idx_{k-1}[b], post].
// out and in share a dtype.
void index_gather(const TensorView& out, const TensorView& in, int first, const TensorView* indices,
                  int index_count);

enum class IndexScatterMode { Assign, Add };

// The inverse of index_gather: self[pre, idx(b), post] = values[pre, b, post] (Assign; the
// last duplicate wins) or += alpha * values[pre, b, post] (Add, applied in index order and
// rounded to self's dtype at each step, as on CPU). values has out's layout above (may be
// broadcast) and self's dtype.
void index_scatter(IndexScatterMode mode, const TensorView& self, const TensorView& values,
                   int first, const TensorView* indices, int index_count, Scalar alpha);

// out[p] = in[p with coordinate dim replaced by index[p]]; out and index share sizes, in has
// index's ndim and sizes at least index's on every dim but `dim`. Same dtype for out and in.
void gather(const TensorView& out, const TensorView& in, int dim, const TensorView& index);

enum class ScatterReduce { Assign, Add, Prod, Mean, Max, Min };

// self[p with dim replaced by index[p]] (op)= src[p] for every p of index's shape, in
// row-major order of p. src (same dtype as self, viewed with index's sizes) may have
// data == nullptr, then `value` is scattered. include_self = false makes each scattered slot
// start from the first value scattered into it; Mean divides by the number of contributions
// (floor division for integers). Max/Min propagate NaN.
void scatter(ScatterReduce op, bool include_self, const TensorView& self, int dim,
             const TensorView& index, const TensorView& src, Scalar value);

// As scatter, but 16-bit sums, products and means round to self's dtype after every
// contribution, as the CPU's index_reduce does (its scatter_reduce accumulates in fp32).
void scatter_rounding_each_step(ScatterReduce op, bool include_self, const TensorView& self,
                                int dim, const TensorView& index, const TensorView& src,
                                Scalar value);

// Finds the first value of `index` (int64 or int32, any strides), in row-major order, that
// lies outside [lo, hi) and is not *skip (when skip is given); stores it in *found and returns
// true, or returns false when every value is in range. Lets callers raise before queuing.
bool find_index_outside(const TensorView& index, int64_t lo, int64_t hi, const int64_t* skip,
                        int64_t* found);

// Number of nonzero elements (NaN counts as nonzero).
int64_t count_nonzero(const TensorView& in);

// out (count_nonzero(in) x in.ndim, int64) = coordinates of the nonzero elements, row-major.
void nonzero(const TensorView& out, const TensorView& in);

// out (1-D, count_nonzero(mask) elements) = in's elements where mask is nonzero, row-major.
// in and mask share sizes (broadcast views); out has in's dtype.
void masked_select(const TensorView& out, const TensorView& in, const TensorView& mask);

}  // namespace openneuron::kernels
