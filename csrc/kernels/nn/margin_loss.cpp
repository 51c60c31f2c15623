// Multi-class margin loss on dense fp32 copies; one sample (row) at a time.
#include "kernels/nn/margin_loss.h"

#include <memory>
#include <vector>

#include "kernels/core/dense_float.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {
namespace {

std::vector<int64_t> read_targets(const TensorView& target, int64_t rows) {
  std::vector<int64_t> classes(static_cast<size_t>(rows));
  const int64_t stride = target.ndim == 0 ? 0 : target.strides[0];
  const int64_t* data = static_cast<const int64_t*>(target.data);
  for (int64_t i = 0; i < rows; ++i) classes[i] = data[i * stride];
  return classes;
}

}  // namespace

void multi_margin_loss_forward(const TensorView& out, const TensorView& input,
                               const TensorView& target, const TensorView* weight, int64_t p,
                               double margin, LossReduction reduction) {
  const int64_t rows = input.sizes[0], classes = input.sizes[1];
  const DenseFloatInput x(input);
  std::unique_ptr<DenseFloatInput> w;
  if (weight != nullptr) w = std::make_unique<DenseFloatInput>(*weight);
  const std::vector<int64_t> t = read_targets(target, rows);
  std::vector<float> per_row(static_cast<size_t>(rows));
  const float m = static_cast<float>(margin);
  parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float* row = x.data() + i * classes;
      const float at_target = row[t[i]];
      const float scale = w ? w->data()[t[i]] : 1.0f;
      float sum = 0.0f;
      for (int64_t j = 0; j < classes; ++j) {
        if (j == t[i]) continue;
        const float z = m - at_target + row[j];
        if (z > 0) sum += scale * (p == 1 ? z : z * z);
      }
      per_row[i] = sum / static_cast<float>(classes);
    }
  });
  DenseFloatOutput result(out);
  if (reduction == LossReduction::None) {
    for (int64_t i = 0; i < rows; ++i) result.data()[i] = per_row[i];
  } else {
    double total = 0.0;
    for (int64_t i = 0; i < rows; ++i) total += per_row[i];
    if (reduction == LossReduction::Mean) total /= static_cast<double>(rows);
    result.data()[0] = static_cast<float>(total);
  }
  result.commit();
}

void multi_margin_loss_backward(const TensorView& grad_input, const TensorView& grad_out,
                                const TensorView& input, const TensorView& target,
                                const TensorView* weight, int64_t p, double margin,
                                LossReduction reduction) {
  const int64_t rows = input.sizes[0], classes = input.sizes[1];
  if (rows * classes == 0) return;
  const DenseFloatInput x(input);
  const DenseFloatInput g(grad_out);
  std::unique_ptr<DenseFloatInput> w;
  if (weight != nullptr) w = std::make_unique<DenseFloatInput>(*weight);
  const std::vector<int64_t> t = read_targets(target, rows);
  DenseFloatOutput result(grad_input);
  const float m = static_cast<float>(margin);
  const float norm = reduction == LossReduction::Mean
                         ? 1.0f / (static_cast<float>(rows) * static_cast<float>(classes))
                         : 1.0f / static_cast<float>(classes);
  parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float* row = x.data() + i * classes;
      float* dst = result.data() + i * classes;
      const float at_target = row[t[i]];
      const float scale = w ? w->data()[t[i]] : 1.0f;
      const float upstream = g.data()[reduction == LossReduction::None ? i : 0];
      float target_grad = 0.0f;
      for (int64_t j = 0; j < classes; ++j) {
        if (j == t[i]) continue;
        const float z = m - at_target + row[j];
        float h = 0.0f;
        if (z > 0) h = scale * (p == 1 ? norm : 2.0f * norm * z);
        target_grad -= h;
        dst[j] = h * upstream;
      }
      dst[t[i]] = target_grad * upstream;
    }
  });
  result.commit();
}

}  // namespace openneuron::kernels
