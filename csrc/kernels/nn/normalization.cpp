// Normalisation kernels over dense fp32 working copies; parallel over channels (batch norm),
// (sample, group) pairs (group norm) or rows (layer/RMS norm).
#include "kernels/nn/normalization.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/core/dense_float.h"
#include "kernels/nn/normalization_rows.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {
namespace {

[[noreturn]] void fail(const char* message) {
  throw std::invalid_argument(std::string("openneuron kernels: normalization: ") + message);
}

// A [count] view's values as fp32 (`fallback` everywhere when the view is absent).
std::vector<float> load_vector(const TensorView* view, int64_t count, float fallback) {
  std::vector<float> values(static_cast<size_t>(count), fallback);
  if (view == nullptr) return values;
  if (view->numel() != count) fail("per-channel vector has the wrong length");
  const DenseFloatInput dense(*view);
  for (int64_t i = 0; i < count; ++i) values[static_cast<size_t>(i)] = dense.data()[i];
  return values;
}

void store_vector(const TensorView* view, const std::vector<double>& values) {
  if (view == nullptr || view->numel() == 0) return;
  if (view->numel() != static_cast<int64_t>(values.size()))
    fail("output vector has the wrong length");
  DenseFloatOutput dense(*view);
  for (size_t i = 0; i < values.size(); ++i) dense.data()[i] = static_cast<float>(values[i]);
  dense.commit();
}

struct Ncm {
  int64_t n, c, m;
};
Ncm ncm_of(const TensorView& view) {
  if (view.ndim != 3) fail("batch/group norm views must be [N, C, M]");
  return {view.sizes[0], view.sizes[1], view.sizes[2]};
}

// Float partial sums run over at most this many values, then go into a double: one float sum
// over a whole 19M-value group (GroupNorm of 8x256x256x72) put its output 0.02 off.
constexpr int64_t kMomentBlock = 4096;

// Sum and sum of squared deviations of the `count` values at data[chunk * stride + i], i < len.
void chunk_moments(const float* data, int64_t chunks, int64_t stride, int64_t len, double* mean,
                   double* m2) {
  double sum = 0.0;
  for (int64_t k = 0; k < chunks; ++k) {
    const float* p = data + k * stride;
    for (int64_t start = 0; start < len; start += kMomentBlock) {
      const int64_t stop = std::min(len, start + kMomentBlock);
      float partial = 0.0f;
      for (int64_t i = start; i < stop; ++i) partial += p[i];
      sum += partial;
    }
  }
  const double count = static_cast<double>(chunks * len);
  const double mu = count > 0 ? sum / count : 0.0;
  double squares = 0.0;
  const float mu_f = static_cast<float>(mu);
  for (int64_t k = 0; k < chunks; ++k) {
    const float* p = data + k * stride;
    for (int64_t start = 0; start < len; start += kMomentBlock) {
      const int64_t stop = std::min(len, start + kMomentBlock);
      float partial = 0.0f;
      for (int64_t i = start; i < stop; ++i) {
        const float d = p[i] - mu_f;
        partial += d * d;
      }
      squares += partial;
    }
  }
  *mean = mu;
  *m2 = squares;
}

}  // namespace

void batch_norm_forward(const TensorView& out, const TensorView* save_mean,
                        const TensorView* save_invstd, const TensorView& input,
                        const TensorView* weight, const TensorView* bias,
                        const TensorView* running_mean, const TensorView* running_var,
                        bool training, double momentum, double eps) {
  const Ncm s = ncm_of(input);
  if (!training && (running_mean == nullptr || running_var == nullptr)) {
    fail("batch_norm eval needs running statistics");
  }
  const std::vector<float> w = load_vector(weight, s.c, 1.0f);
  const std::vector<float> b = load_vector(bias, s.c, 0.0f);
  std::vector<double> mean(static_cast<size_t>(s.c)), invstd(static_cast<size_t>(s.c));
  const DenseFloatInput in(input);
  if (training) {
    std::vector<double> var_unbiased(static_cast<size_t>(s.c));
    parallel_for(0, s.c, 1, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        double mu, m2;
        chunk_moments(in.data() + c * s.m, s.n, s.c * s.m, s.m, &mu, &m2);
        const double count = static_cast<double>(s.n * s.m);
        mean[c] = mu;
        invstd[c] = 1.0 / std::sqrt((count > 0 ? m2 / count : 0.0) + eps);
        var_unbiased[c] = count > 1 ? m2 / (count - 1) : std::nan("");
      }
    });
    store_vector(save_mean, mean);
    store_vector(save_invstd, invstd);
    if (running_mean != nullptr) {
      std::vector<float> rm = load_vector(running_mean, s.c, 0.0f);
      std::vector<double> updated(static_cast<size_t>(s.c));
      for (int64_t c = 0; c < s.c; ++c) updated[c] = (1.0 - momentum) * rm[c] + momentum * mean[c];
      store_vector(running_mean, updated);
    }
    if (running_var != nullptr) {
      std::vector<float> rv = load_vector(running_var, s.c, 1.0f);
      std::vector<double> updated(static_cast<size_t>(s.c));
      for (int64_t c = 0; c < s.c; ++c) {
        updated[c] = (1.0 - momentum) * rv[c] + momentum * var_unbiased[c];
      }
      store_vector(running_var, updated);
    }
  } else {
    const std::vector<float> rm = load_vector(running_mean, s.c, 0.0f);
    const std::vector<float> rv = load_vector(running_var, s.c, 1.0f);
    for (int64_t c = 0; c < s.c; ++c) {
      mean[c] = rm[c];
      invstd[c] = 1.0 / std::sqrt(static_cast<double>(rv[c]) + eps);
    }
  }
  if (out.numel() == 0) return;
  DenseFloatOutput result(out);
  parallel_for(0, s.n * s.c, 4, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t c = row % s.c;
      const float scale = static_cast<float>(invstd[c]) * w[c];
      const float shift = b[c] - static_cast<float>(mean[c]) * scale;
      const float* src = in.data() + row * s.m;
      float* dst = result.data() + row * s.m;
      for (int64_t i = 0; i < s.m; ++i) dst[i] = src[i] * scale + shift;
    }
  });
  result.commit();
}

void batch_norm_backward(const TensorView* grad_input, const TensorView* grad_weight,
                         const TensorView* grad_bias, const TensorView& grad_out,
                         const TensorView& input, const TensorView* weight,
                         const TensorView& mean_view, const TensorView& invstd_or_var,
                         bool training, double eps) {
  const Ncm s = ncm_of(input);
  const std::vector<float> w = load_vector(weight, s.c, 1.0f);
  const std::vector<float> mean = load_vector(&mean_view, s.c, 0.0f);
  std::vector<float> invstd = load_vector(&invstd_or_var, s.c, 1.0f);
  if (!training) {
    for (float& v : invstd) v = static_cast<float>(1.0 / std::sqrt(static_cast<double>(v) + eps));
  }
  const DenseFloatInput in(input);
  const DenseFloatInput go(grad_out);
  std::vector<double> sum_go(static_cast<size_t>(s.c)), sum_go_xhat(static_cast<size_t>(s.c));
  parallel_for(0, s.c, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      double total = 0.0, total_xhat = 0.0;
      const float mu = mean[c];
      for (int64_t n = 0; n < s.n; ++n) {
        const float* g = go.data() + (n * s.c + c) * s.m;
        const float* x = in.data() + (n * s.c + c) * s.m;
        for (int64_t start = 0; start < s.m; start += kMomentBlock) {
          const int64_t stop = std::min(s.m, start + kMomentBlock);
          float partial = 0.0f, partial_xhat = 0.0f;
          for (int64_t i = start; i < stop; ++i) {
            partial += g[i];
            partial_xhat += g[i] * (x[i] - mu);
          }
          total += partial;
          total_xhat += partial_xhat;
        }
      }
      sum_go[c] = total;
      sum_go_xhat[c] = total_xhat * invstd[c];  // sum(grad_out * xhat)
    }
  });
  if (grad_weight != nullptr) store_vector(grad_weight, sum_go_xhat);
  if (grad_bias != nullptr) store_vector(grad_bias, sum_go);
  if (grad_input == nullptr || grad_input->numel() == 0) return;
  DenseFloatOutput result(*grad_input);
  const double count = static_cast<double>(s.n * s.m);
  parallel_for(0, s.n * s.c, 4, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t c = row % s.c;
      const float* g = go.data() + row * s.m;
      const float* x = in.data() + row * s.m;
      float* dst = result.data() + row * s.m;
      const float scale = invstd[c] * w[c];
      if (training) {
        const float mean_go = static_cast<float>(sum_go[c] / count);
        const float mean_go_xhat = static_cast<float>(sum_go_xhat[c] / count);
        const float mu = mean[c];
        const float is = invstd[c];
        for (int64_t i = 0; i < s.m; ++i) {
          const float xhat = (x[i] - mu) * is;
          dst[i] = scale * (g[i] - mean_go - xhat * mean_go_xhat);
        }
      } else {
        for (int64_t i = 0; i < s.m; ++i) dst[i] = g[i] * scale;
      }
    }
  });
  result.commit();
}

void group_norm_forward(const TensorView& out, const TensorView& mean_view,
                        const TensorView& rstd_view, const TensorView& input,
                        const TensorView* weight, const TensorView* bias, int64_t groups,
                        double eps) {
  const Ncm s = ncm_of(input);
  if (groups <= 0 || s.c % groups != 0) fail("group_norm: channels must divide into groups");
  const int64_t cg = s.c / groups;
  const std::vector<float> w = load_vector(weight, s.c, 1.0f);
  const std::vector<float> b = load_vector(bias, s.c, 0.0f);
  const DenseFloatInput in(input);
  std::vector<double> mean(static_cast<size_t>(s.n * groups)), rstd(mean.size());
  const int64_t len = cg * s.m;
  parallel_for(0, s.n * groups, 1, [&](int64_t begin, int64_t end) {
    for (int64_t ng = begin; ng < end; ++ng) {
      double mu, m2;
      chunk_moments(in.data() + ng * len, 1, len, len, &mu, &m2);
      mean[ng] = mu;
      rstd[ng] = 1.0 / std::sqrt((len > 0 ? m2 / static_cast<double>(len) : 0.0) + eps);
    }
  });
  store_vector(&mean_view, mean);
  store_vector(&rstd_view, rstd);
  if (out.numel() == 0) return;
  DenseFloatOutput result(out);
  parallel_for(0, s.n * s.c, 4, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t c = row % s.c;
      const int64_t ng = (row / s.c) * groups + c / cg;
      const float scale = static_cast<float>(rstd[ng]) * w[c];
      const float shift = b[c] - static_cast<float>(mean[ng]) * scale;
      const float* src = in.data() + row * s.m;
      float* dst = result.data() + row * s.m;
      for (int64_t i = 0; i < s.m; ++i) dst[i] = src[i] * scale + shift;
    }
  });
  result.commit();
}

void group_norm_backward(const TensorView* grad_input, const TensorView* grad_weight,
                         const TensorView* grad_bias, const TensorView& grad_out,
                         const TensorView& input, const TensorView& mean_view,
                         const TensorView& rstd_view, const TensorView* weight, int64_t groups) {
  const Ncm s = ncm_of(input);
  if (groups <= 0 || s.c % groups != 0) fail("group_norm: channels must divide into groups");
  const int64_t cg = s.c / groups;
  const std::vector<float> w = load_vector(weight, s.c, 1.0f);
  const std::vector<float> mean = load_vector(&mean_view, s.n * groups, 0.0f);
  const std::vector<float> rstd = load_vector(&rstd_view, s.n * groups, 1.0f);
  const DenseFloatInput in(input);
  const DenseFloatInput go(grad_out);
  // Per (n, c): sum(grad_out) and sum(grad_out * x).
  std::vector<double> sum_g(static_cast<size_t>(s.n * s.c)), sum_gx(sum_g.size());
  parallel_for(0, s.n * s.c, 4, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const float* g = go.data() + row * s.m;
      const float* x = in.data() + row * s.m;
      double a = 0.0, b = 0.0;
      for (int64_t i = 0; i < s.m; ++i) {
        a += g[i];
        b += static_cast<double>(g[i]) * x[i];
      }
      sum_g[row] = a;
      sum_gx[row] = b;
    }
  });
  if (grad_weight != nullptr || grad_bias != nullptr) {
    std::vector<double> gw(static_cast<size_t>(s.c), 0.0), gb(static_cast<size_t>(s.c), 0.0);
    for (int64_t n = 0; n < s.n; ++n) {
      for (int64_t c = 0; c < s.c; ++c) {
        const int64_t ng = n * groups + c / cg;
        const int64_t row = n * s.c + c;
        gw[c] += (sum_gx[row] - mean[ng] * sum_g[row]) * rstd[ng];
        gb[c] += sum_g[row];
      }
    }
    store_vector(grad_weight, gw);
    store_vector(grad_bias, gb);
  }
  if (grad_input == nullptr || grad_input->numel() == 0) return;
  DenseFloatOutput result(*grad_input);
  const double len = static_cast<double>(cg * s.m);
  parallel_for(0, s.n * groups, 1, [&](int64_t begin, int64_t end) {
    for (int64_t ng = begin; ng < end; ++ng) {
      const int64_t n = ng / groups, g0 = (ng % groups) * cg;
      // With wg = w * grad_out: grad_in = rstd * (wg - mean(wg) - xhat * mean(wg * xhat)).
      double sum_wg = 0.0, sum_wgx = 0.0;
      for (int64_t c = g0; c < g0 + cg; ++c) {
        sum_wg += w[c] * sum_g[n * s.c + c];
        sum_wgx += w[c] * sum_gx[n * s.c + c];
      }
      const double mu = mean[ng], rs = rstd[ng];
      const double mean_wg = sum_wg / len;
      const double mean_wg_xhat = (sum_wgx - mu * sum_wg) * rs / len;
      for (int64_t c = g0; c < g0 + cg; ++c) {
        const int64_t row = n * s.c + c;
        const float* g = go.data() + row * s.m;
        const float* x = in.data() + row * s.m;
        float* dst = result.data() + row * s.m;
        const float wc = w[c], rsf = static_cast<float>(rs), muf = static_cast<float>(mu);
        const float a = static_cast<float>(mean_wg), bq = static_cast<float>(mean_wg_xhat);
        for (int64_t i = 0; i < s.m; ++i) {
          const float xhat = (x[i] - muf) * rsf;
          dst[i] = rsf * (wc * g[i] - a - xhat * bq);
        }
      }
    }
  });
  result.commit();
}

void row_norm_forward(const TensorView& out, const TensorView* mean_view,
                      const TensorView& rstd_view, const TensorView& input,
                      const TensorView* weight, const TensorView* bias, double eps, bool rms) {
  if (input.ndim != 2) fail("row norm views must be [R, D]");
  const int64_t rows = input.sizes[0], d = input.sizes[1];
  const std::vector<float> w = load_vector(weight, d, 1.0f);
  const std::vector<float> b = load_vector(bias, d, 0.0f);
  std::vector<double> mean(static_cast<size_t>(rows)), rstd(static_cast<size_t>(rows));
  if (normalization_rows::supports({&input, &out})) {
    normalization_rows::forward(out, input, w, b, eps, rms, mean, rstd);
    if (mean_view != nullptr) store_vector(mean_view, mean);
    store_vector(&rstd_view, rstd);
    return;
  }
  const DenseFloatInput in(input);
  DenseFloatOutput result(out);
  parallel_for(0, rows, 4, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* x = in.data() + r * d;
      double mu = 0.0, m2 = 0.0;
      if (rms) {
        for (int64_t i = 0; i < d; ++i) m2 += static_cast<double>(x[i]) * x[i];
      } else {
        chunk_moments(x, 1, d, d, &mu, &m2);
      }
      mean[r] = mu;
      rstd[r] = 1.0 / std::sqrt((d > 0 ? m2 / static_cast<double>(d) : 0.0) + eps);
      const float muf = static_cast<float>(mu), rs = static_cast<float>(rstd[r]);
      float* y = result.data() + r * d;
      if (rms) {
        for (int64_t i = 0; i < d; ++i) y[i] = x[i] * rs * w[i];
      } else {
        for (int64_t i = 0; i < d; ++i) y[i] = (x[i] - muf) * rs * w[i] + b[i];
      }
    }
  });
  result.commit();
  if (mean_view != nullptr) store_vector(mean_view, mean);
  store_vector(&rstd_view, rstd);
}

void row_norm_backward(const TensorView* grad_input, const TensorView* grad_weight,
                       const TensorView* grad_bias, const TensorView& grad_out,
                       const TensorView& input, const TensorView* mean_view,
                       const TensorView& rstd_view, const TensorView* weight, bool rms) {
  if (input.ndim != 2) fail("row norm views must be [R, D]");
  const int64_t rows = input.sizes[0], d = input.sizes[1];
  const std::vector<float> w = load_vector(weight, d, 1.0f);
  const std::vector<float> mean = rms ? std::vector<float>(static_cast<size_t>(rows), 0.0f)
                                      : load_vector(mean_view, rows, 0.0f);
  const std::vector<float> rstd = load_vector(&rstd_view, rows, 1.0f);
  const bool want_grad_input = grad_input != nullptr && grad_input->numel() > 0;
  if (normalization_rows::supports({&input, &grad_out, want_grad_input ? grad_input : nullptr})) {
    const bool want_columns = grad_weight != nullptr || grad_bias != nullptr;
    std::vector<double> gw, gb;
    normalization_rows::backward(want_grad_input ? grad_input : nullptr, grad_out, input, w, mean,
                                 rstd, rms, want_columns, gw, gb);
    if (grad_weight != nullptr) store_vector(grad_weight, gw);
    if (grad_bias != nullptr) store_vector(grad_bias, gb);
    return;
  }
  const DenseFloatInput in(input);
  const DenseFloatInput go(grad_out);
  if (grad_input != nullptr && grad_input->numel() > 0) {
    DenseFloatOutput result(*grad_input);
    parallel_for(0, rows, 4, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* x = in.data() + r * d;
        const float* g = go.data() + r * d;
        float* dst = result.data() + r * d;
        const float mu = mean[r], rs = rstd[r];
        double sum_wg = 0.0, sum_wg_xhat = 0.0;
        for (int64_t i = 0; i < d; ++i) {
          const float wg = w[i] * g[i];
          sum_wg += wg;
          sum_wg_xhat += static_cast<double>(wg) * ((x[i] - mu) * rs);
        }
        const float a = rms ? 0.0f : static_cast<float>(sum_wg / d);
        const float bq = static_cast<float>(sum_wg_xhat / d);
        for (int64_t i = 0; i < d; ++i) {
          const float xhat = (x[i] - mu) * rs;
          dst[i] = rs * (w[i] * g[i] - a - xhat * bq);
        }
      }
    });
    result.commit();
  }
  if (grad_weight != nullptr || grad_bias != nullptr) {
    // Column sums over rows: each thread owns a slice of columns.
    std::vector<double> gw(static_cast<size_t>(d), 0.0), gb(static_cast<size_t>(d), 0.0);
    parallel_for(0, d, 16, [&](int64_t begin, int64_t end) {
      for (int64_t r = 0; r < rows; ++r) {
        const float* x = in.data() + r * d;
        const float* g = go.data() + r * d;
        const float mu = mean[r], rs = rstd[r];
        for (int64_t i = begin; i < end; ++i) {
          gw[i] += static_cast<double>(g[i]) * ((x[i] - mu) * rs);
          gb[i] += g[i];
        }
      }
    });
    if (grad_weight != nullptr) store_vector(grad_weight, gw);
    if (grad_bias != nullptr) store_vector(grad_bias, gb);
  }
}

}  // namespace openneuron::kernels
