// The fused SGD step: param, grad and the momentum buffer are each read and written once.
#include "kernels/nn/fused_sgd.h"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "kernels/core/element_types.h"
#include "kernels/core/row_io.h"
#include "kernels/core/strided_loop.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {

namespace {

constexpr int64_t kChunk = 512;

struct SgdCoefficients {
  float lr, weight_decay, momentum, one_minus_dampening, grad_scale;
  bool has_grad_scale, maximize, has_momentum, nesterov, first_step;
};

// The update over dense fp32 arrays; m is not touched without momentum.
void update_chunk(const SgdCoefficients& coefficients, float* __restrict param,
                  float* __restrict grad, float* __restrict m, int64_t n) {
  const SgdCoefficients k = coefficients;  // a local copy: stores cannot alias it
  for (int64_t j = 0; j < n; ++j) {
    float g = grad[j];
    if (k.has_grad_scale) {
      g = g / k.grad_scale;
      grad[j] = g;
    }
    if (k.maximize) g = -g;
    const float p = param[j];
    if (k.weight_decay != 0.0f) g = g + p * k.weight_decay;
    if (k.has_momentum) {
      const float buffer = k.first_step ? g : m[j] * k.momentum + g * k.one_minus_dampening;
      m[j] = buffer;
      g = k.nesterov ? g + buffer * k.momentum : buffer;
    }
    param[j] = p - g * k.lr;
  }
}

}  // namespace

void fused_sgd(const TensorView& param, const TensorView& grad, const TensorView& momentum_buffer,
               const SgdHyperparameters& hyper, const float* grad_scale) {
  if (!is_floating(param.dtype)) throw std::invalid_argument("fused_sgd: param must be floating");
  const int64_t numel = param.numel();
  if (numel == 0) return;
  SgdCoefficients k;
  k.lr = static_cast<float>(hyper.lr);
  k.weight_decay = static_cast<float>(hyper.weight_decay);
  k.momentum = static_cast<float>(hyper.momentum);
  k.one_minus_dampening = 1.0f - static_cast<float>(hyper.dampening);
  k.has_grad_scale = grad_scale != nullptr;
  k.grad_scale = grad_scale ? *grad_scale : 1.0f;
  k.maximize = hyper.maximize;
  k.has_momentum = hyper.momentum != 0.0;
  k.nesterov = hyper.nesterov;
  k.first_step = hyper.is_first_step;

  const TensorView& buffer = k.has_momentum ? momentum_buffer : param;
  const std::array<const TensorView*, 3> views{&param, &grad, &buffer};
  bool dense_fp32 = true;
  for (const TensorView* v : views)
    dense_fp32 = dense_fp32 && v->is_contiguous() && v->dtype == DType::Float32;
  if (dense_fp32) {
    auto* p = static_cast<float*>(param.data);
    auto* g = static_cast<float*>(grad.data);
    auto* m = static_cast<float*>(buffer.data);
    parallel_for(0, numel, 16384, [&](int64_t begin, int64_t end) {
      update_chunk(k, p + begin, g + begin, k.has_momentum ? m + begin : nullptr, end - begin);
    });
    return;
  }
  // General layouts and 16-bit tensors: gather chunks to fp32, update, scatter back.
  for_each_row<3>(views, LoopOrder::kRowMajor, [&](const RowPointers<3>& row, int64_t n) {
    float buffers[3][kChunk];
    for (int64_t start = 0; start < n; start += kChunk) {
      const int64_t count = std::min(kChunk, n - start);
      for (int b = 0; b < 3; ++b) {
        load_row<float>(buffers[b], row.ptrs[b] + start * row.strides[b], row.strides[b],
                        views[b]->dtype, count);
      }
      update_chunk(k, buffers[0], buffers[1], buffers[2], count);
      for (int b = 0; b < 3; ++b) {
        if ((b == 1 && !k.has_grad_scale) || (b == 2 && !k.has_momentum)) continue;
        store_row<float>(row.ptrs[b] + start * row.strides[b], row.strides[b], views[b]->dtype,
                         buffers[b], count);
      }
    }
  });
}

}  // namespace openneuron::kernels
