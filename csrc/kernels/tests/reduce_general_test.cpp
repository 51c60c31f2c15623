// reduce_general() against double-precision reference loops over dim selections and layouts.
#include "kernels/reduce/reduce_general.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::for_each_index;
using testing::get;
using testing::make_tensor;
using testing::permute;
using Index = std::vector<int64_t>;
using Op = GeneralReduceOp;

// The reduced elements of one output, in row-major order over the reduced dims.
std::vector<double> gather_reduced(const TensorView& in, uint32_t mask, const Index& out_index) {
  std::vector<double> values;
  for_each_index(in, [&](const Index& in_index) {
    for (int d = 0; d < in.ndim; ++d) {
      if (!((mask >> d) & 1u) && in_index[d] != out_index[d]) return;
    }
    values.push_back(get(in, in_index));
  });
  return values;
}

// Reference (primary, secondary) for one output.
std::pair<double, double> reference(Op op, const GeneralReduceParams& params,
                                    const std::vector<double>& v) {
  const double n = static_cast<double>(v.size());
  switch (op) {
    case Op::Var: {
      double mean = 0;
      for (double x : v) mean += x;
      mean /= n;
      double m2 = 0;
      for (double x : v) m2 += (x - mean) * (x - mean);
      const double var = m2 / std::max(n - params.correction, 0.0);
      return {params.take_sqrt ? std::sqrt(var) : var, mean};
    }
    case Op::Max:
    case Op::Min:
    case Op::ArgMax:
    case Op::ArgMin: {
      const bool want_max = op == Op::Max || op == Op::ArgMax;
      size_t best = 0;
      for (size_t j = 0; j < v.size(); ++j) {
        if (std::isnan(v[j])) {
          best = j;
          break;
        }
        if (want_max ? v[j] > v[best] : v[j] < v[best]) best = j;
      }
      if (op == Op::ArgMax || op == Op::ArgMin) return {static_cast<double>(best), 0};
      return {v[best], static_cast<double>(best)};
    }
    case Op::Prod: {
      double p = 1;
      for (double x : v) p *= x;
      return {p, 0};
    }
    case Op::Norm: {
      if (std::isinf(params.p)) {
        double m = params.p > 0 ? 0 : std::numeric_limits<double>::infinity();
        for (double x : v) m = params.p > 0 ? std::max(m, std::fabs(x)) : std::min(m, std::fabs(x));
        return {m, 0};
      }
      double s = 0;
      for (double x : v) s += params.p == 0 ? (x != 0) : std::pow(std::fabs(x), params.p);
      return {params.p == 0 ? s : std::pow(s, 1.0 / params.p), 0};
    }
    case Op::All:
      return {static_cast<double>(std::all_of(v.begin(), v.end(), [](double x) { return x != 0; })),
              0};
    case Op::Any:
      return {static_cast<double>(std::any_of(v.begin(), v.end(), [](double x) { return x != 0; })),
              0};
    case Op::LogSumExp: {
      double m = -std::numeric_limits<double>::infinity();
      for (double x : v) m = std::max(m, x);
      if (std::isinf(m)) m = 0;
      double s = 0;
      for (double x : v) s += std::exp(x - m);
      return {std::log(s) + m, 0};
    }
  }
  return {0, 0};
}

void expect_reduction(Op op, const GeneralReduceParams& params, const TensorView& in, uint32_t mask,
                      DType primary_dtype, bool with_secondary) {
  std::vector<int64_t> sizes;
  for (int d = 0; d < in.ndim; ++d) sizes.push_back(((mask >> d) & 1u) ? 1 : in.sizes[d]);
  auto primary = make_tensor(primary_dtype, sizes);
  const DType secondary_dtype = op == Op::Var ? DType::Float32 : DType::Int64;
  auto secondary = make_tensor(secondary_dtype, sizes);
  TensorView secondary_view = secondary.view;
  if (!with_secondary) secondary_view.data = nullptr;
  reduce_general(op, params, primary.view, secondary_view, in, mask);
  for_each_index(primary.view, [&](const Index& out_index) {
    const auto values = gather_reduced(in, mask, out_index);
    const auto [want, want2] = reference(op, params, values);
    const double expected = testing::round_to(primary_dtype, want);
    EXPECT_TRUE(testing::close(primary_dtype, get(primary.view, out_index), expected))
        << "op " << static_cast<int>(op) << " mask " << mask << " got "
        << get(primary.view, out_index) << " want " << expected;
    if (with_secondary) {
      EXPECT_TRUE(testing::close(secondary_dtype, get(secondary.view, out_index),
                                 testing::round_to(secondary_dtype, want2)));
    }
  });
}

TEST(ReduceGeneral, FloatOpsOverDimSelections) {
  std::mt19937 rng(1);
  auto in = make_tensor(DType::Float32, {5, 6, 7});
  testing::fill_random(in.view, rng, -2, 2);
  for (uint32_t mask : {1u, 2u, 4u, 3u, 5u, 6u, 7u}) {
    GeneralReduceParams params;
    expect_reduction(Op::Var, params, in.view, mask, DType::Float32, true);
    params.take_sqrt = true;
    params.correction = 0;
    expect_reduction(Op::Var, params, in.view, mask, DType::Float32, true);
    for (Op op : {Op::Max, Op::Min}) expect_reduction(op, {}, in.view, mask, DType::Float32, true);
    for (Op op : {Op::ArgMax, Op::ArgMin})
      expect_reduction(op, {}, in.view, mask, DType::Int64, false);
    expect_reduction(Op::Prod, {}, in.view, mask, DType::Float32, false);
    expect_reduction(Op::LogSumExp, {}, in.view, mask, DType::Float32, false);
    for (double p : {2.0, 1.0, 0.0, 3.0, std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity()}) {
      GeneralReduceParams norm;
      norm.p = p;
      expect_reduction(Op::Norm, norm, in.view, mask, DType::Float32, false);
    }
  }
}

TEST(ReduceGeneral, NonContiguousAndNarrowDtypes) {
  std::mt19937 rng(2);
  for (DType dtype : {DType::BFloat16, DType::Float16, DType::Float32}) {
    auto in = make_tensor(dtype, {300, 40});
    testing::fill_random(in.view, rng, -3, 3);
    const TensorView transposed = permute(in.view, {1, 0});  // column blocks
    for (uint32_t mask : {1u, 2u}) {
      expect_reduction(Op::Max, {}, transposed, mask, dtype, true);
      expect_reduction(Op::Var, {}, transposed, mask, dtype, false);
      expect_reduction(Op::ArgMin, {}, in.view, mask, DType::Int64, false);
    }
  }
}

TEST(ReduceGeneral, IntegersBoolAndTies) {
  std::mt19937 rng(3);
  auto in = make_tensor(DType::Int32, {6, 50});
  testing::fill_random(in.view, rng, -4, 4);  // many ties
  for (uint32_t mask : {1u, 2u, 3u}) {
    for (Op op : {Op::Max, Op::Min}) expect_reduction(op, {}, in.view, mask, DType::Int32, true);
    for (Op op : {Op::ArgMax, Op::ArgMin})
      expect_reduction(op, {}, in.view, mask, DType::Int64, false);
    expect_reduction(Op::All, {}, in.view, mask, DType::Bool, false);
    expect_reduction(Op::Any, {}, in.view, mask, DType::Bool, false);
  }
  auto small = make_tensor(DType::Int64, {4, 5});
  testing::fill_random(small.view, rng, -3, 4);
  expect_reduction(Op::Prod, {}, small.view, 2u, DType::Int64, false);
}

TEST(ReduceGeneral, NanPropagatesAndFirstNanWins) {
  auto in = make_tensor(DType::Float32, {1, 6});
  const double values[] = {1, NAN, 5, NAN, -1, 2};
  for (int j = 0; j < 6; ++j) testing::set(in.view, {0, j}, values[j]);
  for (Op op : {Op::Max, Op::Min}) expect_reduction(op, {}, in.view, 2u, DType::Float32, true);
  expect_reduction(Op::ArgMax, {}, in.view, 2u, DType::Int64, false);
  expect_reduction(Op::LogSumExp, {}, in.view, 2u, DType::Float32, false);
}

TEST(ReduceGeneral, LargeFlatReductionSplitsAcrossThreads) {
  std::mt19937 rng(4);
  auto in = make_tensor(DType::Float32, {1 << 18});
  testing::fill_random(in.view, rng, -1, 1);
  testing::set(in.view, {200000}, 7.0);
  testing::set(in.view, {250000}, 7.0);  // a later tie must lose
  GeneralReduceParams params;
  expect_reduction(Op::Var, params, in.view, 1u, DType::Float32, true);
  expect_reduction(Op::Max, {}, in.view, 1u, DType::Float32, true);
  params.p = 2;
  expect_reduction(Op::Norm, params, in.view, 1u, DType::Float32, false);
}

TEST(ReduceGeneral, EmptyReductionsGiveIdentities) {
  auto in = make_tensor(DType::Float32, {3, 0});
  auto out = make_tensor(DType::Float32, {3, 1});
  reduce_general(Op::Prod, {}, out.view, TensorView{}, in.view, 2u);
  EXPECT_EQ(get(out.view, {1, 0}), 1.0);
  reduce_general(Op::LogSumExp, {}, out.view, TensorView{}, in.view, 2u);
  EXPECT_EQ(get(out.view, {1, 0}), -std::numeric_limits<double>::infinity());
  reduce_general(Op::Var, {}, out.view, TensorView{}, in.view, 2u);
  EXPECT_TRUE(std::isnan(get(out.view, {1, 0})));
}

}  // namespace
}  // namespace openneuron::kernels
