// Flash-style blocked attention. The forward runs one parallel task per (batch, head, block of
// query rows) and walks the keys in blocks with an online softmax, so the working set is a
// block of scores plus the head's widened keys and values (packed once per thread and head). The
// backward runs one task per (batch, key/value head), so the grouped query heads that share keys
// accumulate their key/value gradients without races, and recomputes the probabilities per block
// from the saved logsumexp. Block products run through register-blocked fp32 tiles
// (attention_block_ops.h); 16-bit inputs are widened per block.
#include "kernels/attention/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/attention/attention_block_ops.h"
#include "kernels/attention/attention_convert.h"
#include "kernels/core/dense_float.h"
#include "kernels/core/element_types.h"
#include "kernels/core/row_io.h"
#include "kernels/random/philox.h"
#include "kernels/runtime/isa_kernels.h"
#include "kernels/runtime/isa_variant.h"
#include "kernels/runtime/parallel.h"

OPENNEURON_ISA_BEGIN
namespace openneuron::kernels::OPENNEURON_ISA_NAMESPACE {
namespace {

using attention_blocks::block_gemm;

// Query rows per forward task and per backward step: the micro-tiles take 6 rows at a time.
constexpr int64_t kQueryBlock = 64;
// Keys per block: 128 keeps a block's scores (64 x 128) and packed keys/values in L1/L2.
constexpr int64_t kKeyBlock = 128;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

[[noreturn]] void fail(const char* message) {
  throw std::invalid_argument(std::string("openneuron kernels: attention: ") + message);
}

struct Dims {
  int64_t batch, heads, kv_heads, q_len, kv_len, head_dim, value_dim;
  int64_t group() const { return kv_heads == 0 ? 1 : heads / kv_heads; }
};

Dims check_dims(const TensorView& q, const TensorView& k, const TensorView& v,
                const TensorView& out, const TensorView* mask) {
  if (q.ndim != 4 || k.ndim != 4 || v.ndim != 4 || out.ndim != 4) fail("views must be 4-D");
  Dims d{q.sizes[0], q.sizes[1], k.sizes[1], q.sizes[2], k.sizes[2], q.sizes[3], v.sizes[3]};
  if (k.sizes[0] != d.batch || v.sizes[0] != d.batch || v.sizes[1] != d.kv_heads ||
      k.sizes[3] != d.head_dim || v.sizes[2] != d.kv_len || out.sizes[0] != d.batch ||
      out.sizes[1] != d.heads || out.sizes[2] != d.q_len || out.sizes[3] != d.value_dim) {
    fail("inconsistent q/k/v/out shapes");
  }
  if (d.kv_heads == 0 ? d.heads != 0 : d.heads % d.kv_heads != 0) {
    fail("query heads must be a multiple of key/value heads");
  }
  if (mask != nullptr &&
      (mask->ndim != 4 || mask->sizes[0] != d.batch || mask->sizes[1] != d.heads ||
       mask->sizes[2] != d.q_len || mask->sizes[3] != d.kv_len)) {
    fail("mask must be viewed as [B, H, L, S]");
  }
  return d;
}

void check_dtypes(const TensorView& q, const TensorView& k, const TensorView& v,
                  const TensorView& out) {
  const DType dtype = q.dtype;
  if (dtype != DType::Float32 && dtype != DType::BFloat16 && dtype != DType::Float16) {
    fail("float32/bfloat16/float16 only");
  }
  if (k.dtype != dtype || v.dtype != dtype || out.dtype != dtype) {
    fail("query, key, value and output must share one dtype");
  }
}

// Element (row, col) of head (b, h) of a 4-D view of T, with strides in elements.
template <typename T>
struct HeadMatrix {
  const T* data;
  int64_t row_stride, col_stride;
  HeadMatrix(const TensorView& view, int64_t b, int64_t h)
      : data(static_cast<const T*>(view.data) + b * view.strides[0] + h * view.strides[1]),
        row_stride(view.strides[2]),
        col_stride(view.strides[3]) {}
  const T* row(int64_t r) const { return data + r * row_stride; }
};

// dst[i] = float(src[i]) for a contiguous run of n elements.
template <typename T>
void widen_run(const T* src, float* dst, int64_t n) {
  if constexpr (std::is_same_v<T, Half>) {
    attention_convert::widen_half(reinterpret_cast<const uint16_t*>(src), dst, n);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    attention_convert::widen_bfloat16(reinterpret_cast<const uint16_t*>(src), dst, n);
  } else {
    std::copy(src, src + n, dst);
  }
}

// dst[i] = src[i] rounded to T, for a contiguous run of n elements.
template <typename T>
void narrow_run(const float* src, T* dst, int64_t n) {
  if constexpr (std::is_same_v<T, Half>) {
    attention_convert::narrow_half(src, reinterpret_cast<uint16_t*>(dst), n);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    attention_convert::narrow_bfloat16(src, reinterpret_cast<uint16_t*>(dst), n);
  } else {
    std::copy(src, src + n, dst);
  }
}

// dst[r * ld + c] = src(row0 + r, c) for r < rows, c < cols, widened to fp32.
template <typename T>
void pack_rows(float* dst, int64_t ld, const HeadMatrix<T>& src, int64_t row0, int64_t rows,
               int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* from = src.row(row0 + r);
    float* to = dst + r * ld;
    if (src.col_stride == 1) {
      widen_run(from, to, cols);
    } else {
      for (int64_t c = 0; c < cols; ++c) to[c] = cast_value<float>(from[c * src.col_stride]);
    }
  }
}

// dst[c * ld + r] = src(row0 + r, c): the transposed block, widened to fp32. Whole 16 x 16
// tiles go through registers (element-wise strided stores stall on 4K aliasing).
template <typename T>
void pack_transposed(float* dst, int64_t ld, const HeadMatrix<T>& src, int64_t row0, int64_t rows,
                     int64_t cols) {
  constexpr int64_t kTile = 16;
  const int64_t tiled_rows = src.col_stride == 1 ? rows - rows % kTile : 0;
  const int64_t tiled_cols = cols - cols % kTile;
  alignas(64) float tile[kTile * kTile];
  for (int64_t r0 = 0; r0 < tiled_rows; r0 += kTile) {
    for (int64_t c0 = 0; c0 < tiled_cols; c0 += kTile) {
      const float* tile_src;
      int64_t tile_ld;
      if constexpr (std::is_same_v<T, float>) {
        tile_src = src.row(row0 + r0) + c0;
        tile_ld = src.row_stride;
      } else {
        for (int64_t r = 0; r < kTile; ++r) {
          const T* from = src.row(row0 + r0 + r) + c0;
          widen_run(from, tile + r * kTile, kTile);
        }
        tile_src = tile;
        tile_ld = kTile;
      }
      attention_blocks::transpose_16x16(tile_src, tile_ld, dst + c0 * ld + r0, ld);
    }
    for (int64_t r = r0; r < r0 + kTile; ++r) {  // columns past the last whole tile
      const T* from = src.row(row0 + r);
      for (int64_t c = tiled_cols; c < cols; ++c) dst[c * ld + r] = cast_value<float>(from[c]);
    }
  }
  for (int64_t r = tiled_rows; r < rows; ++r) {
    const T* from = src.row(row0 + r);
    for (int64_t c = 0; c < cols; ++c)
      dst[c * ld + r] = cast_value<float>(from[c * src.col_stride]);
  }
}

// Rows [row0, row0 + rows) of head (b, h) of a 4-D view of T = src[r * ld + c], rounded once.
template <typename T>
void store_rows(const TensorView& view, int64_t b, int64_t h, int64_t row0, int64_t rows,
                const float* src, int64_t ld) {
  T* base = static_cast<T*>(view.data) + b * view.strides[0] + h * view.strides[1];
  const int64_t cols = view.sizes[3], col_stride = view.strides[3];
  for (int64_t r = 0; r < rows; ++r) {
    T* to = base + (row0 + r) * view.strides[2];
    const float* from = src + r * ld;
    if (col_stride == 1) {
      narrow_run(from, to, cols);
    } else {
      for (int64_t c = 0; c < cols; ++c) to[c * col_stride] = cast_value<T>(from[c]);
    }
  }
}

// lse or any [B, H, L] fp32-or-other view: element (b, h, row) as a byte pointer.
char* vector_element(const TensorView& view, int64_t b, int64_t h, int64_t row) {
  return static_cast<char*>(view.data) +
         (b * view.strides[0] + h * view.strides[1] + row * view.strides[2]) *
             static_cast<int64_t>(element_size(view.dtype));
}

// Scales a block of raw scores (rows x cols, leading dimension ld; query rows from row0, keys
// from col0) and applies the additive/boolean mask and the causal limit (-inf when masked).
void finish_scores(float* scores, int64_t ld, int64_t rows, int64_t cols, int64_t row0,
                   int64_t col0, int64_t b, int64_t h, float scale, const TensorView* mask,
                   bool is_causal, float* mask_row) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = scores + r * ld;
    attention_blocks::scale_row(row, cols, scale);
    if (mask != nullptr) {
      const int64_t item = static_cast<int64_t>(element_size(mask->dtype));
      const char* src = static_cast<const char*>(mask->data) +
                        (b * mask->strides[0] + h * mask->strides[1] +
                         (row0 + r) * mask->strides[2] + col0 * mask->strides[3]) *
                            item;
      load_row<float>(mask_row, src, mask->strides[3] * item, mask->dtype, cols);
      if (mask->dtype == DType::Bool) {
        for (int64_t j = 0; j < cols; ++j) row[j] = mask_row[j] != 0.0f ? row[j] : kNegInf;
      } else {
        for (int64_t j = 0; j < cols; ++j) row[j] += mask_row[j];
      }
    }
    if (is_causal) {
      // Query row i attends keys j <= i.
      const int64_t first_masked = std::max<int64_t>(row0 + r + 1 - col0, 0);
      for (int64_t j = first_masked; j < cols; ++j) row[j] = kNegInf;
    }
  }
}

// Keys a block of query rows [row0, row0 + rows) may attend: all, or up to the last row's
// diagonal under the causal limit.
int64_t attended_keys(const Dims& d, bool is_causal, int64_t row0, int64_t rows) {
  return is_causal ? std::min(d.kv_len, row0 + rows) : d.kv_len;
}

// Fills keep[j] (j < count) with 1/(1-p) or 0 for keys [col0, col0 + count) of query row
// `row` of head (b, h): element (b, h, row, j) reads lane g % 4 of Philox block offset + g / 4,
// g its row-major index in [B, H, L, S].
void dropout_keep(float* keep, int64_t b, int64_t h, int64_t row, int64_t col0, int64_t count,
                  const Dims& d, const AttentionParams& p) {
  const uint64_t first =
      static_cast<uint64_t>(((b * d.heads + h) * d.q_len + row) * d.kv_len + col0);
  const float threshold = static_cast<float>(p.dropout_p);
  const float scale = static_cast<float>(1.0 / (1.0 - p.dropout_p));
  constexpr float kTwoToMinus32 = 2.3283064365386963e-10f;
  PhiloxBlock block{};
  uint64_t block_index = ~uint64_t{0};
  for (int64_t j = 0; j < count; ++j) {
    const uint64_t g = first + static_cast<uint64_t>(j);
    if (g / 4 != block_index) {
      block_index = g / 4;
      block = philox_block(p.seed, p.offset + block_index);
    }
    const float u = static_cast<float>(block[g % 4]) * kTwoToMinus32;
    keep[j] = u < threshold ? 0.0f : scale;
  }
}

// Carves consecutive 64-byte aligned float arrays out of one scratch block.
class ScratchLayout {
 public:
  int64_t add(int64_t count) {
    const int64_t at = total_;
    total_ += (std::max<int64_t>(count, 0) + 15) / 16 * 16;
    return at;
  }
  int64_t total() const { return total_ + 16; }

 private:
  int64_t total_ = 0;
};

float* aligned(float* base) {
  const auto address = reinterpret_cast<uintptr_t>(base);
  return reinterpret_cast<float*>((address + 63) & ~uintptr_t{63});
}

template <typename T>
void forward_typed(const TensorView& out, const TensorView& lse, const TensorView& q,
                   const TensorView& k, const TensorView& v, const TensorView* mask,
                   const AttentionParams& params, const Dims& d) {
  const int64_t E = d.head_dim, Ev = d.value_dim;
  const int64_t query_blocks = (d.q_len + kQueryBlock - 1) / kQueryBlock;
  const int64_t tasks = d.batch * d.heads * query_blocks;
  const int64_t group = d.group();
  const bool dropout = params.dropout_p > 0.0;
  const float scale = static_cast<float>(params.scale);

  ScratchLayout layout;
  const int64_t at_queries = layout.add(kQueryBlock * E);
  const int64_t at_keys_t = layout.add(E * d.kv_len);   // K^T of the current (b, kv head)
  const int64_t at_values = layout.add(d.kv_len * Ev);  // V of the current (b, kv head)
  const int64_t at_scores = layout.add(kQueryBlock * kKeyBlock);
  const int64_t at_acc = layout.add(kQueryBlock * Ev);
  const int64_t at_max = layout.add(kQueryBlock);
  const int64_t at_sum = layout.add(kQueryBlock);
  const int64_t at_row = layout.add(kKeyBlock);

  parallel_for(0, tasks, 1, [&](int64_t task_begin, int64_t task_end) {
    ScratchFloats scratch;
    float* base = aligned(scratch.acquire(static_cast<size_t>(layout.total()), false));
    float* queries = base + at_queries;
    float* keys_t = base + at_keys_t;
    float* values = base + at_values;
    float* scores = base + at_scores;
    float* acc = base + at_acc;
    float* row_max = base + at_max;
    float* row_sum = base + at_sum;
    float* scratch_row = base + at_row;
    // Consecutive tasks share (batch, kv head) across query blocks and grouped heads: the
    // widened K^T and V are packed once per change, for the keys needed so far.
    int64_t packed_b = -1, packed_kvh = -1, packed_keys = 0;
    for (int64_t task = task_begin; task < task_end; ++task) {
      const int64_t block = task % query_blocks;
      const int64_t h = (task / query_blocks) % d.heads;
      const int64_t b = task / (query_blocks * d.heads);
      const int64_t kvh = h / group;
      const int64_t row0 = block * kQueryBlock;
      const int64_t rows = std::min(kQueryBlock, d.q_len - row0);
      const HeadMatrix<T> q_head(q, b, h), k_head(k, b, kvh), v_head(v, b, kvh);
      const int64_t keys = attended_keys(d, params.is_causal, row0, rows);
      if (b != packed_b || kvh != packed_kvh) {
        packed_b = b;
        packed_kvh = kvh;
        packed_keys = 0;
      }
      if (keys > packed_keys) {
        pack_transposed(keys_t + packed_keys, d.kv_len, k_head, packed_keys, keys - packed_keys, E);
        pack_rows(values + packed_keys * Ev, Ev, v_head, packed_keys, keys - packed_keys, Ev);
        packed_keys = keys;
      }
      pack_rows(queries, E, q_head, row0, rows, E);
      std::fill(acc, acc + rows * Ev, 0.0f);
      std::fill(row_max, row_max + rows, kNegInf);
      std::fill(row_sum, row_sum + rows, 0.0f);
      for (int64_t col0 = 0; col0 < keys; col0 += kKeyBlock) {
        const int64_t cols = std::min(kKeyBlock, keys - col0);
        block_gemm(rows, cols, E, queries, E, 1, keys_t + col0, d.kv_len, scores, cols, false);
        finish_scores(scores, cols, rows, cols, row0, col0, b, h, scale, mask, params.is_causal,
                      scratch_row);
        for (int64_t r = 0; r < rows; ++r) {
          float* row = scores + r * cols;
          const float block_max = attention_blocks::row_max(row, cols);
          if (block_max == kNegInf) {  // every key of this block masked: no weight
            std::fill(row, row + cols, 0.0f);
            continue;
          }
          const float new_max = std::max(row_max[r], block_max);
          const float block_sum = attention_blocks::exp_shifted_sum(row, cols, new_max);
          // Rescale what earlier blocks accumulated to the new maximum.
          const float correction = row_max[r] == kNegInf ? 0.0f : std::exp(row_max[r] - new_max);
          if (correction != 1.0f) attention_blocks::scale_row(acc + r * Ev, Ev, correction);
          row_sum[r] = row_sum[r] * correction + block_sum;
          row_max[r] = new_max;
          if (dropout) {
            dropout_keep(scratch_row, b, h, row0 + r, col0, cols, d, params);
            for (int64_t j = 0; j < cols; ++j) row[j] *= scratch_row[j];
          }
        }
        block_gemm(rows, Ev, cols, scores, cols, 1, values + col0 * Ev, Ev, acc, Ev, true);
      }
      for (int64_t r = 0; r < rows; ++r) {
        const bool empty = row_max[r] == kNegInf;  // every key masked: output 0, lse -inf
        attention_blocks::scale_row(acc + r * Ev, Ev, empty ? 0.0f : 1.0f / row_sum[r]);
        scratch_row[r] = empty ? kNegInf : row_max[r] + std::log(row_sum[r]);
      }
      store_rows<T>(out, b, h, row0, rows, acc, Ev);
      store_row<float>(vector_element(lse, b, h, row0),
                       lse.strides[2] * static_cast<int64_t>(element_size(lse.dtype)), lse.dtype,
                       scratch_row, rows);
    }
  });
}

template <typename T>
void backward_typed(const TensorView* grad_q, const TensorView* grad_k, const TensorView* grad_v,
                    const TensorView* grad_mask, const TensorView& grad_out, const TensorView& q,
                    const TensorView& k, const TensorView& v, const TensorView& out,
                    const TensorView& lse, const TensorView* mask, const AttentionParams& params,
                    const Dims& d) {
  const int64_t E = d.head_dim, Ev = d.value_dim, S = d.kv_len;
  const int64_t group = d.group();
  const bool dropout = params.dropout_p > 0.0;
  const float scale = static_cast<float>(params.scale);
  const bool want_q = grad_q != nullptr && grad_q->numel() > 0;
  const bool want_k = grad_k != nullptr && grad_k->numel() > 0;
  const bool want_v = grad_v != nullptr && grad_v->numel() > 0;
  const bool want_mask = grad_mask != nullptr && grad_mask->numel() > 0;
  // D, the softmax backward's per-row correction, is rowsum(dO * O). For 16-bit inputs the
  // saved O is rounded, and where a gradient cancels to near 0 that rounding dominates it, so D
  // comes from the fp32 P and dP instead (free for one key block; otherwise one extra pass of
  // two block products). The recomputed exp(s - lse) also carries lse's rounding, one relative
  // error per row that the gradient turns into an absolute one, so 16-bit rows of P are
  // divided by their own sum.
  constexpr bool exact_correction = !std::is_same_v<T, float>;
  enum class RowNorm { kNone, kAddToSum, kBySelf, kByScale };

  ScratchLayout layout;
  const int64_t at_keys = layout.add(S * E);       // K, row-major
  const int64_t at_keys_t = layout.add(E * S);     // K^T
  const int64_t at_values_t = layout.add(Ev * S);  // V^T
  const int64_t at_d_keys = layout.add(S * E);
  const int64_t at_d_values = layout.add(S * Ev);
  const int64_t at_queries = layout.add(kQueryBlock * E);
  const int64_t at_d_queries = layout.add(kQueryBlock * E);
  const int64_t at_d_out = layout.add(kQueryBlock * Ev);
  const int64_t at_outs = layout.add(kQueryBlock * Ev);
  const int64_t at_probs = layout.add(kQueryBlock * kKeyBlock);
  const int64_t at_kept = layout.add(dropout ? kQueryBlock * kKeyBlock : 0);
  const int64_t at_keep = layout.add(dropout ? kQueryBlock * kKeyBlock : 0);
  const int64_t at_d_probs = layout.add(kQueryBlock * kKeyBlock);
  const int64_t at_lse = layout.add(kQueryBlock);
  const int64_t at_dot = layout.add(kQueryBlock);
  const int64_t at_sum = layout.add(kQueryBlock);
  const int64_t at_scale = layout.add(kQueryBlock);
  const int64_t at_row = layout.add(kKeyBlock);

  parallel_for(0, d.batch * d.kv_heads, 1, [&](int64_t task_begin, int64_t task_end) {
    ScratchFloats scratch;
    float* base = aligned(scratch.acquire(static_cast<size_t>(layout.total()), false));
    float* keys = base + at_keys;
    float* keys_t = base + at_keys_t;
    float* values_t = base + at_values_t;
    float* d_keys = base + at_d_keys;
    float* d_values = base + at_d_values;
    float* queries = base + at_queries;
    float* d_queries = base + at_d_queries;
    float* d_out = base + at_d_out;
    float* outs = base + at_outs;
    float* probs = base + at_probs;
    float* kept = base + at_kept;
    float* keep = base + at_keep;
    float* d_probs = base + at_d_probs;
    float* row_lse = base + at_lse;
    float* row_dot = base + at_dot;
    float* row_sum = base + at_sum;
    float* row_scale = base + at_scale;
    float* scratch_row = base + at_row;
    for (int64_t task = task_begin; task < task_end; ++task) {
      const int64_t b = task / d.kv_heads;
      const int64_t kvh = task % d.kv_heads;
      const HeadMatrix<T> k_head(k, b, kvh), v_head(v, b, kvh);
      pack_rows(keys, E, k_head, 0, S, E);
      pack_transposed(keys_t, S, k_head, 0, S, E);
      pack_transposed(values_t, S, v_head, 0, S, Ev);
      std::fill(d_keys, d_keys + S * E, 0.0f);
      std::fill(d_values, d_values + S * Ev, 0.0f);
      for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h) {
        const HeadMatrix<T> q_head(q, b, h), go_head(grad_out, b, h), out_head(out, b, h);
        for (int64_t row0 = 0; row0 < d.q_len; row0 += kQueryBlock) {
          const int64_t rows = std::min(kQueryBlock, d.q_len - row0);
          pack_rows(queries, E, q_head, row0, rows, E);
          pack_rows(d_out, Ev, go_head, row0, rows, Ev);
          if (!exact_correction) pack_rows(outs, Ev, out_head, row0, rows, Ev);
          load_row<float>(row_lse, vector_element(lse, b, h, row0),
                          lse.strides[2] * static_cast<int64_t>(element_size(lse.dtype)), lse.dtype,
                          rows);
          const int64_t keys_attended = attended_keys(d, params.is_causal, row0, rows);
          // Probabilities of keys [col0, col0 + cols), recomputed from the saved logsumexp and
          // normalized as `norm` says (and their dropped form in `kept`).
          auto block_probabilities = [&](int64_t col0, int64_t cols, RowNorm norm) {
            block_gemm(rows, cols, E, queries, E, 1, keys_t + col0, S, probs, cols, false);
            finish_scores(probs, cols, rows, cols, row0, col0, b, h, scale, mask, params.is_causal,
                          scratch_row);
            for (int64_t r = 0; r < rows; ++r) {
              float* row = probs + r * cols;
              if (row_lse[r] == kNegInf) {
                std::fill(row, row + cols, 0.0f);
              } else {
                attention_blocks::exp_shifted(row, cols, row_lse[r]);
              }
              if (norm == RowNorm::kAddToSum || norm == RowNorm::kBySelf) {
                float sum = 0.0f;
                for (int64_t j = 0; j < cols; ++j) sum += row[j];
                if (norm == RowNorm::kAddToSum) row_sum[r] += sum;
                if (norm == RowNorm::kBySelf) row_scale[r] = sum > 0.0f ? 1.0f / sum : 0.0f;
              }
              if (norm == RowNorm::kBySelf || norm == RowNorm::kByScale) {
                attention_blocks::scale_row(row, cols, row_scale[r]);
              }
              if (dropout) {
                float* keep_row = keep + r * cols;
                dropout_keep(keep_row, b, h, row0 + r, col0, cols, d, params);
                for (int64_t j = 0; j < cols; ++j) kept[r * cols + j] = row[j] * keep_row[j];
              }
            }
          };
          // dP = (dO V^T) * keep for the same keys.
          auto block_d_probs = [&](int64_t col0, int64_t cols) {
            block_gemm(rows, cols, Ev, d_out, Ev, 1, values_t + col0, S, d_probs, cols, false);
            if (dropout) {
              for (int64_t j = 0; j < rows * cols; ++j) d_probs[j] *= keep[j];
            }
          };
          // row_dot += rowsum(P * dP) over the block: D = rowsum(dO * O) with O unrounded.
          auto add_block_correction = [&](int64_t cols) {
            for (int64_t r = 0; r < rows; ++r) {
              row_dot[r] += attention_blocks::dot(probs + r * cols, d_probs + r * cols, cols);
            }
          };
          const bool one_key_block = keys_attended <= kKeyBlock;
          if (!exact_correction) {
            for (int64_t r = 0; r < rows; ++r) {
              row_dot[r] = attention_blocks::dot(d_out + r * Ev, outs + r * Ev, Ev);
            }
          } else {
            std::fill(row_dot, row_dot + rows, 0.0f);
            std::fill(row_sum, row_sum + rows, 0.0f);
            for (int64_t col0 = 0; !one_key_block && col0 < keys_attended; col0 += kKeyBlock) {
              const int64_t cols = std::min(kKeyBlock, keys_attended - col0);
              block_probabilities(col0, cols, RowNorm::kAddToSum);
              block_d_probs(col0, cols);
              add_block_correction(cols);
            }
            for (int64_t r = 0; !one_key_block && r < rows; ++r) {
              row_scale[r] = row_sum[r] > 0.0f ? 1.0f / row_sum[r] : 0.0f;
              row_dot[r] *= row_scale[r];
            }
          }
          const RowNorm norm = !exact_correction ? RowNorm::kNone
                               : one_key_block   ? RowNorm::kBySelf
                                                 : RowNorm::kByScale;
          std::fill(d_queries, d_queries + rows * E, 0.0f);
          for (int64_t col0 = 0; col0 < keys_attended; col0 += kKeyBlock) {
            const int64_t cols = std::min(kKeyBlock, keys_attended - col0);
            block_probabilities(col0, cols, norm);
            // dV[keys] += dropped(P)^T dO
            block_gemm(cols, Ev, rows, dropout ? kept : probs, 1, cols, d_out, Ev,
                       d_values + col0 * Ev, Ev, true);
            // dS = P * (dP - D)
            block_d_probs(col0, cols);
            if (exact_correction && one_key_block) add_block_correction(cols);
            for (int64_t r = 0; r < rows; ++r) {
              float* dp = d_probs + r * cols;
              const float* p = probs + r * cols;
              const float correction = row_dot[r];
              for (int64_t j = 0; j < cols; ++j) dp[j] = p[j] * (dp[j] - correction);
            }
            if (want_mask) {
              for (int64_t r = 0; r < rows; ++r) {
                const int64_t item = static_cast<int64_t>(element_size(grad_mask->dtype));
                char* dst = static_cast<char*>(grad_mask->data) +
                            (b * grad_mask->strides[0] + h * grad_mask->strides[1] +
                             (row0 + r) * grad_mask->strides[2] + col0 * grad_mask->strides[3]) *
                                item;
                store_row<float>(dst, grad_mask->strides[3] * item, grad_mask->dtype,
                                 d_probs + r * cols, cols);
              }
            }
            // dQ += dS K ; dK[keys] += dS^T Q (both scaled at the end)
            if (want_q) {
              block_gemm(rows, E, cols, d_probs, cols, 1, keys + col0 * E, E, d_queries, E, true);
            }
            block_gemm(cols, E, rows, d_probs, 1, cols, queries, E, d_keys + col0 * E, E, true);
          }
          if (want_mask && keys_attended < S) {  // keys past the causal limit get no gradient
            std::fill(scratch_row, scratch_row + kKeyBlock, 0.0f);
            for (int64_t r = 0; r < rows; ++r) {
              const int64_t item = static_cast<int64_t>(element_size(grad_mask->dtype));
              char* dst =
                  static_cast<char*>(grad_mask->data) +
                  (b * grad_mask->strides[0] + h * grad_mask->strides[1] +
                   (row0 + r) * grad_mask->strides[2] + keys_attended * grad_mask->strides[3]) *
                      item;
              for (int64_t c0 = 0; c0 < S - keys_attended; c0 += kKeyBlock) {
                store_row<float>(dst + c0 * grad_mask->strides[3] * item,
                                 grad_mask->strides[3] * item, grad_mask->dtype, scratch_row,
                                 std::min(kKeyBlock, S - keys_attended - c0));
              }
            }
          }
          if (want_q) {
            attention_blocks::scale_row(d_queries, rows * E, scale);
            store_rows<T>(*grad_q, b, h, row0, rows, d_queries, E);
          }
        }
      }
      if (want_k) {
        attention_blocks::scale_row(d_keys, S * E, scale);
        store_rows<T>(*grad_k, b, kvh, 0, S, d_keys, E);
      }
      if (want_v) store_rows<T>(*grad_v, b, kvh, 0, S, d_values, Ev);
    }
  });
}

}  // namespace

uint64_t attention_dropout_offset_increment(int64_t batch, int64_t heads, int64_t q_len,
                                            int64_t kv_len) {
  const uint64_t elements = static_cast<uint64_t>(batch * heads * q_len * kv_len);
  return (elements + 3) / 4;
}

void attention_forward(const TensorView& out, const TensorView& lse, const TensorView& q,
                       const TensorView& k, const TensorView& v, const TensorView* mask,
                       const AttentionParams& params) {
  check_dtypes(q, k, v, out);
  const Dims d = check_dims(q, k, v, out, mask);
  if (out.numel() == 0 && lse.numel() == 0) return;
  switch (q.dtype) {
    case DType::BFloat16:
      return forward_typed<BFloat16>(out, lse, q, k, v, mask, params, d);
    case DType::Float16:
      return forward_typed<Half>(out, lse, q, k, v, mask, params, d);
    default:
      return forward_typed<float>(out, lse, q, k, v, mask, params, d);
  }
}

void attention_backward(const TensorView* grad_q, const TensorView* grad_k,
                        const TensorView* grad_v, const TensorView* grad_mask,
                        const TensorView& grad_out, const TensorView& q, const TensorView& k,
                        const TensorView& v, const TensorView& out, const TensorView& lse,
                        const TensorView* mask, const AttentionParams& params) {
  check_dtypes(q, k, v, out);
  if (grad_out.dtype != q.dtype) fail("grad_out must share the inputs' dtype");
  const Dims d = check_dims(q, k, v, out, mask);
  for (const TensorView* grad : {grad_q, grad_k, grad_v}) {
    if (grad != nullptr && grad->numel() > 0 && grad->dtype != q.dtype) {
      fail("gradients must share the inputs' dtype");
    }
  }
  switch (q.dtype) {
    case DType::BFloat16:
      return backward_typed<BFloat16>(grad_q, grad_k, grad_v, grad_mask, grad_out, q, k, v, out,
                                      lse, mask, params, d);
    case DType::Float16:
      return backward_typed<Half>(grad_q, grad_k, grad_v, grad_mask, grad_out, q, k, v, out, lse,
                                  mask, params, d);
    default:
      return backward_typed<float>(grad_q, grad_k, grad_v, grad_mask, grad_out, q, k, v, out, lse,
                                   mask, params, d);
  }
}

}  // namespace openneuron::kernels::OPENNEURON_ISA_NAMESPACE
OPENNEURON_ISA_END
