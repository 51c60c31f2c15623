// Loss kernels on dense fp32 working copies; reductions accumulate in double.
#include "kernels/nn/loss.h"

#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/core/dense_float.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {
namespace {

// Targets as a dense int64 array.
std::vector<int64_t> load_targets(const TensorView& target) {
  if (target.dtype != DType::Int64) {
    throw std::invalid_argument("openneuron kernels: nll_loss: target must be int64");
  }
  std::vector<int64_t> values(static_cast<size_t>(target.numel()));
  if (!values.empty()) copy(dense_view_like(values.data(), DType::Int64, target), target);
  return values;
}

std::vector<float> load_weights(const TensorView* weight, int64_t classes) {
  std::vector<float> values(static_cast<size_t>(classes), 1.0f);
  if (weight == nullptr) return values;
  const DenseFloatInput dense(*weight);
  for (int64_t c = 0; c < classes; ++c) values[c] = dense.data()[c];
  return values;
}

void store_scalar(const TensorView& view, double value) {
  DenseFloatOutput dense(view);
  dense.data()[0] = static_cast<float>(value);
  dense.commit();
}

}  // namespace

void nll_loss_forward(const TensorView& out, const TensorView& total_weight,
                      const TensorView& input, const TensorView& target, const TensorView* weight,
                      LossReduction reduction, int64_t ignore_index) {
  if (input.ndim != 3)
    throw std::invalid_argument("openneuron kernels: nll_loss: input must be [N, C, M]");
  const int64_t n = input.sizes[0], classes = input.sizes[1], m = input.sizes[2];
  const std::vector<int64_t> targets = load_targets(target);
  const std::vector<float> weights = load_weights(weight, classes);
  const DenseFloatInput in(input);
  std::vector<float> losses(static_cast<size_t>(n * m));
  double total = 0.0, weight_sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      const int64_t t = targets[i * m + j];
      float loss = 0.0f;
      if (t != ignore_index) {
        if (t < 0 || t >= classes) {
          throw std::out_of_range("Target " + std::to_string(t) + " is out of bounds.");
        }
        const float w = weights[t];
        loss = -w * in.data()[(i * classes + t) * m + j];
        weight_sum += w;
      }
      losses[i * m + j] = loss;
      total += loss;
    }
  }
  if (reduction == LossReduction::None) {
    if (out.numel() > 0) {
      DenseFloatOutput dense(out);
      std::copy(losses.begin(), losses.end(), dense.data());
      dense.commit();
    }
  } else {
    store_scalar(out, reduction == LossReduction::Mean ? total / weight_sum : total);
  }
  store_scalar(total_weight, weight_sum);
}

void nll_loss_backward(const TensorView& grad_input, const TensorView& grad_out,
                       const TensorView& target, const TensorView* weight, LossReduction reduction,
                       int64_t ignore_index, const TensorView& total_weight) {
  if (grad_input.ndim != 3)
    throw std::invalid_argument("openneuron kernels: nll_loss: grad_input must be [N, C, M]");
  const int64_t n = grad_input.sizes[0], classes = grad_input.sizes[1], m = grad_input.sizes[2];
  if (grad_input.numel() == 0) return;
  const std::vector<int64_t> targets = load_targets(target);
  const std::vector<float> weights = load_weights(weight, classes);
  const DenseFloatInput go(grad_out);
  const DenseFloatInput tw(total_weight);
  DenseFloatOutput result(grad_input);
  std::fill(result.data(), result.data() + grad_input.numel(), 0.0f);
  const float scale = reduction == LossReduction::Mean ? 1.0f / tw.data()[0] : 1.0f;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      const int64_t t = targets[i * m + j];
      if (t == ignore_index || t < 0 || t >= classes) continue;
      const float g = reduction == LossReduction::None ? go.data()[i * m + j] : go.data()[0];
      result.data()[(i * classes + t) * m + j] = -weights[t] * g * scale;
    }
  }
  result.commit();
}

void mse_loss_forward(const TensorView& out, const TensorView& input, const TensorView& target,
                      LossReduction reduction) {
  const DenseFloatInput x(input);
  const DenseFloatInput y(target);
  const int64_t count = input.numel();
  if (reduction == LossReduction::None) {
    if (count == 0) return;
    DenseFloatOutput result(out);
    parallel_for(0, count, 4096, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const float d = x.data()[i] - y.data()[i];
        result.data()[i] = d * d;
      }
    });
    result.commit();
    return;
  }
  double total = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    const float d = x.data()[i] - y.data()[i];
    total += static_cast<double>(d) * d;
  }
  store_scalar(out, reduction == LossReduction::Mean ? total / static_cast<double>(count) : total);
}

void mse_loss_backward(const TensorView& grad_input, const TensorView& grad_out,
                       const TensorView& input, const TensorView& target, LossReduction reduction) {
  const int64_t count = grad_input.numel();
  if (count == 0) return;
  const DenseFloatInput x(input);
  const DenseFloatInput y(target);
  const DenseFloatInput g(grad_out);
  DenseFloatOutput result(grad_input);
  const float scale = reduction == LossReduction::Mean ? 2.0f / static_cast<float>(count) : 2.0f;
  parallel_for(0, count, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      result.data()[i] = scale * (x.data()[i] - y.data()[i]) * g.data()[i];
    }
  });
  result.commit();
}

}  // namespace openneuron::kernels
