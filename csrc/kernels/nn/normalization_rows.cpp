// Contiguous-row layer/RMS norm: per row, widen to fp32, reduce in double lanes (AVX-512
// where available), normalise and round once on store. Parallel over rows; the column sums
// of the backward are per-chunk double partials combined in chunk order (deterministic).
#include "kernels/nn/normalization_rows.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/attention/attention_convert.h"
#include "kernels/core/dense_float.h"
#include "kernels/core/element_types.h"
#include "kernels/runtime/isa_kernels.h"
#include "kernels/runtime/isa_variant.h"
#include "kernels/runtime/parallel.h"

OPENNEURON_ISA_BEGIN
namespace openneuron::kernels::OPENNEURON_ISA_NAMESPACE::normalization_rows {
namespace {

// Rows per parallel_for grain: a few rows amortise the dispatch on short rows.
int64_t row_grain(int64_t d) { return std::max<int64_t>(1, 4096 / std::max<int64_t>(d, 1)); }

#if OPENNEURON_KERNEL_AVX512
// fp32 -> fp64 lanes (the masked form: GCC 12's plain _mm512_cvtps_pd trips -Wuninitialized).
__m512d to_double(__m256 x) { return _mm512_mask_cvtps_pd(_mm512_setzero_pd(), 0xFF, x); }

double lanes_sum(__m512d lanes) {
  alignas(64) double values[8];
  _mm512_store_pd(values, lanes);
  double total = 0.0;
  for (double v : values) total += v;
  return total;
}
#endif

#if OPENNEURON_KERNEL_AVX512
// Elements per fp32 partial: each lane adds at most 8 terms in fp32 before the partial joins
// the double total (a conversion per element would cost more than the arithmetic).
constexpr int64_t kPartialBlock = 128;

__m512d add_lanes_to(__m512d total, __m512 partial) {
  alignas(64) float values[16];  // halves through memory: GCC 12's extract trips -Wuninitialized
  _mm512_store_ps(values, partial);
  total = _mm512_add_pd(total, to_double(_mm256_load_ps(values)));
  return _mm512_add_pd(total, to_double(_mm256_load_ps(values + 8)));
}
#endif

// Rows handled together: the reductions of one row form a long dependency chain (adds, then
// the division, square root and the second pass), so four rows interleave theirs.
constexpr int kRowGroup = 4;

// out[k] = sum(x[k], n) and, when deviations is set, out[k] = squared_deviations(x[k], n,
// shift[k]), for the kRowGroup rows x[k] (same arithmetic as the one-row forms).
void grouped_reduction(const float* const x[kRowGroup], int64_t n, const float* shift,
                       bool deviations, double out[kRowGroup]) {
  int64_t i = 0;
  for (int k = 0; k < kRowGroup; ++k) out[k] = 0.0;
#if OPENNEURON_KERNEL_AVX512
  __m512d lanes[kRowGroup];
  __m512 shifts[kRowGroup];
  for (int k = 0; k < kRowGroup; ++k) {
    lanes[k] = _mm512_setzero_pd();
    shifts[k] = _mm512_set1_ps(deviations ? shift[k] : 0.0f);
  }
  for (; i + 16 <= n;) {
    const int64_t block_end = std::min(n - n % 16, i + kPartialBlock);
    __m512 partial[kRowGroup];
    for (int k = 0; k < kRowGroup; ++k) partial[k] = _mm512_setzero_ps();
    for (; i < block_end; i += 16) {
      for (int k = 0; k < kRowGroup; ++k) {
        const __m512 v = _mm512_loadu_ps(x[k] + i);
        if (deviations) {
          const __m512 dv = _mm512_sub_ps(v, shifts[k]);
          partial[k] = _mm512_fmadd_ps(dv, dv, partial[k]);
        } else {
          partial[k] = _mm512_add_ps(partial[k], v);
        }
      }
    }
    for (int k = 0; k < kRowGroup; ++k) lanes[k] = add_lanes_to(lanes[k], partial[k]);
  }
  for (int k = 0; k < kRowGroup; ++k) out[k] = lanes_sum(lanes[k]);
#endif
  for (; i < n; ++i) {
    for (int k = 0; k < kRowGroup; ++k) {
      if (deviations) {
        const double dv = x[k][i] - shift[k];
        out[k] += dv * dv;
      } else {
        out[k] += x[k][i];
      }
    }
  }
}

// sum w*g and sum (w*g) * xhat with xhat = (x - mu) * rs; products in fp32, sums in double.
void weighted_grad_sums(const float* w, const float* g, const float* x, float mu, float rs,
                        int64_t n, double* sum_wg, double* sum_wg_xhat) {
  int64_t i = 0;
  double total_wg = 0.0, total_wgx = 0.0;
#if OPENNEURON_KERNEL_AVX512
  const __m256 m = _mm256_set1_ps(mu), r = _mm256_set1_ps(rs);
  __m512d acc_wg = _mm512_setzero_pd(), acc_wgx = _mm512_setzero_pd();
  __m512d acc_wg2 = _mm512_setzero_pd(), acc_wgx2 = _mm512_setzero_pd();
  for (; i + 16 <= n; i += 16) {  // two independent accumulator chains
    const __m256 wg = _mm256_mul_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(g + i));
    const __m256 xhat = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), m), r);
    const __m256 wg2 = _mm256_mul_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(g + i + 8));
    const __m256 xhat2 = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), m), r);
    const __m512d wg_d = to_double(wg), wg2_d = to_double(wg2);
    acc_wg = _mm512_add_pd(acc_wg, wg_d);
    acc_wgx = _mm512_fmadd_pd(wg_d, to_double(xhat), acc_wgx);
    acc_wg2 = _mm512_add_pd(acc_wg2, wg2_d);
    acc_wgx2 = _mm512_fmadd_pd(wg2_d, to_double(xhat2), acc_wgx2);
  }
  total_wg = lanes_sum(_mm512_add_pd(acc_wg, acc_wg2));
  total_wgx = lanes_sum(_mm512_add_pd(acc_wgx, acc_wgx2));
#endif
  for (; i < n; ++i) {
    const float wg = w[i] * g[i];
    total_wg += wg;
    total_wgx += static_cast<double>(wg) * ((x[i] - mu) * rs);
  }
  *sum_wg = total_wg;
  *sum_wg_xhat = total_wgx;
}

// Rounds n fp32 results into a row of T (16-bit types through the vector conversions).
template <typename T>
void store_results(T* dst, const float* results, int64_t n) {
  if constexpr (std::is_same_v<T, Half>) {
    attention_convert::narrow_half(results, reinterpret_cast<uint16_t*>(dst), n);
  } else {
    attention_convert::narrow_bfloat16(results, reinterpret_cast<uint16_t*>(dst), n);
  }
}

// Row r of an [R, D] view of T, as fp32: the row itself for float, else widened into buffer.
template <typename T>
const float* widen_row(const TensorView& view, int64_t r, float* buffer) {
  const T* row = static_cast<const T*>(view.data) + r * view.strides[0];
  if constexpr (std::is_same_v<T, float>) {
    return row;
  } else if constexpr (std::is_same_v<T, Half>) {
    attention_convert::widen_half(reinterpret_cast<const uint16_t*>(row), buffer, view.sizes[1]);
    return buffer;
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    attention_convert::widen_bfloat16(reinterpret_cast<const uint16_t*>(row), buffer,
                                      view.sizes[1]);
    return buffer;
  } else {
    const int64_t d = view.sizes[1];
    for (int64_t i = 0; i < d; ++i) buffer[i] = cast_value<float>(row[i]);
    return buffer;
  }
}

template <typename T>
T* row_of(const TensorView& view, int64_t r) {
  return static_cast<T*>(view.data) + r * view.strides[0];
}

template <typename T>
void forward_typed(const TensorView& out, const TensorView& input, const float* w, const float* b,
                   double eps, bool rms, double* mean, double* rstd) {
  const int64_t rows = input.sizes[0], d = input.sizes[1];
  parallel_for(0, rows, row_grain(d), [&](int64_t begin, int64_t end) {
    ScratchFloats scratch, result_scratch;
    float* buffer = scratch.acquire(static_cast<size_t>(kRowGroup * d), false);
    float* result_buffer =
        std::is_same_v<T, float> ? nullptr : result_scratch.acquire(static_cast<size_t>(d), false);
    for (int64_t r0 = begin; r0 < end; r0 += kRowGroup) {
      const int group = static_cast<int>(std::min<int64_t>(kRowGroup, end - r0));
      const float* x_rows[kRowGroup];
      for (int k = 0; k < kRowGroup; ++k) {  // missing rows repeat the first; results unused
        x_rows[k] = k < group ? widen_row<T>(input, r0 + k, buffer + k * d) : x_rows[0];
      }
      double totals[kRowGroup], m2[kRowGroup];
      float shifts[kRowGroup] = {};
      if (!rms) {
        grouped_reduction(x_rows, d, nullptr, /*deviations=*/false, totals);
        for (int k = 0; k < kRowGroup; ++k) {
          shifts[k] = static_cast<float>(d > 0 ? totals[k] / static_cast<double>(d) : 0.0);
        }
      }
      grouped_reduction(x_rows, d, shifts, /*deviations=*/true, m2);
      for (int k = 0; k < group; ++k) {
        mean[r0 + k] = rms || d == 0 ? 0.0 : totals[k] / static_cast<double>(d);
        rstd[r0 + k] = 1.0 / std::sqrt((d > 0 ? m2[k] / static_cast<double>(d) : 0.0) + eps);
      }
      for (int k = 0; k < group; ++k) {
        const int64_t r = r0 + k;
        const float* x = x_rows[k];
        const float muf = static_cast<float>(mean[r]), rs = static_cast<float>(rstd[r]);
        T* y = row_of<T>(out, r);
#if OPENNEURON_KERNEL_AVX512
        if constexpr (std::is_same_v<T, BFloat16>) {  // normalise and round in registers
          const __m512 m = _mm512_set1_ps(rms ? 0.0f : muf), s = _mm512_set1_ps(rs);
          uint16_t* y_bits = reinterpret_cast<uint16_t*>(y);
          int64_t i = 0;
          for (; i + 16 <= d; i += 16) {
            const __m512 xhat = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), m), s);
            const __m512 result =
                _mm512_fmadd_ps(xhat, _mm512_loadu_ps(w + i), _mm512_loadu_ps(b + i));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(y_bits + i),
                                attention_convert::narrow_bfloat16_vector(result));
          }
          for (; i < d; ++i) {
            y[i] = cast_value<T>(rms ? x[i] * rs * w[i] : (x[i] - muf) * rs * w[i] + b[i]);
          }
          continue;
        }
#endif
        if constexpr (!std::is_same_v<T, float>) {  // fp32 results, then one rounding pass
          float* results = result_buffer;
          if (rms) {
            for (int64_t i = 0; i < d; ++i) results[i] = x[i] * rs * w[i];
          } else {
            for (int64_t i = 0; i < d; ++i) results[i] = (x[i] - muf) * rs * w[i] + b[i];
          }
          store_results(y, results, d);
        } else if (rms) {
          for (int64_t i = 0; i < d; ++i) y[i] = cast_value<T>(x[i] * rs * w[i]);
        } else {
          for (int64_t i = 0; i < d; ++i) y[i] = cast_value<T>((x[i] - muf) * rs * w[i] + b[i]);
        }
      }
    }
  });
}

template <typename T>
void backward_typed(const TensorView* grad_input, const TensorView& grad_out,
                    const TensorView& input, const float* w, const float* mean, const float* rstd,
                    bool rms, bool want_columns, std::vector<double>& gw, std::vector<double>& gb) {
  const int64_t rows = input.sizes[0], d = input.sizes[1];
  // Fixed row chunks (not parallel_for's split) so the column partials add up in one order.
  const int64_t chunks =
      std::max<int64_t>(1, std::min<int64_t>(kernel_thread_count(), rows / row_grain(d)));
  const int64_t chunk_rows = (rows + chunks - 1) / chunks;
  std::vector<double> partials(want_columns ? static_cast<size_t>(chunks * 2 * d) : 0, 0.0);
  parallel_for(0, chunks, 1, [&](int64_t first, int64_t last) {
    ScratchFloats x_scratch, g_scratch, result_scratch;
    float* x_buffer = x_scratch.acquire(static_cast<size_t>(kRowGroup * d), false);
    float* g_buffer = g_scratch.acquire(static_cast<size_t>(kRowGroup * d), false);
    float* result_buffer =
        std::is_same_v<T, float> ? nullptr : result_scratch.acquire(static_cast<size_t>(d), false);
    for (int64_t chunk = first; chunk < last; ++chunk) {
      double* col_w = want_columns ? partials.data() + chunk * 2 * d : nullptr;
      double* col_b = want_columns ? col_w + d : nullptr;
      const int64_t row_end = std::min(rows, (chunk + 1) * chunk_rows);
      for (int64_t r0 = chunk * chunk_rows; r0 < row_end; r0 += kRowGroup) {
        // The rows' reductions first, then their output passes: the reductions of a group
        // are independent, so their dependency chains overlap.
        const int group = static_cast<int>(std::min<int64_t>(kRowGroup, row_end - r0));
        const float* x_rows[kRowGroup];
        const float* g_rows[kRowGroup];
        double sums_wg[kRowGroup], sums_wg_xhat[kRowGroup];
        for (int k = 0; k < group; ++k) {
          x_rows[k] = widen_row<T>(input, r0 + k, x_buffer + k * d);
          g_rows[k] = widen_row<T>(grad_out, r0 + k, g_buffer + k * d);
          if (grad_input != nullptr) {
            weighted_grad_sums(w, g_rows[k], x_rows[k], rms ? 0.0f : mean[r0 + k], rstd[r0 + k], d,
                               &sums_wg[k], &sums_wg_xhat[k]);
          }
        }
        for (int k = 0; k < group; ++k) {
          const int64_t r = r0 + k;
          const float* x = x_rows[k];
          const float* g = g_rows[k];
          const float mu = rms ? 0.0f : mean[r], rs = rstd[r];
          if (grad_input != nullptr) {
            const double sum_wg = sums_wg[k], sum_wg_xhat = sums_wg_xhat[k];
            const float a = rms ? 0.0f : static_cast<float>(sum_wg / d);
            const float bq = static_cast<float>(sum_wg_xhat / d);
            // One element per row: x - mean is exactly 0, so is dL/dx; the formula below would
            // leave w*g - mean(w*g) rounding residue (an fma keeps w*g unrounded) times rstd.
            const float rs_grad = !rms && d == 1 ? 0.0f : rs;
            T* dst = row_of<T>(*grad_input, r);
            if constexpr (!std::is_same_v<T, float>) {  // fp32 results, then one rounding pass
              for (int64_t i = 0; i < d; ++i) {
                const float xhat = (x[i] - mu) * rs;
                result_buffer[i] = rs_grad * (w[i] * g[i] - a - xhat * bq);
              }
              store_results(dst, result_buffer, d);
            } else {
              if (want_columns) {  // one pass for the row's gradient and its column terms
                for (int64_t i = 0; i < d; ++i) {
                  const float xhat = (x[i] - mu) * rs;
                  dst[i] = cast_value<T>(rs_grad * (w[i] * g[i] - a - xhat * bq));
                  col_w[i] += static_cast<double>(g[i]) * xhat;
                  col_b[i] += g[i];
                }
                continue;
              }
              for (int64_t i = 0; i < d; ++i) {
                const float xhat = (x[i] - mu) * rs;
                dst[i] = cast_value<T>(rs_grad * (w[i] * g[i] - a - xhat * bq));
              }
            }
          }
          if (want_columns) {
            for (int64_t i = 0; i < d; ++i) {
              col_w[i] += static_cast<double>(g[i]) * ((x[i] - mu) * rs);
              col_b[i] += g[i];
            }
          }
        }
      }
    }
  });
  if (want_columns) {
    gw.assign(static_cast<size_t>(d), 0.0);
    gb.assign(static_cast<size_t>(d), 0.0);
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      const double* col_w = partials.data() + chunk * 2 * d;
      for (int64_t i = 0; i < d; ++i) {
        gw[i] += col_w[i];
        gb[i] += col_w[d + i];
      }
    }
  }
}

bool row_dtype(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::BFloat16 || dtype == DType::Float16;
}

}  // namespace

bool supports(std::initializer_list<const TensorView*> row_views) {
  const TensorView* first = nullptr;
  for (const TensorView* view : row_views) {
    if (view == nullptr) continue;
    if (first == nullptr) first = view;
    if (view->ndim != 2 || !row_dtype(view->dtype) || view->dtype != first->dtype ||
        view->sizes[0] != first->sizes[0] || view->sizes[1] != first->sizes[1]) {
      return false;
    }
    if (view->sizes[1] > 1 && view->strides[1] != 1) return false;
  }
  return first != nullptr;
}

void forward(const TensorView& out, const TensorView& input, const std::vector<float>& w,
             const std::vector<float>& b, double eps, bool rms, std::vector<double>& mean,
             std::vector<double>& rstd) {
  switch (input.dtype) {
    case DType::BFloat16:
      return forward_typed<BFloat16>(out, input, w.data(), b.data(), eps, rms, mean.data(),
                                     rstd.data());
    case DType::Float16:
      return forward_typed<Half>(out, input, w.data(), b.data(), eps, rms, mean.data(),
                                 rstd.data());
    default:
      return forward_typed<float>(out, input, w.data(), b.data(), eps, rms, mean.data(),
                                  rstd.data());
  }
}

void backward(const TensorView* grad_input, const TensorView& grad_out, const TensorView& input,
              const std::vector<float>& w, const std::vector<float>& mean,
              const std::vector<float>& rstd, bool rms, bool want_columns, std::vector<double>& gw,
              std::vector<double>& gb) {
  switch (input.dtype) {
    case DType::BFloat16:
      return backward_typed<BFloat16>(grad_input, grad_out, input, w.data(), mean.data(),
                                      rstd.data(), rms, want_columns, gw, gb);
    case DType::Float16:
      return backward_typed<Half>(grad_input, grad_out, input, w.data(), mean.data(), rstd.data(),
                                  rms, want_columns, gw, gb);
    default:
      return backward_typed<float>(grad_input, grad_out, input, w.data(), mean.data(), rstd.data(),
                                   rms, want_columns, gw, gb);
  }
}

}  // namespace openneuron::kernels::OPENNEURON_ISA_NAMESPACE::normalization_rows
OPENNEURON_ISA_END
