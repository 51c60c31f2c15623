// Integer GEMM against a wrapping triple loop (uint8..int64, transposed and broadcast operands,
// alpha/beta), and 3-D convolution / transposed convolution (forward, input and weight
// gradients) against double loops written from the definition.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/matmul/conv3d.h"
#include "kernels/matmul/integer_gemm.h"
#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::get;
using testing::HostTensor;
using testing::make_tensor;
using testing::random_tensor;
using Index = std::vector<int64_t>;

template <typename T>
void check_integer_gemm(DType dtype) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> dist(-(int64_t{1} << 40), int64_t{1} << 40);
  const int64_t m = 5, k = 9, n = 4;
  HostTensor a = make_tensor(dtype, {k, m});  // read transposed
  HostTensor b = make_tensor(dtype, {k, n});
  HostTensor bias = make_tensor(dtype, {1, n});  // broadcast over rows
  HostTensor out = make_tensor(dtype, {m, n});
  for (HostTensor* t : {&a, &b, &bias}) {
    T* data = static_cast<T*>(t->view.data);
    for (int64_t i = 0; i < t->view.numel(); ++i) data[i] = static_cast<T>(dist(rng));
  }
  TensorView a_t = testing::permute(a.view, {1, 0});
  TensorView bias_view = testing::expand(bias.view, {m, n});
  const int64_t alpha = 3, beta = -7;
  integer_gemm(out.view, a_t, b.view, &bias_view, alpha, beta);
  const T* av = static_cast<const T*>(a.view.data);
  const T* bv = static_cast<const T*>(b.view.data);
  const T* cv = static_cast<const T*>(bias.view.data);
  const T* ov = static_cast<const T*>(out.view.data);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      // Accumulated in the dtype itself, wrapping at every step, as the CPU does.
      T sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        sum = static_cast<T>(static_cast<uint64_t>(sum) + static_cast<uint64_t>(av[p * m + i]) *
                                                              static_cast<uint64_t>(bv[p * n + j]));
      }
      const T expected = static_cast<T>(static_cast<uint64_t>(alpha) * static_cast<uint64_t>(sum) +
                                        static_cast<uint64_t>(beta) * static_cast<uint64_t>(cv[j]));
      ASSERT_EQ(ov[i * n + j], expected) << dtype_name(dtype) << " at " << i << "," << j;
    }
  }
}

TEST(IntegerGemm, WrapsAroundLikeTheCpu) {
  check_integer_gemm<uint8_t>(DType::UInt8);
  check_integer_gemm<int8_t>(DType::Int8);
  check_integer_gemm<int16_t>(DType::Int16);
  check_integer_gemm<int32_t>(DType::Int32);
  check_integer_gemm<int64_t>(DType::Int64);
}

TEST(IntegerGemm, RejectsFloatingOperands) {
  HostTensor a = make_tensor(DType::Float32, {2, 2});
  EXPECT_THROW(integer_gemm(a.view, a.view, a.view, nullptr, 1, 0), std::invalid_argument);
}

struct Conv3dCase {
  int64_t batch, in_c, out_c, groups;
  Index in_size, kernel;
  Conv3dParams p;
  bool bias;
};

// fn(n, o, od, oh, ow, c, id, ih, iw, kd, kh, kw) for every tap inside the input.
template <typename Fn>
void for_each_tap(const Conv3dCase& c, const Index& out_size, Fn fn) {
  const int64_t og = c.out_c / c.groups, cg = c.in_c / c.groups;
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t o = 0; o < c.out_c; ++o)
      for (int64_t od = 0; od < out_size[0]; ++od)
        for (int64_t oh = 0; oh < out_size[1]; ++oh)
          for (int64_t ow = 0; ow < out_size[2]; ++ow)
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t kd = 0; kd < c.kernel[0]; ++kd)
                for (int64_t kh = 0; kh < c.kernel[1]; ++kh)
                  for (int64_t kw = 0; kw < c.kernel[2]; ++kw) {
                    const int64_t pos[3] = {od, oh, ow}, tap[3] = {kd, kh, kw};
                    int64_t at[3];
                    bool inside = true;
                    for (int d = 0; d < 3; ++d) {
                      at[d] = pos[d] * c.p.stride[d] - c.p.padding[d] + tap[d] * c.p.dilation[d];
                      inside = inside && at[d] >= 0 && at[d] < c.in_size[d];
                    }
                    if (inside) fn(n, o, od, oh, ow, (o / og) * cg + ci, ci, at, kd, kh, kw);
                  }
}

Index conv_out_size(const Conv3dCase& c) {
  Index size(3);
  for (int d = 0; d < 3; ++d) {
    size[d] = (c.in_size[d] + 2 * c.p.padding[d] - c.p.dilation[d] * (c.kernel[d] - 1) - 1) /
                  c.p.stride[d] +
              1;
  }
  return size;
}

void check_conv3d(Conv3dCase c, DType dtype) {
  c.p.groups = c.groups;
  std::mt19937 rng(3);
  const Index os = conv_out_size(c);
  HostTensor input =
      random_tensor(dtype, {c.batch, c.in_c, c.in_size[0], c.in_size[1], c.in_size[2]}, rng, -1, 1);
  HostTensor weight = random_tensor(
      dtype, {c.out_c, c.in_c / c.groups, c.kernel[0], c.kernel[1], c.kernel[2]}, rng, -1, 1);
  HostTensor bias = random_tensor(dtype, {c.out_c}, rng, -1, 1);
  HostTensor grad_out = random_tensor(dtype, {c.batch, c.out_c, os[0], os[1], os[2]}, rng, -1, 1);
  HostTensor out = make_tensor(dtype, {c.batch, c.out_c, os[0], os[1], os[2]});
  HostTensor grad_in =
      make_tensor(dtype, {c.batch, c.in_c, c.in_size[0], c.in_size[1], c.in_size[2]});
  HostTensor grad_w =
      make_tensor(dtype, {c.out_c, c.in_c / c.groups, c.kernel[0], c.kernel[1], c.kernel[2]});
  conv3d_forward(out.view, input.view, weight.view, c.bias ? &bias.view : nullptr, c.p);
  conv3d_backward(&grad_in.view, &grad_w.view, nullptr, grad_out.view, input.view, weight.view,
                  c.p);
  std::vector<double> want_out(out.view.numel(), 0.0), want_gi(grad_in.view.numel(), 0.0),
      want_gw(grad_w.view.numel(), 0.0);
  const auto flat = [](const TensorView& v, const Index& index) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d) offset += index[d] * v.strides[d];
    return offset;
  };
  for_each_tap(
      c, os,
      [&](int64_t n, int64_t o, int64_t od, int64_t oh, int64_t ow, int64_t ch, int64_t ci,
          const int64_t* at, int64_t kd, int64_t kh, int64_t kw) {
        const Index in_idx = {n, ch, at[0], at[1], at[2]}, w_idx = {o, ci, kd, kh, kw},
                    out_idx = {n, o, od, oh, ow};
        want_out[flat(out.view, out_idx)] += get(input.view, in_idx) * get(weight.view, w_idx);
        want_gi[flat(grad_in.view, in_idx)] +=
            get(grad_out.view, out_idx) * get(weight.view, w_idx);
        want_gw[flat(grad_w.view, w_idx)] += get(grad_out.view, out_idx) * get(input.view, in_idx);
      });
  const auto expect_close = [&](const TensorView& view, const std::vector<double>& want,
                                const char* what, bool add_bias) {
    testing::for_each_index(view, [&](const Index& index) {
      double expected = want[flat(view, index)];
      if (add_bias) expected += get(bias.view, {index[1]});
      const double actual = get(view, index);
      ASSERT_NEAR(actual, expected, 8 * testing::tolerance(dtype, expected))
          << what << " " << dtype_name(dtype);
    });
  };
  expect_close(out.view, want_out, "forward", c.bias);
  expect_close(grad_in.view, want_gi, "grad_input", false);
  expect_close(grad_w.view, want_gw, "grad_weight", false);

  // The transposed convolution is the input gradient: feed grad_out through it.
  Conv3dParams p = c.p;
  HostTensor t_out =
      make_tensor(dtype, {c.batch, c.in_c, c.in_size[0], c.in_size[1], c.in_size[2]});
  // Its weight is [C_in_of_transposed = out_c, out_c_of_transposed / groups, ...]: the same memory.
  conv_transpose3d_forward(t_out.view, grad_out.view, weight.view, nullptr, p);
  expect_close(t_out.view, want_gi, "conv_transpose3d forward", false);
}

TEST(Conv3d, MatchesTheDefinition) {
  Conv3dCase plain{2, 3, 4, 1, {4, 5, 4}, {2, 3, 2}, {}, true};
  plain.p.padding[1] = 1;
  plain.p.stride[2] = 2;
  Conv3dCase grouped{1, 4, 6, 2, {5, 4, 4}, {3, 2, 3}, {}, false};
  grouped.p.dilation[0] = 2;
  grouped.p.padding[0] = 2;
  grouped.p.stride[0] = 2;
  for (const DType dtype : {DType::Float32, DType::BFloat16, DType::Float16}) {
    check_conv3d(plain, dtype);
    check_conv3d(grouped, dtype);
  }
}

}  // namespace
}  // namespace openneuron::kernels
