// The fused Adam step: every state is read and written once per element.
#include "kernels/nn/fused_adam.h"

#include <cmath>
#include <stdexcept>

#include "kernels/core/element_types.h"
#include "kernels/core/row_io.h"
#include "kernels/core/strided_loop.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {

namespace {

constexpr int64_t kChunk = 512;

struct AdamCoefficients {
  float beta1, beta2, one_minus_beta1, one_minus_beta2;
  float step_size, bias_correction2_sqrt, eps, weight_decay, decay_factor;
  float grad_scale;
  bool has_grad_scale, amsgrad, maximize, decoupled;
};

// The update on dense fp32 chunks; writes every state back. The flags are template parameters
// and the pointers restrict-qualified so the loop has no branches or aliasing and vectorizes.
template <bool kGradScale, bool kMaximize, bool kWeightDecay, bool kDecoupled, bool kAmsgrad>
void update_chunk_specialized(const AdamCoefficients& coefficients, float* __restrict param,
                              float* __restrict grad, float* __restrict m, float* __restrict v,
                              float* __restrict v_max, int64_t n) {
  const AdamCoefficients k = coefficients;  // a local copy: stores cannot alias it
  for (int64_t j = 0; j < n; ++j) {
    float g = grad[j];
    if constexpr (kGradScale) {
      g = g / k.grad_scale;
      grad[j] = g;
    }
    if constexpr (kMaximize) g = -g;
    float p = param[j];
    if constexpr (kWeightDecay) {
      if constexpr (kDecoupled) {
        p = p * k.decay_factor;
      } else {
        g = g + p * k.weight_decay;
      }
    }
    const float m_new = m[j] * k.beta1 + g * k.one_minus_beta1;
    const float v_new = v[j] * k.beta2 + g * g * k.one_minus_beta2;
    m[j] = m_new;
    v[j] = v_new;
    float second = v_new;
    if constexpr (kAmsgrad) {
      second = v_max[j] < v_new ? v_new : v_max[j];
      v_max[j] = second;
    }
    const float denom = std::sqrt(second) / k.bias_correction2_sqrt + k.eps;
    param[j] = p - k.step_size * m_new / denom;
  }
}

using UpdateChunk = void (*)(const AdamCoefficients&, float*, float*, float*, float*, float*,
                             int64_t);

template <bool... kFlags>
UpdateChunk select_update(const AdamCoefficients& k) {
  constexpr size_t kDecided = sizeof...(kFlags);
  if constexpr (kDecided == 5) {
    return &update_chunk_specialized<kFlags...>;
  } else {
    const bool flags[5] = {k.has_grad_scale, k.maximize, k.weight_decay != 0.0f, k.decoupled,
                           k.amsgrad};
    return flags[kDecided] ? select_update<kFlags..., true>(k) : select_update<kFlags..., false>(k);
  }
}

void update_chunk(const AdamCoefficients& k, float* param, float* grad, float* m, float* v,
                  float* v_max, int64_t n) {
  select_update<>(k)(k, param, grad, m, v, v_max, n);
}

}  // namespace

void fused_adam(const TensorView& param, const TensorView& grad, const TensorView& exp_avg,
                const TensorView& exp_avg_sq, const TensorView& max_exp_avg_sq, double step,
                const AdamHyperparameters& hyper, const float* grad_scale) {
  if (!is_floating(param.dtype)) throw std::invalid_argument("fused_adam: param must be floating");
  const int64_t numel = param.numel();
  if (numel == 0) return;
  // Coefficients in double, rounded once to fp32, like PyTorch's CPU kernel.
  const double bias_correction1 = 1.0 - std::pow(hyper.beta1, step);
  const double bias_correction2 = 1.0 - std::pow(hyper.beta2, step);
  AdamCoefficients k;
  k.beta1 = static_cast<float>(hyper.beta1);
  k.beta2 = static_cast<float>(hyper.beta2);
  k.one_minus_beta1 = static_cast<float>(1.0 - hyper.beta1);
  k.one_minus_beta2 = static_cast<float>(1.0 - hyper.beta2);
  k.step_size = static_cast<float>(hyper.lr / bias_correction1);
  k.bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  k.eps = static_cast<float>(hyper.eps);
  k.weight_decay = static_cast<float>(hyper.weight_decay);
  k.decay_factor = static_cast<float>(1.0 - hyper.lr * hyper.weight_decay);
  k.has_grad_scale = grad_scale != nullptr;
  k.grad_scale = grad_scale ? *grad_scale : 1.0f;
  k.amsgrad = hyper.amsgrad;
  k.maximize = hyper.maximize;
  k.decoupled = hyper.decoupled_weight_decay;

  const TensorView& v_max_view = hyper.amsgrad ? max_exp_avg_sq : exp_avg_sq;
  const std::array<const TensorView*, 5> views{&param, &grad, &exp_avg, &exp_avg_sq, &v_max_view};
  // Split the flattened range across threads when every tensor is dense (the usual case).
  bool dense = true;
  for (const TensorView* v : views) dense = dense && v->is_contiguous();
  const bool all_fp32 = param.dtype == DType::Float32 && grad.dtype == DType::Float32 &&
                        exp_avg.dtype == DType::Float32 && exp_avg_sq.dtype == DType::Float32 &&
                        v_max_view.dtype == DType::Float32;
  if (dense && all_fp32) {
    auto* p = static_cast<float*>(param.data);
    auto* g = static_cast<float*>(grad.data);
    auto* m = static_cast<float*>(exp_avg.data);
    auto* v = static_cast<float*>(exp_avg_sq.data);
    auto* vm = static_cast<float*>(v_max_view.data);
    parallel_for(0, numel, 16384, [&](int64_t begin, int64_t end) {
      update_chunk(k, p + begin, g + begin, m + begin, v + begin, vm + begin, end - begin);
    });
    return;
  }
  // General layouts and 16-bit states: gather chunks to fp32, update, scatter back.
  for_each_row<5>(views, LoopOrder::kRowMajor, [&](const RowPointers<5>& row, int64_t n) {
    float buffers[5][kChunk];
    for (int64_t start = 0; start < n; start += kChunk) {
      const int64_t count = std::min(kChunk, n - start);
      for (int b = 0; b < 5; ++b) {
        load_row<float>(buffers[b], row.ptrs[b] + start * row.strides[b], row.strides[b],
                        views[b]->dtype, count);
      }
      update_chunk(k, buffers[0], buffers[1], buffers[2], buffers[3], buffers[4], count);
      const int last = hyper.amsgrad ? 5 : 4;
      for (int b = 0; b < last; ++b) {
        if (b == 1 && !k.has_grad_scale) continue;
        store_row<float>(row.ptrs[b] + start * row.strides[b], row.strides[b], views[b]->dtype,
                         buffers[b], count);
      }
    }
  });
}

}  // namespace openneuron::kernels
