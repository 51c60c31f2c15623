// The oneDNN path of gemm: unusual but valid layouts must either run correctly or decline.
#include "kernels/matmul/dnnl_matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/matmul/blas_gemm.h"
#include "kernels/matmul/matmul.h"
#include "kernels/runtime/cpu_isa.h"
#include "kernels/runtime/gemm_library.h"
#include "kernels/runtime/library_calls.h"
#include "kernels/runtime/mkl_library.h"
#include "test_util.h"

namespace openneuron::kernels {
namespace {

using testing::get;
using testing::make_tensor;

// out[b] = a[b] @ w[b] in double, for 3-D views.
double reference(const TensorView& a, const TensorView& w, int64_t b, int64_t i, int64_t j) {
  double sum = 0;
  for (int64_t k = 0; k < a.sizes[2]; ++k) sum += get(a, {b, i, k}) * get(w, {b, k, j});
  return sum;
}

void check_batched(DType dtype, TensorView a, TensorView w) {
  auto out = make_tensor(dtype, {a.sizes[0], a.sizes[1], w.sizes[2]});
  gemm(out.view, a, w, nullptr, 1.0, 0.0);
  for (int64_t b = 0; b < out.view.sizes[0]; ++b) {
    for (int64_t i = 0; i < out.view.sizes[1]; ++i) {
      for (int64_t j = 0; j < out.view.sizes[2]; ++j) {
        const double expected = reference(a, w, b, i, j);
        EXPECT_TRUE(testing::close(dtype, get(out.view, {b, i, j}), expected))
            << "batch " << b << " [" << i << "," << j << "]";
      }
    }
  }
}

// Lets oneDNN run fp32 too (the default gives fp32 to oneMKL when it is installed).
class ForcedGemmLibrary {
 public:
  explicit ForcedGemmLibrary(GemmLibrary library) { set_gemm_library_for_testing(library); }
  ~ForcedGemmLibrary() { reset_gemm_library_for_testing(); }
};

class DnnlLayouts : public ::testing::TestWithParam<DType> {
  ForcedGemmLibrary onednn_{GemmLibrary::kOneDnn};
};

TEST_P(DnnlLayouts, SizeOneBatchWithArbitraryStride) {
  std::mt19937 rng(1);
  auto a = make_tensor(GetParam(), {4, 8});
  auto w = make_tensor(GetParam(), {8, 3});
  testing::fill_random(a.view, rng, -1, 1);
  testing::fill_random(w.view, rng, -1, 1);
  // A 2-D matrix seen as a batch of one, as x[None] gives (batch stride = numel).
  TensorView a3 = a.view, w3 = w.view;
  a3.ndim = w3.ndim = 3;
  a3.sizes[0] = w3.sizes[0] = 1;
  for (int d = 2; d >= 1; --d) {
    a3.sizes[d] = a.view.sizes[d - 1];
    a3.strides[d] = a.view.strides[d - 1];
    w3.sizes[d] = w.view.sizes[d - 1];
    w3.strides[d] = w.view.strides[d - 1];
  }
  a3.strides[0] = 32;
  w3.strides[0] = 24;
  check_batched(GetParam(), a3, w3);
}

TEST_P(DnnlLayouts, TransposedAndBroadcastBatches) {
  std::mt19937 rng(2);
  auto a = make_tensor(GetParam(), {3, 5, 7});
  auto w = make_tensor(GetParam(), {1, 6, 7});
  testing::fill_random(a.view, rng, -1, 1);
  testing::fill_random(w.view, rng, -1, 1);
  TensorView wt = testing::permute(w.view, {0, 2, 1});  // [1, 7, 6], transposed strides
  wt = testing::expand(wt, {3, 7, 6});                  // batch stride 0
  check_batched(GetParam(), a.view, wt);
}

uint64_t calls(LibraryCall call) { return library_call_counts()[static_cast<size_t>(call)]; }

// The first element [i, j] of out that misses alpha * (a @ b) + beta * bias (bias may be null)
// by more than out's dtype tolerance plus 2^-20 of the terms' magnitude (the rounding of an fp32
// accumulation); none when every element is within that.
std::optional<std::pair<int64_t, int64_t>> first_mismatch(const TensorView& out,
                                                          const TensorView& a, const TensorView& b,
                                                          const TensorView* bias, double alpha,
                                                          double beta) {
  for (int64_t i = 0; i < out.sizes[0]; ++i) {
    for (int64_t j = 0; j < out.sizes[1]; ++j) {
      double product = 0, magnitude = 0;
      for (int64_t kk = 0; kk < a.sizes[1]; ++kk) {
        const double term = get(a, {i, kk}) * get(b, {kk, j});
        product += term;
        magnitude += std::fabs(term);
      }
      const double expected = alpha * product + (bias ? beta * get(*bias, {i, j}) : 0.0);
      const double allowed = testing::tolerance(out.dtype, expected) + magnitude / (1 << 20);
      if (std::fabs(get(out, {i, j}) - expected) > allowed) return std::make_pair(i, j);
    }
  }
  return std::nullopt;
}

// dnnl_gemm accepts only brgemm primitives, which oneDNN 2.6 has from AVX-512 on.
bool brgemm_matmul_available() { return cpu_isa() >= CpuIsa::kAvx512; }

#define SKIP_WITHOUT_BRGEMM()                                                      \
  if (!brgemm_matmul_available())                                                  \
  GTEST_SKIP() << "oneDNN 2.6 has no brgemm matmul at " << cpu_isa_name(cpu_isa()) \
               << " (gemm runs on OpenBLAS there: Gemm.UsesOneDnnWhereItHasKernelsElseOpenBlas)"

TEST(DnnlMatmul, RunsContiguousFloat32) {
  SKIP_WITHOUT_BRGEMM();
  const ForcedGemmLibrary onednn(GemmLibrary::kOneDnn);
  auto a = make_tensor(DType::Float32, {16, 16});
  auto w = make_tensor(DType::Float32, {16, 16});
  auto out = make_tensor(DType::Float32, {16, 16});
  EXPECT_TRUE(dnnl_gemm(out.view, a.view, w.view, nullptr, 1.0, 0.0));
}

// Large enough to be split across threads: every piece must still run on oneDNN (a decline
// would silently fall back to BLAS) and match the reference.
TEST(DnnlMatmul, SplitsLargeProductsAcrossThreadsCorrectly) {
  SKIP_WITHOUT_BRGEMM();
  const ForcedGemmLibrary onednn(GemmLibrary::kOneDnn);
  std::mt19937 rng(3);
  auto a = make_tensor(DType::Float32, {513, 256});
  auto w = make_tensor(DType::Float32, {256, 257});
  auto out = make_tensor(DType::Float32, {513, 257});
  testing::fill_random(a.view, rng, -1, 1);
  testing::fill_random(w.view, rng, -1, 1);
  ASSERT_TRUE(dnnl_gemm(out.view, a.view, w.view, nullptr, 1.0, 0.0));
  for (int64_t i = 0; i < 513; i += 37) {
    for (int64_t j = 0; j < 257; j += 13) {
      double expected = 0;
      for (int64_t k = 0; k < 256; ++k) expected += get(a.view, {i, k}) * get(w.view, {k, j});
      EXPECT_TRUE(testing::close(DType::Float32, get(out.view, {i, j}), expected)) << i << "," << j;
    }
  }
}

// A product with few rows (a decode step's tokens) is split by columns when b is a transposed
// weight (each thread reads its own part of the weight; a piece of more than one row is
// computed in a buffer and copied into place), by rows when b is row-major. Either way oneDNN
// runs every piece (no fallback to BLAS) and every element matches the reference.
TEST(DnnlMatmul, FewRowsSplitByColumnsOrRowsMatchTheReference) {
  SKIP_WITHOUT_BRGEMM();
  const ForcedGemmLibrary onednn(GemmLibrary::kOneDnn);
  for (DType dtype : {DType::Float32, DType::BFloat16}) {
    for (int64_t rows : {1, 3, 9}) {
      for (bool transposed_weight : {true, false}) {
        std::mt19937 rng(static_cast<unsigned>(rows));
        constexpr int64_t k = 8192, n = 320;  // one row: 2.6M multiply-adds, split in two
        auto a = make_tensor(dtype, {rows, k});
        auto weight = make_tensor(dtype, {n, k});  // a linear layer's [out, in]
        auto b_row_major = make_tensor(dtype, {k, n});
        testing::fill_random(a.view, rng, -1, 1);
        testing::fill_random(weight.view, rng, -1, 1);
        testing::fill_random(b_row_major.view, rng, -1, 1);
        const TensorView b =
            transposed_weight ? testing::permute(weight.view, {1, 0}) : b_row_major.view;
        auto out = make_tensor(dtype, {rows, n});
        ASSERT_TRUE(dnnl_gemm(out.view, a.view, b, nullptr, 1.0, 0.0))
            << "rows " << rows << (transposed_weight ? ", transposed weight" : ", row-major b");
        const auto bad = first_mismatch(out.view, a.view, b, nullptr, 1.0, 0.0);
        ASSERT_FALSE(bad.has_value())
            << "rows " << rows << (transposed_weight ? ", transposed weight" : ", row-major b")
            << " [" << bad->first << "," << bad->second << "]";
      }
    }
  }
}

// addmm's form (out = beta * bias + alpha * a @ b) on column pieces staged through a buffer:
// each piece starts from its slice of the bias, as the sum post-op requires.
TEST(DnnlMatmul, FewRowsWithBiasSplitByColumnsMatchTheReference) {
  SKIP_WITHOUT_BRGEMM();
  const ForcedGemmLibrary onednn(GemmLibrary::kOneDnn);
  std::mt19937 rng(11);
  constexpr int64_t rows = 3, k = 8192, n = 320;
  auto a = make_tensor(DType::Float32, {rows, k});
  auto weight = make_tensor(DType::Float32, {n, k});
  auto bias = make_tensor(DType::Float32, {rows, n});
  for (auto* t : {&a, &weight, &bias}) testing::fill_random(t->view, rng, -1, 1);
  const TensorView b = testing::permute(weight.view, {1, 0});
  auto out = make_tensor(DType::Float32, {rows, n});
  const uint64_t before = calls(LibraryCall::kOneDnnMatmul);
  ASSERT_TRUE(dnnl_gemm(out.view, a.view, b, &bias.view, 0.5, 2.0));
  EXPECT_EQ(calls(LibraryCall::kOneDnnMatmul), before + 1);
  const auto bad = first_mismatch(out.view, a.view, b, &bias.view, 0.5, 2.0);
  ASSERT_FALSE(bad.has_value()) << "[" << bad->first << "," << bad->second << "]";
}

TEST(DnnlMatmul, DeclinesDtypesItDoesNotHandle) {
  auto a = make_tensor(DType::Float16, {4, 4});
  auto out = make_tensor(DType::Float16, {4, 4});
  EXPECT_FALSE(dnnl_gemm(out.view, a.view, a.view, nullptr, 1.0, 0.0));
}

// The library each choice must run a product on, on this CPU.
LibraryCall expected_library(GemmLibrary choice, DType dtype) {
  const bool auto_mkl = auto_prefers_mkl();
  const bool mkl = choice == GemmLibrary::kMkl || (choice == GemmLibrary::kAuto && auto_mkl);
  const LibraryCall blas = mkl ? LibraryCall::kMklGemm : LibraryCall::kOpenBlasGemm;
  const bool onednn_may_run =
      choice == GemmLibrary::kOneDnn ||
      (choice == GemmLibrary::kAuto && (dtype == DType::BFloat16 || !auto_mkl));
  return onednn_may_run && brgemm_matmul_available() ? LibraryCall::kOneDnnMatmul : blas;
}

// On every CPU and for every library choice: gemm() runs the library the choice names (oneDNN
// only where it has brgemm kernels), and the product is right (fp32, and bf16, which is widened
// to fp32 for BLAS).
TEST(Gemm, RunsOnTheChosenLibrary) {
  std::vector<GemmLibrary> choices = {GemmLibrary::kAuto, GemmLibrary::kOneDnn,
                                      GemmLibrary::kOpenBlas};
  if (mkl_gemms() != nullptr) choices.push_back(GemmLibrary::kMkl);
  for (GemmLibrary choice : choices) {
    const ForcedGemmLibrary forced(choice);
    for (DType dtype : {DType::Float32, DType::BFloat16}) {
      SCOPED_TRACE(std::string(gemm_library_name(choice)) +
                   (dtype == DType::Float32 ? " fp32" : " bf16"));
      std::mt19937 rng(4);
      auto a = make_tensor(dtype, {96, 80});
      auto w = make_tensor(dtype, {80, 72});
      auto out = make_tensor(dtype, {96, 72});
      testing::fill_random(a.view, rng, -1, 1);
      testing::fill_random(w.view, rng, -1, 1);
      const auto before = library_call_counts();
      gemm(out.view, a.view, w.view, nullptr, 1.0, 0.0);
      const auto after = library_call_counts();
      const LibraryCall expected = expected_library(choice, dtype);
      for (size_t call = 0; call < after.size(); ++call) {
        const uint64_t want = call == static_cast<size_t>(expected) ? 1 : 0;
        EXPECT_EQ(after[call] - before[call], want)
            << library_call_name(static_cast<LibraryCall>(call));
      }
      for (int64_t i = 0; i < 96; i += 7) {
        for (int64_t j = 0; j < 72; j += 5) {
          double expected_value = 0;
          for (int64_t k = 0; k < 80; ++k) {
            expected_value += get(a.view, {i, k}) * get(w.view, {k, j});
          }
          EXPECT_TRUE(testing::close(dtype, get(out.view, {i, j}), expected_value))
              << i << "," << j;
        }
      }
    }
  }
}

// The BLAS path (oneMKL and OpenBLAS alike) splits large products into row or column blocks
// across threads (and keeps small ones whole); every block must land in its place, for every
// transpose.
class BlasGemm : public ::testing::TestWithParam<GemmLibrary> {};

TEST_P(BlasGemm, SplitsByRowsAndColumnsForEveryTranspose) {
  if (GetParam() == GemmLibrary::kMkl && mkl_gemms() == nullptr) {
    GTEST_SKIP() << "oneMKL is not installed here: " << mkl_status();
  }
  const ForcedGemmLibrary forced(GetParam());
  struct Shape {
    int64_t m, n, k;
  };
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (const Shape s : {Shape{517, 129, 64}, Shape{9, 1031, 300}, Shape{3, 5, 7}}) {
    for (int trans = 0; trans < 4; ++trans) {
      const bool ta = trans & 1, tb = trans & 2;
      const int64_t lda = (ta ? s.m : s.k) + 3, ldb = (tb ? s.k : s.n) + 2, ldc = s.n + 1;
      std::vector<float> a((ta ? s.k : s.m) * lda), b((tb ? s.n : s.k) * ldb), c(s.m * ldc);
      for (float& v : a) v = uniform(rng);
      for (float& v : b) v = uniform(rng);
      for (float& v : c) v = uniform(rng);
      const std::vector<float> c0 = c;
      blas_sgemm(ta, tb, s.m, s.n, s.k, 0.5f, a.data(), lda, b.data(), ldb, 2.0f, c.data(), ldc);
      for (int64_t i = 0; i < s.m; ++i) {
        for (int64_t j = 0; j < s.n; ++j) {
          double sum = 0;
          for (int64_t p = 0; p < s.k; ++p) {
            sum += double(ta ? a[p * lda + i] : a[i * lda + p]) *
                   double(tb ? b[j * ldb + p] : b[p * ldb + j]);
          }
          const double want = 0.5 * sum + 2.0 * c0[i * ldc + j];
          ASSERT_NEAR(c[i * ldc + j], want, 1e-4 * (1 + s.k))
              << s.m << "x" << s.n << "x" << s.k << " trans " << trans << " [" << i << "," << j
              << "]";
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Libraries, BlasGemm,
                         ::testing::Values(GemmLibrary::kMkl, GemmLibrary::kOpenBlas),
                         [](const auto& info) { return gemm_library_name(info.param); });
INSTANTIATE_TEST_SUITE_P(Dtypes, DnnlLayouts, ::testing::Values(DType::Float32, DType::BFloat16));

}  // namespace
}  // namespace openneuron::kernels
