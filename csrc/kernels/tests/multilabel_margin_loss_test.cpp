// Multi-label margin loss against the formula in double: targets up to the first -1, repeated
// targets, every reduction, and a backward driven by the is_target it is given.
#include "kernels/nn/multilabel_margin_loss.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <vector>

#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::get;
using testing::make_tensor;
using testing::set;

constexpr int64_t kRows = 3, kClasses = 5;
const std::vector<std::vector<int64_t>> kTargets = {
    {3, 0, -1, 1, 4}, {1, 1, 2, 4, 0}, {-1, 2, 2, 2, 2}};

std::vector<int64_t> prefix(int64_t r) {
  std::vector<int64_t> found;
  for (int64_t v : kTargets[r]) {
    if (v < 0) break;
    found.push_back(v);
  }
  return found;
}

// Row r's loss (and, into grad, its gradient times `scale`) with `excluded` as the targets.
double row_loss(const TensorView& x, int64_t r, const std::set<int64_t>& excluded,
                std::vector<double>* grad, double scale) {
  double sum = 0;
  for (int64_t j : prefix(r)) {
    for (int64_t i = 0; i < kClasses; ++i) {
      if (excluded.count(i)) continue;
      const double z = 1 - get(x, {r, j}) + get(x, {r, i});
      if (z > 0) {
        sum += z;
        if (grad) {
          (*grad)[j] -= scale;
          (*grad)[i] += scale;
        }
      }
    }
  }
  return sum / kClasses;
}

testing::HostTensor make_target() {
  auto target = make_tensor(DType::Int64, {kRows, kClasses});
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t c = 0; c < kClasses; ++c) set(target.view, {r, c}, kTargets[r][c]);
  return target;
}

TEST(MultilabelMarginLoss, ForwardMatchesTheFormulaForEveryReduction) {
  std::mt19937 rng(11);
  auto x = testing::random_tensor(DType::Float32, {kRows, kClasses}, rng, -1, 1);
  auto target = make_target();
  std::vector<double> rows;
  for (int64_t r = 0; r < kRows; ++r) {
    const auto t = prefix(r);
    rows.push_back(row_loss(x.view, r, std::set<int64_t>(t.begin(), t.end()), nullptr, 0));
  }
  auto flags = make_tensor(DType::Float32, {kRows, kClasses});
  auto none = make_tensor(DType::Float32, {kRows});
  multilabel_margin_loss_forward(none.view, flags.view, x.view, target.view, LossReduction::None);
  for (int64_t r = 0; r < kRows; ++r) {
    EXPECT_NEAR(get(none.view, {r}), rows[r], 1e-6);
    const auto t = prefix(r);
    for (int64_t c = 0; c < kClasses; ++c) {
      EXPECT_EQ(get(flags.view, {r, c}), std::count(t.begin(), t.end(), c) > 0 ? 1 : 0);
    }
  }
  auto mean = make_tensor(DType::Float32, {});
  auto sum = make_tensor(DType::BFloat16, {});
  auto flags16 = make_tensor(DType::BFloat16, {kRows, kClasses});
  multilabel_margin_loss_forward(mean.view, flags.view, x.view, target.view, LossReduction::Mean);
  multilabel_margin_loss_forward(sum.view, flags16.view, x.view, target.view, LossReduction::Sum);
  const double total = rows[0] + rows[1] + rows[2];
  EXPECT_NEAR(get(mean.view, {}), total / kRows, 1e-6);
  EXPECT_EQ(get(sum.view, {}), testing::round_to(DType::BFloat16, total));
}

TEST(MultilabelMarginLoss, BackwardFollowsTheGivenIsTarget) {
  std::mt19937 rng(12);
  auto x = testing::random_tensor(DType::Float32, {kRows, kClasses}, rng, -1, 1);
  auto target = make_target();
  auto flags = make_tensor(DType::Float32, {kRows, kClasses});  // all zero: nothing excluded
  auto grad_out = testing::random_tensor(DType::Float32, {kRows}, rng, 0.5, 2);
  auto grad_in = make_tensor(DType::Float32, {kRows, kClasses});
  multilabel_margin_loss_backward(grad_in.view, grad_out.view, x.view, target.view, flags.view,
                                  LossReduction::None);
  for (int64_t r = 0; r < kRows; ++r) {
    std::vector<double> grad(kClasses, 0.0);
    row_loss(x.view, r, {}, &grad, get(grad_out.view, {r}) / kClasses);
    for (int64_t c = 0; c < kClasses; ++c) EXPECT_NEAR(get(grad_in.view, {r, c}), grad[c], 1e-6);
  }
  auto scalar_grad = make_tensor(DType::Float32, {1});
  set(scalar_grad.view, {0}, 3.0);
  multilabel_margin_loss_backward(grad_in.view, scalar_grad.view, x.view, target.view, flags.view,
                                  LossReduction::Mean);
  std::vector<double> grad(kClasses, 0.0);
  row_loss(x.view, 1, {}, &grad, 3.0 / (kClasses * kRows));
  for (int64_t c = 0; c < kClasses; ++c) EXPECT_NEAR(get(grad_in.view, {1, c}), grad[c], 1e-6);
}

}  // namespace
}  // namespace openneuron::kernels
