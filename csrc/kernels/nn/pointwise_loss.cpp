// Elementwise losses on dense fp32 copies of their operands; reductions sum in double.
#include "kernels/nn/pointwise_loss.h"

#include <algorithm>
#include <cmath>

#include "kernels/core/dense_float.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {
namespace {

float loss_value(PointwiseLoss loss, float x, float t, float w, float param) {
  switch (loss) {
    case PointwiseLoss::Huber: {
      const float z = std::abs(x - t);
      return z < param ? 0.5f * z * z : param * (z - 0.5f * param);
    }
    case PointwiseLoss::SmoothL1: {
      const float z = std::abs(x - t);
      return z < param ? 0.5f * z * z / param : z - 0.5f * param;
    }
    case PointwiseLoss::BinaryCrossEntropy: {
      // log is clamped at -100 so that x = 0 or 1 gives a finite loss, as PyTorch does.
      const float log_x = std::max(std::log(x), -100.0f);
      const float log_1mx = std::max(std::log1p(-x), -100.0f);
      return -w * ((t * log_x) + (1.0f - t) * log_1mx);
    }
  }
  return 0.0f;
}

float loss_gradient(PointwiseLoss loss, float x, float t, float w, float param, float g) {
  switch (loss) {
    case PointwiseLoss::Huber: {
      const float d = x - t;
      if (d < -param) return -param * g;
      if (d > param) return param * g;
      return d * g;
    }
    case PointwiseLoss::SmoothL1: {
      // The order of the tests matters at beta == 0: d == 0 takes the first branch, as on CPU.
      const float d = x - t;
      if (d <= -param) return -g;
      if (d >= param) return g;
      return d * g / param;
    }
    case PointwiseLoss::BinaryCrossEntropy: {
      constexpr float kEpsilon = 1e-12f;
      return w * g * (x - t) / std::max((1.0f - x) * x, kEpsilon);
    }
  }
  return 0.0f;
}

}  // namespace

void pointwise_loss_forward(const TensorView& out, const TensorView& input,
                            const TensorView& target, const TensorView* weight, PointwiseLoss loss,
                            LossReduction reduction, double param) {
  const int64_t count = input.numel();
  const DenseFloatInput x(input);
  const DenseFloatInput y(target);
  std::unique_ptr<DenseFloatInput> w;
  if (weight != nullptr) w = std::make_unique<DenseFloatInput>(*weight);
  const float p = static_cast<float>(param);
  const auto weight_at = [&](int64_t i) { return w ? w->data()[i] : 1.0f; };
  if (reduction == LossReduction::None) {
    if (count == 0) return;
    DenseFloatOutput result(out);
    parallel_for(0, count, 4096, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        result.data()[i] = loss_value(loss, x.data()[i], y.data()[i], weight_at(i), p);
      }
    });
    result.commit();
    return;
  }
  double total = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    total += loss_value(loss, x.data()[i], y.data()[i], weight_at(i), p);
  }
  // A mean over no elements is 0/0 (NaN), as on the CPU.
  const double value =
      reduction == LossReduction::Mean ? total / static_cast<double>(count) : total;
  DenseFloatOutput dense(out);
  dense.data()[0] = static_cast<float>(value);
  dense.commit();
}

void pointwise_loss_backward(const TensorView& grad_input, const TensorView& grad_out,
                             const TensorView& input, const TensorView& target,
                             const TensorView* weight, PointwiseLoss loss, LossReduction reduction,
                             double param) {
  const int64_t count = grad_input.numel();
  if (count == 0) return;
  const DenseFloatInput x(input);
  const DenseFloatInput y(target);
  const DenseFloatInput g(grad_out);
  std::unique_ptr<DenseFloatInput> w;
  if (weight != nullptr) w = std::make_unique<DenseFloatInput>(*weight);
  DenseFloatOutput result(grad_input);
  const float p = static_cast<float>(param);
  const float norm = reduction == LossReduction::Mean ? 1.0f / static_cast<float>(count) : 1.0f;
  parallel_for(0, count, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float wi = w ? w->data()[i] : 1.0f;
      result.data()[i] = loss_gradient(loss, x.data()[i], y.data()[i], wi, p, norm * g.data()[i]);
    }
  });
  result.commit();
}

}  // namespace openneuron::kernels
