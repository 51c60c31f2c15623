// Reflection and replication padding against index formulas written from their definitions
// (forward), and against the sum over the output elements each input element was copied to
// (backward): 1-3 padded dims, cropping, strided views, fp32 / bf16 / fp16, many planes.
#include "kernels/nn/padding.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::get;
using testing::HostTensor;
using testing::make_tensor;
using testing::permute;
using testing::random_tensor;
using Index = std::vector<int64_t>;

// The input index output index o reads, from the definition of each mode.
int64_t source(PadMode mode, int64_t o, int64_t before, int64_t in) {
  const int64_t i = o - before;
  if (mode == PadMode::Replicate) return i < 0 ? 0 : (i >= in ? in - 1 : i);
  // Reflection about the first and last element (the edge itself is not repeated).
  if (i < 0) return -i;
  if (i >= in) return (in - 1) - (i - (in - 1));
  return i;
}

struct Case {
  std::string name;
  PadMode mode;
  std::vector<int64_t> input_sizes;  // leading dims then padded dims
  PadAmounts amounts;
};

PadAmounts amounts(int dims, std::vector<int64_t> before, std::vector<int64_t> after) {
  PadAmounts a;
  a.spatial_dims = dims;
  for (int k = 0; k < dims; ++k) {
    a.before[k] = before[k];
    a.after[k] = after[k];
  }
  return a;
}

Index source_index(const Case& c, const Index& out_index) {
  Index in_index = out_index;
  const int lead = static_cast<int>(c.input_sizes.size()) - c.amounts.spatial_dims;
  for (int k = 0; k < c.amounts.spatial_dims; ++k) {
    in_index[lead + k] =
        source(c.mode, out_index[lead + k], c.amounts.before[k], c.input_sizes[lead + k]);
  }
  return in_index;
}

class Padding : public ::testing::TestWithParam<DType> {};

TEST_P(Padding, ForwardAndBackwardMatchDefinition) {
  const DType dtype = GetParam();
  const std::vector<Case> cases = {
      {"reflect_1d", PadMode::Reflect, {2, 3, 7}, amounts(1, {3}, {2})},
      {"reflect_2d", PadMode::Reflect, {2, 3, 5, 6}, amounts(2, {2, 4}, {4, 1})},
      {"reflect_3d_crop", PadMode::Reflect, {2, 4, 5, 6}, amounts(3, {1, -1, 2}, {3, 2, -2})},
      {"reflect_2d_no_batch", PadMode::Reflect, {3, 4, 4}, amounts(2, {3, 3}, {3, 3})},
      {"replicate_1d", PadMode::Replicate, {2, 3, 4}, amounts(1, {6}, {5})},
      {"replicate_2d", PadMode::Replicate, {2, 2, 3, 5}, amounts(2, {4, 0}, {1, 7})},
      {"replicate_3d", PadMode::Replicate, {1, 2, 2, 3, 4}, amounts(3, {2, 1, 3}, {1, 4, 0})},
      {"replicate_many_planes", PadMode::Replicate, {64, 70, 9}, amounts(1, {2}, {3})},
  };
  std::mt19937 rng(5);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name + " " + dtype_name(dtype));
    std::vector<int64_t> out_sizes = c.input_sizes;
    const int lead = static_cast<int>(c.input_sizes.size()) - c.amounts.spatial_dims;
    for (int k = 0; k < c.amounts.spatial_dims; ++k) {
      out_sizes[lead + k] += c.amounts.before[k] + c.amounts.after[k];
    }
    HostTensor input = random_tensor(dtype, c.input_sizes, rng);
    HostTensor out = make_tensor(dtype, out_sizes);
    pad_forward(c.mode, out.view, input.view, c.amounts);
    testing::for_each_index(out.view, [&](const Index& i) {
      ASSERT_EQ(get(out.view, i), get(input.view, source_index(c, i)));
    });

    HostTensor grad_out = random_tensor(dtype, out_sizes, rng);
    HostTensor grad_input = make_tensor(dtype, c.input_sizes);
    pad_backward(c.mode, grad_input.view, grad_out.view, c.amounts);
    HostTensor expected = make_tensor(DType::Float64, c.input_sizes);
    testing::for_each_index(grad_out.view, [&](const Index& i) {
      const Index s = source_index(c, i);
      testing::set(expected.view, s, get(expected.view, s) + get(grad_out.view, i));
    });
    testing::for_each_index(grad_input.view, [&](const Index& i) {
      const double want = testing::round_to(dtype, get(expected.view, i));
      // fp32 accumulation of a handful of terms, rounded once.
      EXPECT_NEAR(get(grad_input.view, i), want, testing::tolerance(dtype, want));
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, Padding,
                         ::testing::Values(DType::Float32, DType::BFloat16, DType::Float16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(PaddingLayouts, StridedViewsInAndOut) {
  std::mt19937 rng(9);
  HostTensor input = random_tensor(DType::Float32, {5, 4, 3}, rng);  // read as [3, 4, 5]
  HostTensor out = make_tensor(DType::Float32, {7, 6, 3});           // written as [3, 6, 7]
  const TensorView in_view = permute(input.view, {2, 1, 0});
  const TensorView out_view = permute(out.view, {2, 1, 0});
  const PadAmounts a = amounts(2, {1, 1}, {1, 1});
  pad_forward(PadMode::Reflect, out_view, in_view, a);
  const Case c{"strided", PadMode::Reflect, {3, 4, 5}, a};
  testing::for_each_index(out_view, [&](const Index& i) {
    ASSERT_EQ(get(out_view, i), get(in_view, source_index(c, i)));
  });
}

TEST(PaddingChecks, ReflectionPadAtTheInputSizeIsRefused) {
  HostTensor input = make_tensor(DType::Float32, {1, 3});
  HostTensor out = make_tensor(DType::Float32, {1, 9});
  EXPECT_THROW(pad_forward(PadMode::Reflect, out.view, input.view, amounts(1, {3}, {3})),
               std::invalid_argument);
  EXPECT_NO_THROW(pad_forward(PadMode::Replicate, out.view, input.view, amounts(1, {3}, {3})));
}

}  // namespace
}  // namespace openneuron::kernels
