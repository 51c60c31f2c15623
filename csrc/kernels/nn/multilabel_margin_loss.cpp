// Multi-label margin loss on dense fp32 copies; one sample (row) at a time.
#include "kernels/nn/multilabel_margin_loss.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "kernels/core/dense_float.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {
namespace {

// Row r's targets: its values before the first -1.
std::vector<int64_t> targets_of(const TensorView& target, int64_t row) {
  std::vector<int64_t> found;
  const auto* data = static_cast<const int64_t*>(target.data) + row * target.strides[0];
  for (int64_t j = 0; j < target.sizes[1]; ++j) {
    const int64_t value = data[j * target.strides[1]];
    if (value < 0) break;
    found.push_back(value);
  }
  return found;
}

}  // namespace

void multilabel_margin_loss_forward(const TensorView& out, const TensorView& is_target,
                                    const TensorView& input, const TensorView& target,
                                    LossReduction reduction) {
  const int64_t rows = input.sizes[0], classes = input.sizes[1];
  const DenseFloatInput x(input);
  DenseFloatOutput flags(is_target);
  std::vector<double> per_row(static_cast<size_t>(rows));
  parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* row = x.data() + r * classes;
      float* flag = flags.data() + r * classes;
      const std::vector<int64_t> targets = targets_of(target, r);
      for (int64_t i = 0; i < classes; ++i) flag[i] = 0.0f;
      for (int64_t j : targets) flag[j] = 1.0f;
      double sum = 0.0;
      for (int64_t j : targets) {
        for (int64_t i = 0; i < classes; ++i) {
          if (flag[i] != 0.0f) continue;
          const double z = 1.0 - static_cast<double>(row[j]) + static_cast<double>(row[i]);
          if (z > 0) sum += z;
        }
      }
      per_row[r] = sum / static_cast<double>(classes);
    }
  });
  flags.commit();
  DenseFloatOutput result(out);
  if (reduction == LossReduction::None) {
    for (int64_t r = 0; r < rows; ++r) result.data()[r] = static_cast<float>(per_row[r]);
  } else {
    double total = 0.0;
    for (int64_t r = 0; r < rows; ++r) total += per_row[r];
    if (reduction == LossReduction::Mean) {
      total = rows == 0 ? std::numeric_limits<double>::quiet_NaN() : total / rows;
    }
    result.data()[0] = static_cast<float>(total);
  }
  result.commit();
}

void multilabel_margin_loss_backward(const TensorView& grad_input, const TensorView& grad_out,
                                     const TensorView& input, const TensorView& target,
                                     const TensorView& is_target, LossReduction reduction) {
  const int64_t rows = input.sizes[0], classes = input.sizes[1];
  const DenseFloatInput x(input);
  const DenseFloatInput flags(is_target);
  const DenseFloatInput g(grad_out);
  DenseFloatOutput result(grad_input);
  const double unit = reduction == LossReduction::Mean ? 1.0 / (static_cast<double>(classes) * rows)
                                                       : 1.0 / static_cast<double>(classes);
  parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
    std::vector<double> grad(static_cast<size_t>(classes));
    for (int64_t r = begin; r < end; ++r) {
      const float* row = x.data() + r * classes;
      const float* flag = flags.data() + r * classes;
      std::fill(grad.begin(), grad.end(), 0.0);
      for (int64_t j : targets_of(target, r)) {
        for (int64_t i = 0; i < classes; ++i) {
          if (flag[i] != 0.0f) continue;
          const double z = 1.0 - static_cast<double>(row[j]) + static_cast<double>(row[i]);
          if (z > 0) {
            grad[j] -= unit;
            grad[i] += unit;
          }
        }
      }
      const double scale = reduction == LossReduction::None ? g.data()[r] : g.data()[0];
      float* dst = result.data() + r * classes;
      for (int64_t i = 0; i < classes; ++i) dst[i] = static_cast<float>(grad[i] * scale);
    }
  });
  result.commit();
}

}  // namespace openneuron::kernels
