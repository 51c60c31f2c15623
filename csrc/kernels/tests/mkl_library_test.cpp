// oneMKL loads from the path the build found, runs sequential, and its sgemm/dgemm/bf16 GEMMs
// compute what they should; the library choice variable is parsed strictly.
#include "kernels/runtime/mkl_library.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "kernels/runtime/gemm_library.h"

namespace openneuron::kernels {
namespace {

#ifdef OPENNEURON_EXPECT_MKL
TEST(MklLibrary, LoadsWhereTheBuildFoundIt) {
  ASSERT_NE(mkl_gemms(), nullptr) << mkl_status();
  EXPECT_NE(mkl_status().find("from"), std::string::npos) << mkl_status();
}
#endif

uint16_t bf16_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return static_cast<uint16_t>(bits >> 16);  // exact for the small integers used here
}

TEST(MklLibrary, GemmsComputeRowMajorProducts) {
  const MklGemms* mkl = mkl_gemms();
  if (mkl == nullptr) GTEST_SKIP() << mkl_status();
  // [2,3] @ [3,2] with small integers: every product is exact in each precision.
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9, 10, 11, 12};
  const std::vector<float> want = {58, 64, 139, 154};
  std::vector<float> c(4, 0.0f);
  mkl->sgemm(kMklRowMajor, kMklNoTrans, kMklNoTrans, 2, 2, 3, 1.0f, a.data(), 3, b.data(), 2, 0.0f,
             c.data(), 2);
  EXPECT_EQ(c, want);
  const std::vector<double> ad(a.begin(), a.end()), bd(b.begin(), b.end());
  std::vector<double> cd(4, 0.0);
  mkl->dgemm(kMklRowMajor, kMklNoTrans, kMklNoTrans, 2, 2, 3, 1.0, ad.data(), 3, bd.data(), 2, 0.0,
             cd.data(), 2);
  EXPECT_EQ(cd, std::vector<double>(want.begin(), want.end()));
  std::vector<uint16_t> ab, bb;
  for (float v : a) ab.push_back(bf16_bits(v));
  for (float v : b) bb.push_back(bf16_bits(v));
  std::vector<float> cb(4, 0.0f);
  mkl->gemm_bf16(kMklRowMajor, kMklNoTrans, kMklNoTrans, 2, 2, 3, 1.0f, ab.data(), 3, bb.data(), 2,
                 0.0f, cb.data(), 2);
  EXPECT_EQ(cb, want);
}

TEST(GemmLibrary, ParsesEveryChoiceAndRejectsOthersByName) {
  EXPECT_EQ(parse_gemm_library(nullptr), GemmLibrary::kAuto);
  EXPECT_EQ(parse_gemm_library(""), GemmLibrary::kAuto);
  for (GemmLibrary library :
       {GemmLibrary::kAuto, GemmLibrary::kMkl, GemmLibrary::kOneDnn, GemmLibrary::kOpenBlas}) {
    EXPECT_EQ(parse_gemm_library(gemm_library_name(library)), library);
  }
  try {
    parse_gemm_library("cublas");
    ADD_FAILURE() << "an unknown library was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::strstr(error.what(), "cublas is not one of auto, mkl, onednn, openblas"),
              nullptr)
        << error.what();
  }
}

}  // namespace
}  // namespace openneuron::kernels
