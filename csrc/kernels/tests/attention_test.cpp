// The blocked attention kernels and their block helpers against double-precision reference
// loops: block boundaries (lengths around the 64-row query and 128-key blocks), causal with
// L != S, masks (bool, additive, broadcast, fully masked rows), grouped-query heads, strided
// layouts, 16-bit dtypes, dropout and zero sizes.
#include "kernels/attention/attention.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention/attention_block_ops.h"
#include "kernels/random/philox.h"
#include "kernels/tests/per_isa_test.h"
#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::get;
using testing::HostTensor;
using testing::make_tensor;
using testing::random_tensor;
using Index = std::vector<int64_t>;

constexpr double kInf = std::numeric_limits<double>::infinity();

// A [B, H, L, E] tensor stored as [B, L, H, E] (the usual multi-head layout), viewed back.
struct StridedTensor {
  HostTensor storage;
  TensorView view;
};
StridedTensor random_head_major(DType dtype, const std::vector<int64_t>& bhle, std::mt19937& rng) {
  StridedTensor t;
  t.storage = random_tensor(dtype, {bhle[0], bhle[2], bhle[1], bhle[3]}, rng);
  t.view = testing::permute(t.storage.view, {0, 2, 1, 3});
  return t;
}

struct Problem {
  int64_t b = 1, h = 1, hk = 1, l = 1, s = 1, e = 4, ev = 4;
  DType dtype = DType::Float32;
  bool causal = false;
  double scale = 0.5;
  double dropout = 0.0;
  enum class Mask { None, Bool, Additive, AdditiveBroadcast } mask = Mask::None;
  bool strided = false;
};

// Double-precision results of forward and backward for given inputs.
struct Reference {
  std::vector<double> out, lse, gq, gk, gv, gmask;
};

double keep_factor(const Problem& p, uint64_t seed, uint64_t offset, int64_t bi, int64_t hi,
                   int64_t i, int64_t j) {
  if (p.dropout == 0.0) return 1.0;
  const uint64_t g = static_cast<uint64_t>(((bi * p.h + hi) * p.l + i) * p.s + j);
  const PhiloxBlock block = philox_block(seed, offset + g / 4);
  const float u = static_cast<float>(block[g % 4]) * 2.3283064365386963e-10f;
  return u < static_cast<float>(p.dropout) ? 0.0 : 1.0 / (1.0 - p.dropout);
}

Reference reference(const Problem& p, const TensorView& q, const TensorView& k, const TensorView& v,
                    const TensorView* mask, const TensorView& grad_out, uint64_t seed,
                    uint64_t offset) {
  Reference r;
  r.out.assign(static_cast<size_t>(p.b * p.h * p.l * p.ev), 0.0);
  r.lse.assign(static_cast<size_t>(p.b * p.h * p.l), 0.0);
  r.gq.assign(static_cast<size_t>(p.b * p.h * p.l * p.e), 0.0);
  r.gk.assign(static_cast<size_t>(p.b * p.hk * p.s * p.e), 0.0);
  r.gv.assign(static_cast<size_t>(p.b * p.hk * p.s * p.ev), 0.0);
  r.gmask.assign(static_cast<size_t>(p.b * p.h * p.l * p.s), 0.0);
  const int64_t group = p.h / p.hk;
  for (int64_t bi = 0; bi < p.b; ++bi) {
    for (int64_t hi = 0; hi < p.h; ++hi) {
      const int64_t kv = hi / group;
      for (int64_t i = 0; i < p.l; ++i) {
        std::vector<double> score(static_cast<size_t>(p.s)), prob(static_cast<size_t>(p.s), 0.0);
        double max_score = -kInf;
        for (int64_t j = 0; j < p.s; ++j) {
          double dot = 0.0;
          for (int64_t x = 0; x < p.e; ++x) dot += get(q, {bi, hi, i, x}) * get(k, {bi, kv, j, x});
          double sc = dot * p.scale;
          if (mask != nullptr) {
            const double m = get(*mask, {bi, hi, i, j});
            sc = mask->dtype == DType::Bool ? (m != 0.0 ? sc : -kInf) : sc + m;
          }
          if (p.causal && j > i) sc = -kInf;
          score[j] = sc;
          max_score = std::max(max_score, sc);
        }
        const int64_t row = (bi * p.h + hi) * p.l + i;
        if (max_score == -kInf) {
          r.lse[row] = -kInf;
          continue;  // output row 0 and no gradient
        }
        double sum = 0.0;
        for (int64_t j = 0; j < p.s; ++j) sum += std::exp(score[j] - max_score);
        for (int64_t j = 0; j < p.s; ++j) prob[j] = std::exp(score[j] - max_score) / sum;
        r.lse[row] = max_score + std::log(sum);
        std::vector<double> keep(static_cast<size_t>(p.s));
        for (int64_t j = 0; j < p.s; ++j) keep[j] = keep_factor(p, seed, offset, bi, hi, i, j);
        std::vector<double> o(static_cast<size_t>(p.ev), 0.0);
        for (int64_t y = 0; y < p.ev; ++y) {
          for (int64_t j = 0; j < p.s; ++j) o[y] += prob[j] * keep[j] * get(v, {bi, kv, j, y});
          r.out[row * p.ev + y] = o[y];
        }
        double dot_o = 0.0;
        for (int64_t y = 0; y < p.ev; ++y) dot_o += get(grad_out, {bi, hi, i, y}) * o[y];
        for (int64_t j = 0; j < p.s; ++j) {
          double dp = 0.0;
          for (int64_t y = 0; y < p.ev; ++y) {
            const double go = get(grad_out, {bi, hi, i, y});
            dp += go * get(v, {bi, kv, j, y});
            r.gv[((bi * p.hk + kv) * p.s + j) * p.ev + y] += prob[j] * keep[j] * go;
          }
          const double ds = prob[j] * (dp * keep[j] - dot_o);
          r.gmask[row * p.s + j] = ds;
          for (int64_t x = 0; x < p.e; ++x) {
            r.gq[row * p.e + x] += p.scale * ds * get(k, {bi, kv, j, x});
            r.gk[((bi * p.hk + kv) * p.s + j) * p.e + x] += p.scale * ds * get(q, {bi, hi, i, x});
          }
        }
      }
    }
  }
  return r;
}

// Result tolerance: fp32 compute differs from double by summation order; 16-bit results
// carry one final rounding (plus the rounding of out, which the backward reads).
double tolerance(DType dtype, double expected, double magnitude_scale) {
  const double m = std::fabs(expected);
  switch (dtype) {
    case DType::BFloat16:
      return 2e-2 * magnitude_scale + 8e-3 * m;
    case DType::Float16:
      return 4e-3 * magnitude_scale + 1e-3 * m;
    default:
      return 2e-5 * magnitude_scale + 2e-5 * m;
  }
}

void expect_matches(const TensorView& actual, const std::vector<double>& expected,
                    double magnitude_scale, const char* what) {
  int64_t flat = 0;
  int failures = 0;
  testing::for_each_index(actual, [&](const Index& index) {
    const double want = expected[static_cast<size_t>(flat++)];
    const double got = get(actual, index);
    if (std::isinf(want)) {
      if (got != want && failures++ < 5) ADD_FAILURE() << what << " at " << flat - 1 << ": " << got;
      return;
    }
    if (!(std::fabs(got - want) <= tolerance(actual.dtype, want, magnitude_scale)) &&
        failures++ < 5) {
      ADD_FAILURE() << what << " at flat index " << flat - 1 << ": got " << got << ", want "
                    << want;
    }
  });
}

void run_problem(const Problem& p, uint32_t seed_value) {
  std::mt19937 rng(seed_value);
  StridedTensor q, k, v;
  if (p.strided) {
    q = random_head_major(p.dtype, {p.b, p.h, p.l, p.e}, rng);
    k = random_head_major(p.dtype, {p.b, p.hk, p.s, p.e}, rng);
    v = random_head_major(p.dtype, {p.b, p.hk, p.s, p.ev}, rng);
  } else {
    q.storage = random_tensor(p.dtype, {p.b, p.h, p.l, p.e}, rng);
    k.storage = random_tensor(p.dtype, {p.b, p.hk, p.s, p.e}, rng);
    v.storage = random_tensor(p.dtype, {p.b, p.hk, p.s, p.ev}, rng);
    q.view = q.storage.view;
    k.view = k.storage.view;
    v.view = v.storage.view;
  }
  HostTensor mask_storage;
  TensorView mask_view;
  const TensorView* mask = nullptr;
  switch (p.mask) {
    case Problem::Mask::None:
      break;
    case Problem::Mask::Bool: {
      mask_storage = make_tensor(DType::Bool, {p.b, p.h, p.l, p.s});
      std::bernoulli_distribution kept(0.7);
      testing::for_each_index(mask_storage.view, [&](const Index& i) {
        // Row 2 fully masked: its output is 0 and lse -inf.
        testing::set(mask_storage.view, i, i[2] == 2 ? 0.0 : (kept(rng) ? 1.0 : 0.0));
      });
      mask_view = mask_storage.view;
      mask = &mask_view;
      break;
    }
    case Problem::Mask::Additive:
      mask_storage = random_tensor(p.dtype, {p.b, p.h, p.l, p.s}, rng, -2.0, 2.0);
      mask_view = mask_storage.view;
      mask = &mask_view;
      break;
    case Problem::Mask::AdditiveBroadcast:
      mask_storage = random_tensor(p.dtype, {1, 1, p.l, p.s}, rng, -2.0, 2.0);
      mask_view = testing::expand(mask_storage.view, {p.b, p.h, p.l, p.s});
      mask = &mask_view;
      break;
  }
  AttentionParams params;
  params.scale = p.scale;
  params.is_causal = p.causal;
  params.dropout_p = p.dropout;
  params.seed = 1234;
  params.offset = 40;
  HostTensor out = make_tensor(p.dtype, {p.b, p.h, p.l, p.ev});
  HostTensor lse = make_tensor(DType::Float32, {p.b, p.h, p.l});
  attention_forward(out.view, lse.view, q.view, k.view, v.view, mask, params);
  HostTensor grad_out = random_tensor(p.dtype, {p.b, p.h, p.l, p.ev}, rng);
  HostTensor gq = make_tensor(p.dtype, {p.b, p.h, p.l, p.e});
  HostTensor gk = make_tensor(p.dtype, {p.b, p.hk, p.s, p.e});
  HostTensor gv = make_tensor(p.dtype, {p.b, p.hk, p.s, p.ev});
  HostTensor gmask = make_tensor(DType::Float32, {p.b, p.h, p.l, p.s});
  const bool want_mask_grad = p.mask == Problem::Mask::Additive;
  attention_backward(&gq.view, &gk.view, &gv.view, want_mask_grad ? &gmask.view : nullptr,
                     grad_out.view, q.view, k.view, v.view, out.view, lse.view, mask, params);
  const Reference ref =
      reference(p, q.view, k.view, v.view, mask, grad_out.view, params.seed, params.offset);
  // Gradients sum over up to S (or group * L) terms of unit size: scale the absolute part.
  const double grad_scale = 1.0 + 0.05 * static_cast<double>(std::max(p.s, p.l));
  expect_matches(out.view, ref.out, 1.0, "out");
  expect_matches(lse.view, ref.lse, 1.0, "lse");
  expect_matches(gq.view, ref.gq, grad_scale, "grad_q");
  expect_matches(gk.view, ref.gk, grad_scale, "grad_k");
  expect_matches(gv.view, ref.gv, grad_scale, "grad_v");
  if (want_mask_grad) expect_matches(gmask.view, ref.gmask, 1.0, "grad_mask");
}

// ---------------------------------------------------------------- block helpers

class AttentionBlocksTest : public testing::PerIsaTest {};

TEST_P(AttentionBlocksTest, BlockGemmMatchesReferenceForEveryTileShape) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t m : {1, 5, 6, 7, 13, 64}) {
    for (int64_t n : {1, 15, 16, 17, 63, 64, 65, 130}) {
      for (int64_t k : {0, 1, 9, 64}) {
        for (bool transposed_a : {false, true}) {
          for (bool accumulate : {false, true}) {
            std::vector<float> a(static_cast<size_t>(std::max<int64_t>(m * k, 1)));
            std::vector<float> b(static_cast<size_t>(std::max<int64_t>(k * (n + 3), 1)));
            std::vector<float> c(static_cast<size_t>(m * (n + 2)));
            for (float& x : a) x = dist(rng);
            for (float& x : b) x = dist(rng);
            for (float& x : c) x = dist(rng);
            const std::vector<float> c0 = c;
            const int64_t row_stride = transposed_a ? 1 : k, col_stride = transposed_a ? m : 1;
            attention_blocks::block_gemm(m, n, k, a.data(), row_stride, col_stride, b.data(), n + 3,
                                         c.data(), n + 2, accumulate);
            for (int64_t i = 0; i < m; ++i) {
              for (int64_t j = 0; j < n + 2; ++j) {
                double want = c0[i * (n + 2) + j];
                if (j < n) {
                  want = accumulate ? want : 0.0;
                  for (int64_t p = 0; p < k; ++p) {
                    want += static_cast<double>(a[i * row_stride + p * col_stride]) *
                            b[p * (n + 3) + j];
                  }
                }
                ASSERT_NEAR(c[i * (n + 2) + j], want, 1e-4)
                    << "m " << m << " n " << n << " k " << k << " transposed " << transposed_a
                    << " accumulate " << accumulate << " at " << i << "," << j;
              }
            }
          }
        }
      }
    }
  }
}

TEST_P(AttentionBlocksTest, Transpose16x16) {
  std::vector<float> src(16 * 20), dst(18 * 16, -1.0f);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i);
  attention_blocks::transpose_16x16(src.data(), 20, dst.data(), 18);
  for (int r = 0; r < 16; ++r) {
    for (int c = 0; c < 16; ++c) ASSERT_EQ(dst[c * 18 + r], src[r * 20 + c]) << r << "," << c;
    for (int c = 16; c < 18; ++c) ASSERT_EQ(dst[r * 18 + c], -1.0f);  // padding untouched
  }
}

TEST_P(AttentionBlocksTest, HalfConversionsMatchTheScalarOnes) {
  // A sweep over fp32 bit patterns (all exponents, mantissas, signs, inf/NaN) and every
  // float16 code, through the vector path (runs of 16) and the scalar tail.
  std::vector<float> values;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 65521) {
    values.push_back(bits_to_float(static_cast<uint32_t>(bits)));
  }
  for (float special : {0.0f, -0.0f, 65504.0f, 65520.0f, 65519.99f, 5.96e-8f, 2.98e-8f, 1e-10f}) {
    values.push_back(special);
  }
  std::vector<uint16_t> narrowed(values.size());
  attention_blocks::narrow_half(values.data(), narrowed.data(),
                                static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(narrowed[i], float_to_half_bits(values[i])) << "bits " << float_to_bits(values[i]);
  }
  std::vector<uint16_t> codes(65536 + 5);
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint16_t>(i);
  std::vector<float> widened(codes.size());
  attention_blocks::widen_half(codes.data(), widened.data(), static_cast<int64_t>(codes.size()));
  for (size_t i = 0; i < codes.size(); ++i) {
    const float want = half_bits_to_float(codes[i]);
    if (want != want) {  // NaN: signalling payloads come back quieted
      ASSERT_TRUE(widened[i] != widened[i]);
      ASSERT_EQ(float_to_bits(widened[i]) | 0x00400000u, float_to_bits(want) | 0x00400000u);
    } else {
      ASSERT_EQ(float_to_bits(widened[i]), float_to_bits(want)) << "code " << codes[i];
    }
  }
}

TEST_P(AttentionBlocksTest, BFloat16ConversionsMatchTheScalarOnes) {
  std::vector<float> values;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 65521) {
    values.push_back(bits_to_float(static_cast<uint32_t>(bits)));
  }
  // Ties to even either way, the largest finite values (rounding up to inf) and subnormals.
  for (uint32_t bits : {0x3F808000u, 0x3F818000u, 0x7F7FFFFFu, 0x7F7F8000u, 0xFF7FFFFFu,
                        0x00008000u, 0x00018000u, 0x7FC00001u, 0xFFFFFFFFu}) {
    values.push_back(bits_to_float(bits));
  }
  std::vector<uint16_t> narrowed(values.size());
  attention_blocks::narrow_bfloat16(values.data(), narrowed.data(),
                                    static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(narrowed[i], float_to_bfloat16_bits(values[i]))
        << "bits " << float_to_bits(values[i]);
  }
  std::vector<uint16_t> codes(65536 + 5);
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint16_t>(i);
  std::vector<float> widened(codes.size());
  attention_blocks::widen_bfloat16(codes.data(), widened.data(),
                                   static_cast<int64_t>(codes.size()));
  for (size_t i = 0; i < codes.size(); ++i) {
    ASSERT_EQ(float_to_bits(widened[i]), float_to_bits(bfloat16_bits_to_float(codes[i])));
  }
}

TEST_P(AttentionBlocksTest, RowHelpers) {
  std::vector<float> x = {1.0f, -3.0f, 2.5f, 0.0f, 7.0f, -1.0f, 2.0f, 3.0f, 4.0f,
                          5.0f, 6.0f,  0.5f, 1.5f, 2.5f, 3.5f,  4.5f, 6.5f, -8.0f};
  EXPECT_EQ(attention_blocks::row_max(x.data(), 18), 7.0f);
  EXPECT_EQ(attention_blocks::row_max(x.data(), 3), 2.5f);
  EXPECT_EQ(attention_blocks::row_max(x.data(), 0), -std::numeric_limits<float>::infinity());
  std::vector<float> y = x;
  double want = 0.0;
  for (float v : x) want += std::exp(static_cast<double>(v) - 7.0);
  EXPECT_NEAR(attention_blocks::exp_shifted_sum(y.data(), 18, 7.0f), want, 1e-5);
  for (size_t j = 0; j < x.size(); ++j) EXPECT_NEAR(y[j], std::exp(x[j] - 7.0), 1e-6);
  // A masked score becomes an exact zero weight.
  std::vector<float> masked = {-std::numeric_limits<float>::infinity(), 0.0f};
  attention_blocks::exp_shifted(masked.data(), 2, 0.0f);
  EXPECT_EQ(masked[0], 0.0f);
  EXPECT_EQ(masked[1], 1.0f);
  EXPECT_NEAR(
      attention_blocks::dot(x.data(), x.data(), 18),
      [&] {
        double s = 0.0;
        for (float v : x) s += static_cast<double>(v) * v;
        return s;
      }(),
      1e-4);
}

// ---------------------------------------------------------------- forward + backward

class AttentionKernelTest : public testing::PerIsaTest {};

TEST_P(AttentionKernelTest, BlockBoundariesFp32) {
  // Lengths just around the 64-query and 128-key blocks, and several blocks of each.
  for (auto [l, s] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 1}, {63, 127}, {64, 128}, {65, 129}, {130, 257}, {7, 300}}) {
    Problem p;
    p.l = l;
    p.s = s;
    p.e = 16;
    p.ev = 24;
    SCOPED_TRACE("L " + std::to_string(l) + " S " + std::to_string(s));
    run_problem(p, static_cast<uint32_t>(l * 1000 + s));
  }
}

TEST_P(AttentionKernelTest, HeadDimsAroundTheTileWidth) {
  for (auto [e, ev] :
       std::vector<std::pair<int64_t, int64_t>>{{64, 64}, {17, 33}, {1, 65}, {80, 128}}) {
    Problem p;
    p.l = 70;
    p.s = 90;
    p.e = e;
    p.ev = ev;
    p.scale = 1.0 / std::sqrt(static_cast<double>(e));
    SCOPED_TRACE("E " + std::to_string(e) + " Ev " + std::to_string(ev));
    run_problem(p, static_cast<uint32_t>(e * 100 + ev));
  }
}

TEST_P(AttentionKernelTest, CausalWithDifferentLengths) {
  // Top-left aligned: with L > S late rows see every key; with L < S late keys are never seen.
  for (auto [l, s] : std::vector<std::pair<int64_t, int64_t>>{
           {200, 70}, {70, 200}, {129, 129}, {64, 300}, {5, 3}}) {
    Problem p;
    p.l = l;
    p.s = s;
    p.e = 8;
    p.ev = 8;
    p.causal = true;
    p.mask = Problem::Mask::Additive;  // also checks the gradient of the mask past the limit
    SCOPED_TRACE("L " + std::to_string(l) + " S " + std::to_string(s));
    run_problem(p, static_cast<uint32_t>(l + 7 * s));
  }
}

TEST_P(AttentionKernelTest, MasksGqaAndStridedLayouts) {
  for (Problem::Mask mask :
       {Problem::Mask::Bool, Problem::Mask::Additive, Problem::Mask::AdditiveBroadcast}) {
    Problem p;
    p.b = 2;
    p.h = 4;
    p.hk = 2;
    p.l = 70;
    p.s = 140;
    p.e = 16;
    p.ev = 8;
    p.mask = mask;
    p.strided = true;
    SCOPED_TRACE("mask " + std::to_string(static_cast<int>(mask)));
    run_problem(p, 90 + static_cast<uint32_t>(mask));
  }
}

TEST_P(AttentionKernelTest, SixteenBitDtypes) {
  for (DType dtype : {DType::BFloat16, DType::Float16}) {
    for (bool causal : {false, true}) {
      Problem p;
      p.b = 2;
      p.h = 4;
      p.hk = 1;
      p.l = 130;
      p.s = 130;
      p.e = 64;
      p.ev = 64;
      p.scale = 0.125;
      p.dtype = dtype;
      p.causal = causal;
      p.mask = causal ? Problem::Mask::None : Problem::Mask::AdditiveBroadcast;
      SCOPED_TRACE(std::string(dtype_name(dtype)) + (causal ? " causal" : ""));
      run_problem(p, 17);
    }
  }
}

TEST_P(AttentionKernelTest, DropoutMatchesItsPhiloxMask) {
  for (bool causal : {false, true}) {
    Problem p;
    p.b = 2;
    p.h = 2;
    p.hk = 1;
    p.l = 70;
    p.s = 133;
    p.e = 8;
    p.ev = 8;
    p.dropout = 0.3;
    p.causal = causal;
    SCOPED_TRACE(causal ? "causal" : "full");
    run_problem(p, 5);
  }
}

TEST_P(AttentionKernelTest, ZeroSizes) {
  for (auto [l, s, e, ev] : std::vector<std::array<int64_t, 4>>{
           {0, 5, 4, 4}, {5, 0, 4, 4}, {5, 6, 0, 4}, {5, 6, 4, 0}}) {
    Problem p;
    p.l = l;
    p.s = s;
    p.e = e;
    p.ev = ev;
    SCOPED_TRACE("L S E Ev " + std::to_string(l) + " " + std::to_string(s) + " " +
                 std::to_string(e) + " " + std::to_string(ev));
    run_problem(p, 1);
  }
  // S == 0: every row fully masked, lse -inf and output 0 (checked by run_problem).
}

TEST_P(AttentionKernelTest, BackwardWithoutSomeGradients) {
  std::mt19937 rng(8);
  HostTensor q = random_tensor(DType::Float32, {1, 2, 9, 4}, rng);
  HostTensor out = make_tensor(DType::Float32, {1, 2, 9, 4});
  HostTensor lse = make_tensor(DType::Float32, {1, 2, 9});
  AttentionParams p;
  p.scale = 0.5;
  attention_forward(out.view, lse.view, q.view, q.view, q.view, nullptr, p);
  HostTensor grad_out = random_tensor(DType::Float32, {1, 2, 9, 4}, rng);
  HostTensor gk = make_tensor(DType::Float32, {1, 2, 9, 4}),
             gk_all = make_tensor(DType::Float32, {1, 2, 9, 4});
  HostTensor gq = make_tensor(DType::Float32, {1, 2, 9, 4}),
             gv = make_tensor(DType::Float32, {1, 2, 9, 4});
  attention_backward(nullptr, &gk.view, nullptr, nullptr, grad_out.view, q.view, q.view, q.view,
                     out.view, lse.view, nullptr, p);
  attention_backward(&gq.view, &gk_all.view, &gv.view, nullptr, grad_out.view, q.view, q.view,
                     q.view, out.view, lse.view, nullptr, p);
  testing::for_each_index(gk.view,
                          [&](const Index& i) { EXPECT_EQ(get(gk.view, i), get(gk_all.view, i)); });
}

INSTANTIATE_TEST_SUITE_P(Isa, AttentionBlocksTest, testing::kernel_isas(), testing::isa_test_name);
INSTANTIATE_TEST_SUITE_P(Isa, AttentionKernelTest, testing::kernel_isas(), testing::isa_test_name);

}  // namespace
}  // namespace openneuron::kernels
