// The oneDNN convolution path against double-precision reference loops: strides, padding,
// dilation, groups (depthwise too), bias or none, batch split across threads, non-contiguous
// operands, and fp32 / bf16 / fp16. Cases marked native must run on oneDNN at the CPU's ISA
// level; the others are checked through conv2d_forward/backward (oneDNN if it takes them,
// else the im2col fallback).
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "kernels/matmul/dnnl_conv.h"
#include "kernels/runtime/cpu_isa.h"
#include "test_util.h"

namespace openneuron::kernels {
namespace {

using testing::get;
using testing::HostTensor;
using testing::make_tensor;
using testing::random_tensor;
using Index = std::vector<int64_t>;

struct ConvProblem {
  std::string name;
  int64_t batch, channels, height, width, out_channels, kernel_h, kernel_w;
  int64_t stride[2], padding[2], dilation[2], groups;
  bool bias;
  DType dtype;
  // oneDNN 2.6 has JIT kernels for the forward / backward (else the im2col fallback runs)
  // on AVX-512; native_on_avx2 says whether that holds on an AVX2-only CPU too.
  bool native_forward, native_backward;
  bool native_on_avx2 = true;
};

void PrintTo(const ConvProblem& c, std::ostream* os) { *os << c.name; }

Conv2dParams params_of(const ConvProblem& c) {
  Conv2dParams p;
  for (int d = 0; d < 2; ++d) {
    p.stride[d] = c.stride[d];
    p.padding[d] = c.padding[d];
    p.dilation[d] = c.dilation[d];
  }
  p.groups = c.groups;
  return p;
}

int64_t out_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
  return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

// A flat double array in NCHW order with its own indexing.
struct Dense4d {
  int64_t sizes[4];
  std::vector<double> values;
  explicit Dense4d(const TensorView& shape_of) {
    for (int d = 0; d < 4; ++d) sizes[d] = shape_of.sizes[d];
    values.assign(static_cast<size_t>(sizes[0] * sizes[1] * sizes[2] * sizes[3]), 0.0);
  }
  double& at(int64_t a, int64_t b, int64_t c, int64_t d) {
    return values[static_cast<size_t>(((a * sizes[1] + b) * sizes[2] + c) * sizes[3] + d)];
  }
};

// Reference forward and gradients (for grad_out G) in double, with the L1 norms of the terms
// of every sum: rounding error scales with those, not with the (possibly cancelling) sum.
struct Reference {
  Dense4d out, out_l1, grad_input, grad_input_l1, grad_weight, grad_weight_l1;
  std::vector<double> grad_bias, grad_bias_l1;
  Reference(const TensorView& input, const TensorView& weight, const TensorView* bias,
            const TensorView& out_view, const TensorView& grad_out, const Conv2dParams& p)
      : out(out_view),
        out_l1(out_view),
        grad_input(input),
        grad_input_l1(input),
        grad_weight(weight),
        grad_weight_l1(weight),
        grad_bias(static_cast<size_t>(weight.sizes[0]), 0.0),
        grad_bias_l1(static_cast<size_t>(weight.sizes[0]), 0.0) {
    const int64_t cg = weight.sizes[1], og = weight.sizes[0] / p.groups;
    testing::for_each_index(out_view, [&](const Index& o) {
      const int64_t n = o[0], oc = o[1], oh = o[2], ow = o[3], group = oc / og;
      const double g = get(grad_out, o);
      double sum = bias ? get(*bias, {oc}) : 0.0, l1 = std::fabs(sum);
      grad_bias[static_cast<size_t>(oc)] += g;
      grad_bias_l1[static_cast<size_t>(oc)] += std::fabs(g);
      for (int64_t c = 0; c < cg; ++c) {
        for (int64_t kh = 0; kh < weight.sizes[2]; ++kh) {
          for (int64_t kw = 0; kw < weight.sizes[3]; ++kw) {
            const int64_t ih = oh * p.stride[0] - p.padding[0] + kh * p.dilation[0];
            const int64_t iw = ow * p.stride[1] - p.padding[1] + kw * p.dilation[1];
            if (ih < 0 || ih >= input.sizes[2] || iw < 0 || iw >= input.sizes[3]) continue;
            const int64_t ic = group * cg + c;
            const double x = get(input, {n, ic, ih, iw}), w = get(weight, {oc, c, kh, kw});
            sum += x * w;
            l1 += std::fabs(x * w);
            grad_input.at(n, ic, ih, iw) += g * w;
            grad_input_l1.at(n, ic, ih, iw) += std::fabs(g * w);
            grad_weight.at(oc, c, kh, kw) += g * x;
            grad_weight_l1.at(oc, c, kh, kw) += std::fabs(g * x);
          }
        }
      }
      out.at(n, oc, oh, ow) = sum;
      out_l1.at(n, oc, oh, ow) = l1;
    });
  }
};

// One rounding to the stored dtype of an fp32 sum: relative to the value, plus fp32
// accumulation error relative to the terms.
double allowed(DType dtype, double expected, double l1) {
  const double unit = dtype == DType::BFloat16  ? 1.0 / 128
                      : dtype == DType::Float16 ? 1.0 / 1024
                                                : 0.0;
  return unit * std::fabs(expected) + 2e-6 * l1 + 1e-6;
}

void expect_matches(const char* what, const TensorView& actual, Dense4d& expected, Dense4d& l1) {
  int failures = 0;
  testing::for_each_index(actual, [&](const Index& i) {
    const double want = expected.at(i[0], i[1], i[2], i[3]);
    const double got = get(actual, i);
    const double slack = allowed(actual.dtype, want, l1.at(i[0], i[1], i[2], i[3]));
    if (std::fabs(got - want) > slack && ++failures <= 5) {
      ADD_FAILURE() << what << " [" << i[0] << "," << i[1] << "," << i[2] << "," << i[3]
                    << "]: got " << got << ", want " << want << " (allowed " << slack << ")";
    }
  });
}

class DnnlConv : public ::testing::TestWithParam<ConvProblem> {};

TEST_P(DnnlConv, ForwardAndGradientsMatchReference) {
  const ConvProblem c = GetParam();
  const Conv2dParams p = params_of(c);
  std::mt19937 rng(11);
  const int64_t oh = out_size(c.height, c.kernel_h, c.stride[0], c.padding[0], c.dilation[0]);
  const int64_t ow = out_size(c.width, c.kernel_w, c.stride[1], c.padding[1], c.dilation[1]);
  HostTensor input = random_tensor(c.dtype, {c.batch, c.channels, c.height, c.width}, rng);
  HostTensor weight =
      random_tensor(c.dtype, {c.out_channels, c.channels / c.groups, c.kernel_h, c.kernel_w}, rng);
  HostTensor bias = random_tensor(c.dtype, {c.out_channels}, rng);
  HostTensor grad_out = random_tensor(c.dtype, {c.batch, c.out_channels, oh, ow}, rng);
  HostTensor out = make_tensor(c.dtype, {c.batch, c.out_channels, oh, ow});
  HostTensor grad_input = make_tensor(c.dtype, {c.batch, c.channels, c.height, c.width});
  HostTensor grad_weight =
      make_tensor(c.dtype, {c.out_channels, c.channels / c.groups, c.kernel_h, c.kernel_w});
  HostTensor grad_bias = make_tensor(c.dtype, {c.out_channels});
  const TensorView* bias_view = c.bias ? &bias.view : nullptr;

  const TensorView* grad_bias_view = c.bias ? &grad_bias.view : nullptr;
  const bool native_here = cpu_isa() >= CpuIsa::kAvx512 || c.native_on_avx2;
  if (c.native_forward && native_here) {
    ASSERT_TRUE(dnnl_conv2d_forward(out.view, input.view, weight.view, bias_view, p));
  } else {
    conv2d_forward(out.view, input.view, weight.view, bias_view, p);
  }
  if (c.native_backward && native_here) {
    ASSERT_TRUE(dnnl_conv2d_backward(&grad_input.view, &grad_weight.view, grad_bias_view,
                                     grad_out.view, input.view, weight.view, p));
  } else {
    conv2d_backward(&grad_input.view, &grad_weight.view, grad_bias_view, grad_out.view, input.view,
                    weight.view, p);
  }
  Reference ref(input.view, weight.view, bias_view, out.view, grad_out.view, p);
  expect_matches("out", out.view, ref.out, ref.out_l1);
  expect_matches("grad_input", grad_input.view, ref.grad_input, ref.grad_input_l1);
  expect_matches("grad_weight", grad_weight.view, ref.grad_weight, ref.grad_weight_l1);
  if (c.bias) {
    for (int64_t o = 0; o < c.out_channels; ++o) {
      const double want = ref.grad_bias[static_cast<size_t>(o)];
      EXPECT_NEAR(get(grad_bias.view, {o}), want,
                  allowed(c.dtype, want, ref.grad_bias_l1[static_cast<size_t>(o)]))
          << "grad_bias " << o;
    }
  }
}

ConvProblem problem(std::string name, int64_t batch, int64_t channels, int64_t height,
                    int64_t width, int64_t out_channels, int64_t kernel_h, int64_t kernel_w,
                    int64_t stride_h, int64_t stride_w, int64_t pad_h, int64_t pad_w,
                    int64_t dilation_h, int64_t dilation_w, int64_t groups, bool bias, DType dtype,
                    bool native_forward = true, bool native_backward = true,
                    bool native_on_avx2 = true) {
  return ConvProblem{std::move(name),
                     batch,
                     channels,
                     height,
                     width,
                     out_channels,
                     kernel_h,
                     kernel_w,
                     {stride_h, stride_w},
                     {pad_h, pad_w},
                     {dilation_h, dilation_w},
                     groups,
                     bias,
                     dtype,
                     native_forward,
                     native_backward,
                     native_on_avx2};
}

std::vector<ConvProblem> problems() {
  std::vector<ConvProblem> all;
  for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float16}) {
    const std::string suffix = dtype == DType::Float32    ? "F32"
                               : dtype == DType::BFloat16 ? "BF16"
                                                          : "F16";
    all.push_back(
        problem("Basic3x3" + suffix, 2, 4, 9, 8, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, true, dtype));
    // No JIT kernels in oneDNN 2.6 for these (gemm-based ones only, which we do not use).
    all.push_back(problem("StridePadDilation" + suffix, 2, 4, 11, 10, 5, 3, 3, 2, 2, 2, 2, 2, 2, 1,
                          false, dtype, false, false));
    all.push_back(problem("Groups" + suffix, 2, 6, 7, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1, 3, true, dtype,
                          false, false));
    all.push_back(problem("DepthwiseMultiplier2" + suffix, 2, 6, 7, 7, 12, 3, 3, 2, 2, 1, 1, 1, 1,
                          6, false, dtype, false, false));
    all.push_back(problem("OneDDilated" + suffix, 2, 4, 1, 15, 5, 1, 3, 1, 2, 0, 2, 1, 2, 1, true,
                          dtype, false, false));
    all.push_back(problem("Dilation" + suffix, 2, 4, 11, 10, 5, 3, 3, 1, 1, 2, 2, 2, 2, 1, true,
                          dtype, true, false));
    // Native: 16-channel groups, 1-D.
    all.push_back(
        problem("Groups16" + suffix, 2, 32, 6, 6, 32, 3, 3, 1, 1, 1, 1, 1, 1, 2, true, dtype));
    // Native on AVX-512 only (oneDNN 2.6's AVX2 kernels take neither).
    all.push_back(problem("OneD" + suffix, 2, 4, 1, 15, 5, 1, 3, 1, 2, 0, 1, 1, 1, 1, true, dtype,
                          true, true, false));
    all.push_back(problem("AsymmetricStridePad" + suffix, 3, 3, 8, 9, 4, 3, 2, 2, 1, 0, 1, 1, 3, 1,
                          true, dtype, true, true, false));
    all.push_back(
        problem("Depthwise" + suffix, 2, 16, 8, 8, 16, 3, 3, 1, 1, 1, 1, 1, 1, 16, true, dtype));
    all.push_back(
        problem("Pointwise" + suffix, 2, 5, 6, 6, 7, 1, 1, 1, 1, 0, 0, 1, 1, 1, true, dtype));
    // Enough work to split the batch across threads, with unequal pieces (5 = 3 + 2).
    all.push_back(
        problem("BatchSplit" + suffix, 5, 16, 12, 12, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, true, dtype));
    all.push_back(
        problem("FirstLayer" + suffix, 4, 3, 32, 32, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, true, dtype));
  }
  return all;
}

INSTANTIATE_TEST_SUITE_P(Problems, DnnlConv, ::testing::ValuesIn(problems()),
                         [](const ::testing::TestParamInfo<ConvProblem>& info) {
                           return info.param.name;
                         });

// Channels-last and strided (sliced) operands, read in place or through dense copies.
TEST(DnnlConvLayouts, NonContiguousOperands) {
  std::mt19937 rng(5);
  Conv2dParams p;
  p.padding[0] = p.padding[1] = 1;
  for (DType dtype : {DType::Float32, DType::BFloat16}) {
    HostTensor input_nhwc = random_tensor(dtype, {2, 7, 12, 5}, rng);
    const TensorView nhwc = testing::permute(input_nhwc.view, {0, 3, 1, 2});  // [2, 5, 7, 12]
    const TensorView input = testing::slice(nhwc, 3, 1, 5, 2);                // every other column
    HostTensor weight_storage = random_tensor(dtype, {3, 3, 5, 4}, rng);
    const TensorView weight = testing::permute(weight_storage.view, {3, 2, 0, 1});  // [4, 5, 3, 3]
    HostTensor out_storage = make_tensor(dtype, {2, 7, 5, 4});
    const TensorView out = testing::permute(out_storage.view, {0, 3, 1, 2});  // [2, 4, 7, 5]
    HostTensor grad_out = random_tensor(dtype, {2, 4, 7, 5}, rng);
    HostTensor grad_input_storage = make_tensor(dtype, {2, 7, 5, 5});
    const TensorView grad_input = testing::permute(grad_input_storage.view, {0, 3, 1, 2});
    HostTensor grad_weight = make_tensor(dtype, {4, 5, 3, 3});
    ASSERT_TRUE(dnnl_conv2d_forward(out, input, weight, nullptr, p));
    ASSERT_TRUE(dnnl_conv2d_backward(&grad_input, &grad_weight.view, nullptr, grad_out.view, input,
                                     weight, p));
    Reference ref(input, weight, nullptr, out, grad_out.view, p);
    expect_matches("out", out, ref.out, ref.out_l1);
    expect_matches("grad_input", grad_input, ref.grad_input, ref.grad_input_l1);
    expect_matches("grad_weight", grad_weight.view, ref.grad_weight, ref.grad_weight_l1);
  }
}

// A broadcast (stride-0) grad_out, as autograd hands over for sum(): dense copies, same result.
TEST(DnnlConvLayouts, BroadcastGradOut) {
  std::mt19937 rng(6);
  Conv2dParams p;
  HostTensor input = random_tensor(DType::Float32, {2, 3, 6, 6}, rng);
  HostTensor weight = random_tensor(DType::Float32, {4, 3, 3, 3}, rng);
  HostTensor one = make_tensor(DType::Float32, {1, 1, 1, 1});
  testing::set(one.view, {0, 0, 0, 0}, 1.0);
  const TensorView grad_out = testing::expand(one.view, {2, 4, 4, 4});
  HostTensor grad_weight = make_tensor(DType::Float32, {4, 3, 3, 3});
  HostTensor grad_bias = make_tensor(DType::Float32, {4});
  ASSERT_TRUE(dnnl_conv2d_backward(nullptr, &grad_weight.view, &grad_bias.view, grad_out,
                                   input.view, weight.view, p));
  HostTensor out = make_tensor(DType::Float32, {2, 4, 4, 4});
  Reference ref(input.view, weight.view, nullptr, out.view, grad_out, p);
  expect_matches("grad_weight", grad_weight.view, ref.grad_weight, ref.grad_weight_l1);
  for (int64_t o = 0; o < 4; ++o) EXPECT_NEAR(get(grad_bias.view, {o}), 32.0, 1e-5);
}

// Zero-size problems are left to the caller (the im2col path handles them).
TEST(DnnlConvLayouts, ZeroSizeDeclines) {
  Conv2dParams p;
  HostTensor input = make_tensor(DType::Float32, {2, 0, 5, 5});
  HostTensor weight = make_tensor(DType::Float32, {3, 0, 3, 3});
  HostTensor out = make_tensor(DType::Float32, {2, 3, 3, 3});
  EXPECT_FALSE(dnnl_conv2d_forward(out.view, input.view, weight.view, nullptr, p));
}

// Repeated calls reuse cached primitives and per-thread buffers; results must not drift.
TEST(DnnlConvLayouts, RepeatedCallsAreDeterministic) {
  std::mt19937 rng(9);
  Conv2dParams p;
  p.padding[0] = p.padding[1] = 1;
  HostTensor input = random_tensor(DType::Float32, {4, 16, 10, 10}, rng);
  HostTensor weight = random_tensor(DType::Float32, {16, 16, 3, 3}, rng);
  HostTensor first = make_tensor(DType::Float32, {4, 16, 10, 10});
  HostTensor again = make_tensor(DType::Float32, {4, 16, 10, 10});
  ASSERT_TRUE(dnnl_conv2d_forward(first.view, input.view, weight.view, nullptr, p));
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(dnnl_conv2d_forward(again.view, input.view, weight.view, nullptr, p));
  EXPECT_EQ(first.storage, again.storage);
}

}  // namespace
}  // namespace openneuron::kernels
