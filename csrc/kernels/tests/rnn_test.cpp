// Fused LSTM / GRU cells against reference loops in double: forward, backward, biases or
// none, absent incoming gradients, strided (transposed) inputs, and 16-bit rounding.
#include "kernels/nn/rnn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::get;
using testing::HostTensor;
using testing::make_tensor;
using testing::random_tensor;

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// A [rows, cols] tensor stored column-major: the kernel sees non-unit inner strides.
struct Transposed {
  HostTensor storage;
  TensorView view;
};
Transposed random_transposed(DType dtype, int64_t rows, int64_t cols, std::mt19937& rng) {
  Transposed t{random_tensor(dtype, {cols, rows}, rng, -2.0, 2.0), {}};
  t.view = testing::permute(t.storage.view, {1, 0});
  return t;
}

double at2(const TensorView& v, int64_t r, int64_t c) { return get(v, {r, c}); }
double at1(const TensorView* v, int64_t c) { return v == nullptr ? 0.0 : get(*v, {c}); }

void expect_close(const TensorView& actual, const std::vector<double>& want, int64_t cols,
                  const char* what, double slack = 1.0) {
  for (size_t i = 0; i < want.size(); ++i) {
    const int64_t r = static_cast<int64_t>(i) / cols, c = static_cast<int64_t>(i) % cols;
    EXPECT_NEAR(at2(actual, r, c), want[i], slack * testing::tolerance(actual.dtype, want[i]))
        << what << " at (" << r << ", " << c << ")";
  }
}

struct LstmCase {
  DType dtype;
  bool bias;
  bool transposed_gates;
};

class LstmCellTest : public ::testing::TestWithParam<LstmCase> {};

TEST_P(LstmCellTest, ForwardAndBackwardMatchReference) {
  const LstmCase p = GetParam();
  std::mt19937 rng(7);
  const int64_t B = 5, H = 6, G = 4 * H;
  Transposed ig_t = random_transposed(p.dtype, B, G, rng);
  HostTensor ig_c = random_tensor(p.dtype, {B, G}, rng, -2.0, 2.0);
  const TensorView ig = p.transposed_gates ? ig_t.view : ig_c.view;
  HostTensor hg = random_tensor(p.dtype, {B, G}, rng, -2.0, 2.0);
  HostTensor cx = random_tensor(p.dtype, {B, H}, rng, -2.0, 2.0);
  HostTensor bi = random_tensor(p.dtype, {G}, rng, -2.0, 2.0),
             bh = random_tensor(p.dtype, {G}, rng, -2.0, 2.0);
  HostTensor hy = make_tensor(p.dtype, {B, H}), cy = make_tensor(p.dtype, {B, H});
  HostTensor ws = make_tensor(DType::Float32, {B, G});
  lstm_cell_forward(hy.view, cy.view, ws.view, ig, hg.view, cx.view, p.bias ? &bi.view : nullptr,
                    p.bias ? &bh.view : nullptr);

  std::vector<double> want_hy(B * H), want_cy(B * H), act(B * G);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t j = 0; j < H; ++j) {
      double gate[4];
      for (int k = 0; k < 4; ++k) {
        const int64_t c = k * H + j;
        const TensorView* bias_i = p.bias ? &bi.view : nullptr;
        const TensorView* bias_h = p.bias ? &bh.view : nullptr;
        gate[k] = at2(ig, b, c) + at1(bias_i, c) + at2(hg.view, b, c) + at1(bias_h, c);
      }
      const double i = sigmoid(gate[0]), f = sigmoid(gate[1]), g = std::tanh(gate[2]),
                   o = sigmoid(gate[3]);
      const double c = f * at2(cx.view, b, j) + i * g;
      want_cy[b * H + j] = c;
      want_hy[b * H + j] = o * std::tanh(c);
      act[b * G + j] = i;
      act[b * G + H + j] = f;
      act[b * G + 2 * H + j] = g;
      act[b * G + 3 * H + j] = o;
    }
  }
  expect_close(hy.view, want_hy, H, "hy");
  expect_close(cy.view, want_cy, H, "cy");
  expect_close(ws.view, act, G, "workspace");

  // Backward from the kernel's own forward state; grad_cy absent in the fp32 case.
  const bool with_grad_cy = p.dtype != DType::Float32;
  HostTensor ghy = random_tensor(p.dtype, {B, H}, rng, -2.0, 2.0);
  HostTensor gcy = random_tensor(p.dtype, {B, H}, rng, -2.0, 2.0);
  HostTensor grad_gates = make_tensor(p.dtype, {B, G}), grad_cx = make_tensor(p.dtype, {B, H});
  lstm_cell_backward(grad_gates.view, grad_cx.view, &ghy.view, with_grad_cy ? &gcy.view : nullptr,
                     cx.view, cy.view, ws.view);
  std::vector<double> want_gg(B * G), want_gcx(B * H);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t j = 0; j < H; ++j) {
      const double i = at2(ws.view, b, j), f = at2(ws.view, b, H + j),
                   g = at2(ws.view, b, 2 * H + j), o = at2(ws.view, b, 3 * H + j);
      const double tc = std::tanh(at2(cy.view, b, j));
      const double gh = at2(ghy.view, b, j), gc = with_grad_cy ? at2(gcy.view, b, j) : 0.0;
      const double dc = gh * o * (1 - tc * tc) + gc;
      want_gg[b * G + j] = dc * g * (1 - i) * i;
      want_gg[b * G + H + j] = dc * at2(cx.view, b, j) * (1 - f) * f;
      want_gg[b * G + 2 * H + j] = dc * i * (1 - g * g);
      want_gg[b * G + 3 * H + j] = gh * tc * (1 - o) * o;
      want_gcx[b * H + j] = dc * f;
    }
  }
  expect_close(grad_gates.view, want_gg, G, "grad_gates");
  expect_close(grad_cx.view, want_gcx, H, "grad_cx");
}

INSTANTIATE_TEST_SUITE_P(Cases, LstmCellTest,
                         ::testing::Values(LstmCase{DType::Float32, true, false},
                                           LstmCase{DType::Float32, false, true},
                                           LstmCase{DType::BFloat16, true, true},
                                           LstmCase{DType::Float16, true, false}));

class GruCellTest : public ::testing::TestWithParam<LstmCase> {};

TEST_P(GruCellTest, ForwardAndBackwardMatchReference) {
  const LstmCase p = GetParam();
  std::mt19937 rng(11);
  const int64_t B = 4, H = 7, G = 3 * H;
  Transposed ig_t = random_transposed(p.dtype, B, G, rng);
  HostTensor ig_c = random_tensor(p.dtype, {B, G}, rng, -2.0, 2.0);
  const TensorView ig = p.transposed_gates ? ig_t.view : ig_c.view;
  HostTensor hg = random_tensor(p.dtype, {B, G}, rng, -2.0, 2.0);
  HostTensor hx = random_tensor(p.dtype, {B, H}, rng, -2.0, 2.0);
  HostTensor bi = random_tensor(p.dtype, {G}, rng, -2.0, 2.0),
             bh = random_tensor(p.dtype, {G}, rng, -2.0, 2.0);
  HostTensor hy = make_tensor(p.dtype, {B, H});
  HostTensor ws = make_tensor(DType::Float32, {B, 5 * H});
  const TensorView* bias_i = p.bias ? &bi.view : nullptr;
  const TensorView* bias_h = p.bias ? &bh.view : nullptr;
  gru_cell_forward(hy.view, ws.view, ig, hg.view, hx.view, bias_i, bias_h);

  std::vector<double> want_hy(B * H), saved(B * 5 * H);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t j = 0; j < H; ++j) {
      auto in = [&](int k) { return at2(ig, b, k * H + j) + at1(bias_i, k * H + j); };
      auto hid = [&](int k) { return at2(hg.view, b, k * H + j) + at1(bias_h, k * H + j); };
      const double r = sigmoid(in(0) + hid(0)), z = sigmoid(in(1) + hid(1));
      const double n = std::tanh(in(2) + r * hid(2));
      const double h = at2(hx.view, b, j);
      want_hy[b * H + j] = n + z * (h - n);
      const double row[5] = {r, z, n, hid(2), h};
      for (int k = 0; k < 5; ++k) saved[b * 5 * H + k * H + j] = row[k];
    }
  }
  expect_close(hy.view, want_hy, H, "hy");
  expect_close(ws.view, saved, 5 * H, "workspace");

  HostTensor ghy = random_tensor(p.dtype, {B, H}, rng, -2.0, 2.0);
  HostTensor gi = make_tensor(p.dtype, {B, G}), gh = make_tensor(p.dtype, {B, G});
  HostTensor ghx = make_tensor(p.dtype, {B, H});
  gru_cell_backward(gi.view, gh.view, ghx.view, ghy.view, ws.view);
  std::vector<double> want_gi(B * G), want_gh(B * G), want_ghx(B * H);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t j = 0; j < H; ++j) {
      auto s = [&](int k) { return at2(ws.view, b, k * H + j); };
      const double r = s(0), z = s(1), n = s(2), hn = s(3), h = s(4);
      const double go = at2(ghy.view, b, j);
      const double dz = go * (h - n) * (1 - z) * z;
      const double dn = go * (1 - z) * (1 - n * n);
      const double dr = dn * hn * (1 - r) * r;
      want_gi[b * G + j] = want_gh[b * G + j] = dr;
      want_gi[b * G + H + j] = want_gh[b * G + H + j] = dz;
      want_gi[b * G + 2 * H + j] = dn;
      want_gh[b * G + 2 * H + j] = dn * r;
      want_ghx[b * H + j] = go * z;
    }
  }
  expect_close(gi.view, want_gi, G, "grad_input_gates");
  expect_close(gh.view, want_gh, G, "grad_hidden_gates");
  expect_close(ghx.view, want_ghx, H, "grad_hx");
}

INSTANTIATE_TEST_SUITE_P(Cases, GruCellTest,
                         ::testing::Values(LstmCase{DType::Float32, true, false},
                                           LstmCase{DType::Float32, false, true},
                                           LstmCase{DType::BFloat16, true, true},
                                           LstmCase{DType::Float16, false, false}));

// fp32 math, one rounding: a bf16 hy is the fp32 result rounded (within one bf16 ulp, as
// the compiler may contract a * b + c into an fma on either side).
TEST(RnnCellTest, BFloat16IsTheFp32ResultRounded) {
  std::mt19937 rng(3);
  const int64_t B = 3, H = 4;
  HostTensor ig = random_tensor(DType::BFloat16, {B, 4 * H}, rng, -2.0, 2.0);
  HostTensor hg = random_tensor(DType::BFloat16, {B, 4 * H}, rng, -2.0, 2.0);
  HostTensor cx = random_tensor(DType::BFloat16, {B, H}, rng, -2.0, 2.0);
  HostTensor hy = make_tensor(DType::BFloat16, {B, H}), cy = make_tensor(DType::BFloat16, {B, H});
  HostTensor ws = make_tensor(DType::Float32, {B, 4 * H});
  lstm_cell_forward(hy.view, cy.view, ws.view, ig.view, hg.view, cx.view, nullptr, nullptr);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t j = 0; j < H; ++j) {
      auto gate = [&](int k) {
        return static_cast<float>(at2(ig.view, b, k * H + j)) +
               static_cast<float>(at2(hg.view, b, k * H + j));
      };
      const float i = 1.0f / (1.0f + std::exp(-gate(0))), f = 1.0f / (1.0f + std::exp(-gate(1)));
      const float g = std::tanh(gate(2)), o = 1.0f / (1.0f + std::exp(-gate(3)));
      const float c = f * static_cast<float>(at2(cx.view, b, j)) + i * g;
      const float h = o * std::tanh(c);
      EXPECT_NEAR(at2(cy.view, b, j), testing::round_to(DType::BFloat16, c),
                  std::ldexp(std::fabs(c), -7) + 1e-30);
      EXPECT_NEAR(at2(hy.view, b, j), testing::round_to(DType::BFloat16, h),
                  std::ldexp(std::fabs(h), -7) + 1e-30);
    }
  }
}

TEST(RnnCellTest, EmptyBatchAndBadShapes) {
  HostTensor ig = make_tensor(DType::Float32, {0, 8}), hg = make_tensor(DType::Float32, {0, 8});
  HostTensor cx = make_tensor(DType::Float32, {0, 2}), hy = make_tensor(DType::Float32, {0, 2});
  HostTensor cy = make_tensor(DType::Float32, {0, 2}), ws = make_tensor(DType::Float32, {0, 8});
  EXPECT_NO_THROW(
      lstm_cell_forward(hy.view, cy.view, ws.view, ig.view, hg.view, cx.view, nullptr, nullptr));
  HostTensor bad = make_tensor(DType::Float32, {0, 3});
  EXPECT_THROW(
      lstm_cell_forward(hy.view, cy.view, ws.view, ig.view, hg.view, bad.view, nullptr, nullptr),
      std::invalid_argument);
  HostTensor ints = make_tensor(DType::Int32, {1, 8}), ints_h = make_tensor(DType::Int32, {1, 8});
  HostTensor c1 = make_tensor(DType::Int32, {1, 2}), h1 = make_tensor(DType::Int32, {1, 2});
  HostTensor cy1 = make_tensor(DType::Int32, {1, 2}), ws1 = make_tensor(DType::Float32, {1, 8});
  EXPECT_THROW(lstm_cell_forward(h1.view, cy1.view, ws1.view, ints.view, ints_h.view, c1.view,
                                 nullptr, nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace openneuron::kernels
