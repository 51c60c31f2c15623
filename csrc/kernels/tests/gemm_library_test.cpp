// `auto`'s library rule, host by host (it is pure, so every CPU class is tested on any machine),
// and the forced choices' effect on this process's dispatch.
#include "kernels/runtime/gemm_library.h"

#include <gtest/gtest.h>

#include <string>

namespace openneuron::kernels {
namespace {

GemmHost host(bool intel, CpuIsa isa, bool mkl_loaded) {
  GemmHost result;
  result.intel = intel;
  result.isa = isa;
  result.mkl_loaded = mkl_loaded;
  return result;
}

std::string name_of(GemmLibrary library) { return gemm_library_name(library); }

TEST(AutoGemmLibrary, IntelWithMklGivesItFp32AndFp64AndBf16ToOneDnn) {
  for (CpuIsa isa : {CpuIsa::kAvx512, CpuIsa::kAvx512Bf16}) {
    const GemmHost xeon = host(true, isa, true);
    EXPECT_EQ(name_of(auto_gemm_library(GemmFamily::kFloat32, xeon)), "mkl");
    EXPECT_EQ(name_of(auto_gemm_library(GemmFamily::kFloat64, xeon)), "mkl");
    EXPECT_EQ(name_of(auto_gemm_library(GemmFamily::kBFloat16, xeon)), "onednn");
  }
}

TEST(AutoGemmLibrary, IntelUnderTheAvx2CapWidensBf16ForMkl) {
  const GemmHost capped = host(true, CpuIsa::kAvx2, true);
  EXPECT_EQ(name_of(auto_gemm_library(GemmFamily::kFloat32, capped)), "mkl");
  EXPECT_EQ(name_of(auto_gemm_library(GemmFamily::kBFloat16, capped)), "mkl");
}

TEST(AutoGemmLibrary, WithoutMklNothingChoosesIt) {
  for (bool intel : {true, false}) {
    for (CpuIsa isa : {CpuIsa::kAvx2, CpuIsa::kAvx512, CpuIsa::kAvx512Bf16}) {
      for (GemmFamily family :
           {GemmFamily::kFloat32, GemmFamily::kFloat64, GemmFamily::kBFloat16}) {
        EXPECT_NE(auto_gemm_library(family, host(intel, isa, false)), GemmLibrary::kMkl)
            << intel << " " << cpu_isa_name(isa);
      }
    }
  }
}

TEST(AutoGemmLibrary, AmdWithAvx512UsesOneDnnForFp32AndBf16) {
  for (bool mkl : {true, false}) {
    const GemmHost epyc = host(false, CpuIsa::kAvx512Bf16, mkl);
    EXPECT_EQ(name_of(auto_gemm_library(GemmFamily::kFloat32, epyc)), "onednn");
    EXPECT_EQ(name_of(auto_gemm_library(GemmFamily::kBFloat16, epyc)), "onednn");
    EXPECT_EQ(name_of(auto_gemm_library(GemmFamily::kFloat64, epyc)), "openblas");
  }
}

TEST(AutoGemmLibrary, AmdUnderTheAvx2CapUsesOpenBlasForEverything) {
  const GemmHost capped = host(false, CpuIsa::kAvx2, true);
  for (GemmFamily family : {GemmFamily::kFloat32, GemmFamily::kFloat64, GemmFamily::kBFloat16}) {
    EXPECT_EQ(name_of(auto_gemm_library(family, capped)), "openblas");
  }
}

TEST(AutoGemmLibrary, NeverAnswersAuto) {
  for (bool intel : {true, false}) {
    for (bool mkl : {true, false}) {
      for (CpuIsa isa : {CpuIsa::kAvx2, CpuIsa::kAvx512, CpuIsa::kAvx512Bf16}) {
        for (GemmFamily family :
             {GemmFamily::kFloat32, GemmFamily::kFloat64, GemmFamily::kBFloat16}) {
          EXPECT_NE(auto_gemm_library(family, host(intel, isa, mkl)), GemmLibrary::kAuto);
        }
      }
    }
  }
}

// Forcing a library overrides the rule for every family; `auto` follows it on this host.
TEST(GemmLibraryChoice, ForcedLibrariesOverrideTheRule) {
  set_gemm_library_for_testing(GemmLibrary::kOpenBlas);
  EXPECT_FALSE(gemm_allows_onednn_fp32());
  EXPECT_FALSE(gemm_allows_onednn_bf16());
  EXPECT_FALSE(gemm_uses_mkl(GemmFamily::kFloat32));
  EXPECT_FALSE(gemm_uses_mkl(GemmFamily::kFloat64));
  set_gemm_library_for_testing(GemmLibrary::kOneDnn);
  EXPECT_TRUE(gemm_allows_onednn_fp32());
  EXPECT_TRUE(gemm_allows_onednn_bf16());
  EXPECT_FALSE(gemm_uses_mkl(GemmFamily::kFloat32));
  set_gemm_library_for_testing(GemmLibrary::kAuto);
  const GemmHost here = this_gemm_host();
  EXPECT_EQ(gemm_allows_onednn_fp32(),
            auto_gemm_library(GemmFamily::kFloat32, here) == GemmLibrary::kOneDnn);
  EXPECT_EQ(gemm_allows_onednn_bf16(),
            auto_gemm_library(GemmFamily::kBFloat16, here) == GemmLibrary::kOneDnn);
  EXPECT_EQ(gemm_uses_mkl(GemmFamily::kFloat64),
            auto_gemm_library(GemmFamily::kFloat64, here) == GemmLibrary::kMkl);
  reset_gemm_library_for_testing();
}

}  // namespace
}  // namespace openneuron::kernels
