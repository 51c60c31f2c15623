// Blocked attention: one parallel task per (batch, key/value head), so grouped query heads
// that share keys accumulate their key/value gradients without races.
#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <vector>

#include "kernels/cast.h"
#include "kernels/dense_float.h"
#include "kernels/nn_blas.h"
#include "kernels/parallel.h"
#include "kernels/philox.h"
#include "kernels/row_io.h"

namespace openneuron::kernels {
namespace {

// Query rows per block: the memory bound of a task is O(block * S).
constexpr int64_t kQueryBlock = 256;
// OpenBLAS runs an sgemm with M*N*K <= 2^18 on the calling thread and larger ones on its own
// threads. Its threads inside parallel_for tasks oversubscribe the cores badly (measured tens
// of times slower), so tasks run in parallel only when every sgemm stays single-threaded;
// otherwise tasks run one after another and OpenBLAS parallelises each product.
constexpr int64_t kSingleThreadGemmVolume = int64_t{1} << 18;

// Runs body(task_begin, task_end) over [0, tasks): in parallel for small products, else inline.
void for_each_task(int64_t tasks, int64_t q_len, int64_t kv_len, int64_t head_dim,
                   int64_t value_dim, const std::function<void(int64_t, int64_t)>& body) {
  const int64_t volume = std::min(kQueryBlock, q_len) * kv_len * std::max(head_dim, value_dim);
  if (volume <= kSingleThreadGemmVolume) {
    parallel_for(0, tasks, 1, body);
  } else {
    body(0, tasks);
  }
}

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

[[noreturn]] void fail(const char* message) {
  throw std::invalid_argument(std::string("openneuron kernels: attention: ") + message);
}

// Rows [row0, row0 + rows) of head (b, h) of a 4-D view, as a 2-D view.
TensorView head_rows(const TensorView& view, int64_t b, int64_t h, int64_t row0, int64_t rows) {
  TensorView m;
  m.dtype = view.dtype;
  m.ndim = 2;
  m.sizes[0] = rows;
  m.sizes[1] = view.sizes[3];
  m.strides[0] = view.strides[2];
  m.strides[1] = view.strides[3];
  m.data = static_cast<char*>(view.data) +
           (b * view.strides[0] + h * view.strides[1] + row0 * view.strides[2]) *
               static_cast<int64_t>(element_size(view.dtype));
  return m;
}

TensorView dense_matrix(float* data, int64_t rows, int64_t cols) {
  TensorView m;
  m.data = data;
  m.dtype = DType::Float32;
  m.ndim = 2;
  m.sizes[0] = rows;
  m.sizes[1] = cols;
  m.strides[0] = cols;
  m.strides[1] = 1;
  return m;
}

void load(float* dst, const TensorView& src) {
  if (src.numel() > 0) copy(dense_matrix(dst, src.sizes[0], src.sizes[1]), src);
}
void store(const TensorView& dst, const float* src) {
  if (dst.numel() > 0) copy(dst, dense_matrix(const_cast<float*>(src), dst.sizes[0], dst.sizes[1]));
}

struct Dims {
  int64_t batch, heads, kv_heads, q_len, kv_len, head_dim, value_dim;
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

// Adds the mask and the causal limit to a block of scores rows [row0, row0 + rows).
void apply_masks(float* scores, int64_t rows, int64_t row0, int64_t b, int64_t h, const Dims& d,
                 const TensorView* mask, bool is_causal, std::vector<float>& mask_row) {
  const int64_t s_len = d.kv_len;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = scores + r * s_len;
    if (mask != nullptr) {
      const int64_t item = static_cast<int64_t>(element_size(mask->dtype));
      const char* src = static_cast<const char*>(mask->data) +
                        (b * mask->strides[0] + h * mask->strides[1] +
                         (row0 + r) * mask->strides[2]) * item;
      load_row<float>(mask_row.data(), src, mask->strides[3] * item, mask->dtype, s_len);
      if (mask->dtype == DType::Bool) {
        for (int64_t j = 0; j < s_len; ++j) row[j] = mask_row[j] != 0.0f ? row[j] : kNegInf;
      } else {
        for (int64_t j = 0; j < s_len; ++j) row[j] += mask_row[j];
      }
    }
    if (is_causal) {
      for (int64_t j = std::max<int64_t>(row0 + r + 1, 0); j < s_len; ++j) row[j] = kNegInf;
    }
  }
}

// Fills keep[j] with 1/(1-p) or 0 for the keys of query row `row` of head (b, h): element
// (b, h, row, j) reads lane g % 4 of Philox block offset + g / 4, g its row-major index.
void dropout_row(float* keep, int64_t b, int64_t h, int64_t row, const Dims& d,
                 const AttentionParams& p) {
  const uint64_t first = static_cast<uint64_t>(((b * d.heads + h) * d.q_len + row) * d.kv_len);
  const float threshold = static_cast<float>(p.dropout_p);
  const float scale = static_cast<float>(1.0 / (1.0 - p.dropout_p));
  constexpr float kTwoToMinus32 = 2.3283064365386963e-10f;
  PhiloxBlock block{};
  uint64_t block_index = ~uint64_t{0};
  for (int64_t j = 0; j < d.kv_len; ++j) {
    const uint64_t g = first + static_cast<uint64_t>(j);
    if (g / 4 != block_index) {
      block_index = g / 4;
      block = philox_block(p.seed, p.offset + block_index);
    }
    const float u = static_cast<float>(block[g % 4]) * kTwoToMinus32;
    keep[j] = u < threshold ? 0.0f : scale;
  }
}

void check_dtypes(const TensorView& q, const TensorView& k, const TensorView& v) {
  for (const TensorView* t : {&q, &k, &v}) {
    if (t->dtype != DType::Float32 && t->dtype != DType::BFloat16 && t->dtype != DType::Float16) {
      fail("float32/bfloat16/float16 only");
    }
  }
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
  check_dtypes(q, k, v);
  const Dims d = check_dims(q, k, v, out, mask);
  if (out.numel() == 0 && lse.numel() == 0) return;
  const int64_t group = d.kv_heads == 0 ? 1 : d.heads / d.kv_heads;
  const bool dropout = params.dropout_p > 0.0;
  const float scale = static_cast<float>(params.scale);
  for_each_task(d.batch * d.kv_heads, d.q_len, d.kv_len, d.head_dim, d.value_dim,
                [&](int64_t task_begin, int64_t task_end) {
    std::vector<float> keys(static_cast<size_t>(d.kv_len * d.head_dim));
    std::vector<float> values(static_cast<size_t>(d.kv_len * d.value_dim));
    std::vector<float> queries(static_cast<size_t>(kQueryBlock * d.head_dim));
    std::vector<float> scores(static_cast<size_t>(kQueryBlock * d.kv_len));
    std::vector<float> result(static_cast<size_t>(kQueryBlock * d.value_dim));
    std::vector<float> row_lse(static_cast<size_t>(kQueryBlock));
    std::vector<float> scratch_row(static_cast<size_t>(d.kv_len));
    for (int64_t task = task_begin; task < task_end; ++task) {
      const int64_t b = task / d.kv_heads;
      const int64_t kvh = task % d.kv_heads;
      load(keys.data(), head_rows(k, b, kvh, 0, d.kv_len));
      load(values.data(), head_rows(v, b, kvh, 0, d.kv_len));
      for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h) {
        for (int64_t row0 = 0; row0 < d.q_len; row0 += kQueryBlock) {
          const int64_t rows = std::min(kQueryBlock, d.q_len - row0);
          load(queries.data(), head_rows(q, b, h, row0, rows));
          nn_sgemm(false, true, rows, d.kv_len, d.head_dim, scale, queries.data(), d.head_dim,
                   keys.data(), d.head_dim, 0.0f, scores.data(), d.kv_len);
          if (d.head_dim == 0) std::fill(scores.begin(), scores.begin() + rows * d.kv_len, 0.0f);
          apply_masks(scores.data(), rows, row0, b, h, d, mask, params.is_causal, scratch_row);
          for (int64_t r = 0; r < rows; ++r) {
            float* row = scores.data() + r * d.kv_len;
            float max_value = kNegInf;
            for (int64_t j = 0; j < d.kv_len; ++j) max_value = std::max(max_value, row[j]);
            if (max_value == kNegInf) {  // every key masked: zero weights, lse -inf
              std::fill(row, row + d.kv_len, 0.0f);
              row_lse[r] = kNegInf;
              continue;
            }
            float sum = 0.0f;
            for (int64_t j = 0; j < d.kv_len; ++j) {
              row[j] = std::exp(row[j] - max_value);
              sum += row[j];
            }
            const float inverse = 1.0f / sum;
            for (int64_t j = 0; j < d.kv_len; ++j) row[j] *= inverse;
            row_lse[r] = max_value + std::log(sum);
            if (dropout) {
              dropout_row(scratch_row.data(), b, h, row0 + r, d, params);
              for (int64_t j = 0; j < d.kv_len; ++j) row[j] *= scratch_row[j];
            }
          }
          nn_sgemm(false, false, rows, d.value_dim, d.kv_len, 1.0f, scores.data(), d.kv_len,
                   values.data(), d.value_dim, 0.0f, result.data(), d.value_dim);
          if (d.kv_len == 0) std::fill(result.begin(), result.begin() + rows * d.value_dim, 0.0f);
          store(head_rows(out, b, h, row0, rows), result.data());
          TensorView lse_rows;
          lse_rows.dtype = lse.dtype;
          lse_rows.ndim = 2;
          lse_rows.sizes[0] = rows;
          lse_rows.sizes[1] = 1;
          lse_rows.strides[0] = lse.strides[2];
          lse_rows.strides[1] = 1;
          lse_rows.data = static_cast<char*>(lse.data) +
                          (b * lse.strides[0] + h * lse.strides[1] + row0 * lse.strides[2]) *
                              static_cast<int64_t>(element_size(lse.dtype));
          store(lse_rows, row_lse.data());
        }
      }
    }
  });
}

void attention_backward(const TensorView* grad_q, const TensorView* grad_k,
                        const TensorView* grad_v, const TensorView* grad_mask,
                        const TensorView& grad_out, const TensorView& q, const TensorView& k,
                        const TensorView& v, const TensorView& out, const TensorView& lse,
                        const TensorView* mask, const AttentionParams& params) {
  check_dtypes(q, k, v);
  const Dims d = check_dims(q, k, v, out, mask);
  const int64_t group = d.kv_heads == 0 ? 1 : d.heads / d.kv_heads;
  const bool dropout = params.dropout_p > 0.0;
  const float scale = static_cast<float>(params.scale);
  for_each_task(d.batch * d.kv_heads, d.q_len, d.kv_len, d.head_dim, d.value_dim,
                [&](int64_t task_begin, int64_t task_end) {
    const int64_t E = d.head_dim, Ev = d.value_dim, S = d.kv_len;
    std::vector<float> keys(static_cast<size_t>(S * E)), values(static_cast<size_t>(S * Ev));
    std::vector<float> d_keys(static_cast<size_t>(S * E)), d_values(static_cast<size_t>(S * Ev));
    std::vector<float> queries(static_cast<size_t>(kQueryBlock * E));
    std::vector<float> d_queries(static_cast<size_t>(kQueryBlock * E));
    std::vector<float> d_out(static_cast<size_t>(kQueryBlock * Ev));
    std::vector<float> outs(static_cast<size_t>(kQueryBlock * Ev));
    std::vector<float> probs(static_cast<size_t>(kQueryBlock * S));
    std::vector<float> d_probs(static_cast<size_t>(kQueryBlock * S));
    std::vector<float> row_lse(static_cast<size_t>(kQueryBlock));
    std::vector<float> keep(dropout ? static_cast<size_t>(kQueryBlock * S) : 0);
    std::vector<float> scratch_row(static_cast<size_t>(S));
    for (int64_t task = task_begin; task < task_end; ++task) {
      const int64_t b = task / d.kv_heads;
      const int64_t kvh = task % d.kv_heads;
      load(keys.data(), head_rows(k, b, kvh, 0, S));
      load(values.data(), head_rows(v, b, kvh, 0, S));
      std::fill(d_keys.begin(), d_keys.end(), 0.0f);
      std::fill(d_values.begin(), d_values.end(), 0.0f);
      for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h) {
        for (int64_t row0 = 0; row0 < d.q_len; row0 += kQueryBlock) {
          const int64_t rows = std::min(kQueryBlock, d.q_len - row0);
          load(queries.data(), head_rows(q, b, h, row0, rows));
          load(d_out.data(), head_rows(grad_out, b, h, row0, rows));
          load(outs.data(), head_rows(out, b, h, row0, rows));
          // lse is [B, H, L]: read its rows directly.
          {
            const int64_t item = static_cast<int64_t>(element_size(lse.dtype));
            const char* src = static_cast<const char*>(lse.data) +
                              (b * lse.strides[0] + h * lse.strides[1] + row0 * lse.strides[2]) * item;
            load_row<float>(row_lse.data(), src, lse.strides[2] * item, lse.dtype, rows);
          }
          // Probabilities recomputed from the saved logsumexp.
          nn_sgemm(false, true, rows, S, E, scale, queries.data(), E, keys.data(), E, 0.0f,
                   probs.data(), S);
          if (E == 0) std::fill(probs.begin(), probs.begin() + rows * S, 0.0f);
          apply_masks(probs.data(), rows, row0, b, h, d, mask, params.is_causal, scratch_row);
          for (int64_t r = 0; r < rows; ++r) {
            float* row = probs.data() + r * S;
            const float row_max = row_lse[r];
            if (row_max == kNegInf) {
              std::fill(row, row + S, 0.0f);
            } else {
              for (int64_t j = 0; j < S; ++j) row[j] = std::exp(row[j] - row_max);
            }
            if (dropout) dropout_row(keep.data() + r * S, b, h, row0 + r, d, params);
          }
          // d_values += dropped(P)^T @ d_out
          const float* kept_probs = probs.data();
          if (dropout) {
            for (int64_t i = 0; i < rows * S; ++i) d_probs[i] = probs[i] * keep[i];
            kept_probs = d_probs.data();
          }
          nn_sgemm(true, false, S, Ev, rows, 1.0f, kept_probs, S, d_out.data(), Ev, 1.0f,
                   d_values.data(), Ev);
          // dP = (d_out @ V^T) * keep ; dS = P * (dP - rowsum(d_out * out))
          nn_sgemm(false, true, rows, S, Ev, 1.0f, d_out.data(), Ev, values.data(), Ev, 0.0f,
                   d_probs.data(), S);
          if (Ev == 0) std::fill(d_probs.begin(), d_probs.begin() + rows * S, 0.0f);
          for (int64_t r = 0; r < rows; ++r) {
            float dot = 0.0f;
            for (int64_t e = 0; e < Ev; ++e) dot += d_out[r * Ev + e] * outs[r * Ev + e];
            float* dp = d_probs.data() + r * S;
            const float* p = probs.data() + r * S;
            if (dropout) {
              const float* kp = keep.data() + r * S;
              for (int64_t j = 0; j < S; ++j) dp[j] = p[j] * (dp[j] * kp[j] - dot);
            } else {
              for (int64_t j = 0; j < S; ++j) dp[j] = p[j] * (dp[j] - dot);
            }
          }
          if (grad_mask != nullptr && grad_mask->numel() > 0) {
            for (int64_t r = 0; r < rows; ++r) {
              const int64_t item = static_cast<int64_t>(element_size(grad_mask->dtype));
              char* dst = static_cast<char*>(grad_mask->data) +
                          (b * grad_mask->strides[0] + h * grad_mask->strides[1] +
                           (row0 + r) * grad_mask->strides[2]) * item;
              store_row<float>(dst, grad_mask->strides[3] * item, grad_mask->dtype,
                               d_probs.data() + r * S, S);
            }
          }
          if (grad_q != nullptr && grad_q->numel() > 0) {
            nn_sgemm(false, false, rows, E, S, scale, d_probs.data(), S, keys.data(), E, 0.0f,
                     d_queries.data(), E);
            if (S == 0) std::fill(d_queries.begin(), d_queries.begin() + rows * E, 0.0f);
            store(head_rows(*grad_q, b, h, row0, rows), d_queries.data());
          }
          nn_sgemm(true, false, S, E, rows, scale, d_probs.data(), S, queries.data(), E, 1.0f,
                   d_keys.data(), E);
        }
      }
      if (grad_k != nullptr && grad_k->numel() > 0) store(head_rows(*grad_k, b, kvh, 0, S), d_keys.data());
      if (grad_v != nullptr && grad_v->numel() > 0) store(head_rows(*grad_v, b, kvh, 0, S), d_values.data());
    }
  });
}

}  // namespace openneuron::kernels
