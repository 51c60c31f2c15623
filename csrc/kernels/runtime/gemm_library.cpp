#include "kernels/runtime/gemm_library.h"

#include <cpuid.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "kernels/runtime/cpu_isa.h"
#include "kernels/runtime/mkl_library.h"

namespace openneuron::kernels {
namespace {

constexpr const char* kVariable = "OPENNEURON_GEMM_LIBRARY";

bool cpu_vendor_is_intel() {
  unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return false;
  char vendor[13] = {0};
  std::memcpy(vendor, &ebx, 4);
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  return std::strcmp(vendor, "GenuineIntel") == 0;
}

// -1: not overridden.
std::atomic<int> test_override{-1};

}  // namespace

GemmLibrary parse_gemm_library(const char* value) {
  if (value == nullptr || *value == '\0' || std::strcmp(value, "auto") == 0) {
    return GemmLibrary::kAuto;
  }
  if (std::strcmp(value, "mkl") == 0) return GemmLibrary::kMkl;
  if (std::strcmp(value, "onednn") == 0) return GemmLibrary::kOneDnn;
  if (std::strcmp(value, "openblas") == 0) return GemmLibrary::kOpenBlas;
  throw std::invalid_argument(std::string(kVariable) + "=" + value +
                              " is not one of auto, mkl, onednn, openblas");
}

const char* gemm_library_name(GemmLibrary library) {
  switch (library) {
    case GemmLibrary::kAuto:
      return "auto";
    case GemmLibrary::kMkl:
      return "mkl";
    case GemmLibrary::kOneDnn:
      return "onednn";
    case GemmLibrary::kOpenBlas:
      return "openblas";
  }
  return "unknown";
}

GemmLibrary requested_gemm_library() {
  const int forced = test_override.load(std::memory_order_acquire);
  if (forced >= 0) return static_cast<GemmLibrary>(forced);
  static const GemmLibrary from_variable = parse_gemm_library(std::getenv(kVariable));
  return from_variable;
}

void set_gemm_library_for_testing(GemmLibrary library) {
  test_override.store(static_cast<int>(library), std::memory_order_release);
}

void reset_gemm_library_for_testing() { test_override.store(-1, std::memory_order_release); }

GemmLibrary auto_gemm_library(GemmFamily family, const GemmHost& host) {
  // fp32/fp64 on Intel: oneMKL (what PyTorch's CPU build uses; oneDNN 2.6's fp32 matmul
  // reached 0.76-0.82x PyTorch's MKL on a Xeon with AMX).
  const bool intel_mkl = host.intel && host.mkl_loaded;
  const bool avx512 = host.isa >= CpuIsa::kAvx512;
  switch (family) {
    case GemmFamily::kFloat64:
      return intel_mkl ? GemmLibrary::kMkl : GemmLibrary::kOpenBlas;
    case GemmFamily::kFloat32:
      if (intel_mkl) return GemmLibrary::kMkl;
      // Elsewhere oneDNN's brgemm kernels where it has them (AVX-512), else OpenBLAS (on an
      // AMD EPYC under the AVX2 cap it beat oneMKL: 0.82x against 0.67x PyTorch at 1024^3).
      return avx512 ? GemmLibrary::kOneDnn : GemmLibrary::kOpenBlas;
    case GemmFamily::kBFloat16:
      // oneDNN has native bf16 kernels from AVX-512 on (oneMKL's bf16 GEMM on an AMD EPYC with
      // AVX512-BF16 ran at fp32 speed, a third of oneDNN's); below that bf16 widens to fp32.
      return avx512 ? GemmLibrary::kOneDnn : auto_gemm_library(GemmFamily::kFloat32, host);
  }
  return GemmLibrary::kOpenBlas;
}

GemmHost this_gemm_host() {
  static const bool intel = cpu_vendor_is_intel();
  GemmHost host;
  host.intel = intel;
  host.isa = cpu_isa();
  // Only Intel hosts can be given oneMKL, so AMD processes never load it under `auto`.
  host.mkl_loaded = intel && mkl_gemms() != nullptr;
  return host;
}

bool auto_prefers_mkl() {
  return auto_gemm_library(GemmFamily::kFloat32, this_gemm_host()) == GemmLibrary::kMkl;
}

namespace {

// The library a product of `family` runs on: the forced one, or auto's.
GemmLibrary chosen_library(GemmFamily family) {
  const GemmLibrary requested = requested_gemm_library();
  return requested == GemmLibrary::kAuto ? auto_gemm_library(family, this_gemm_host()) : requested;
}

}  // namespace

bool gemm_uses_mkl(GemmFamily family) {
  switch (chosen_library(family)) {
    case GemmLibrary::kMkl:
      if (mkl_gemms() == nullptr) {
        throw std::runtime_error(std::string(kVariable) + "=mkl, but " + mkl_status());
      }
      return true;
    case GemmLibrary::kAuto:
    case GemmLibrary::kOneDnn:
    case GemmLibrary::kOpenBlas:
      return false;
  }
  return false;
}

bool gemm_allows_onednn_fp32() {
  return chosen_library(GemmFamily::kFloat32) == GemmLibrary::kOneDnn;
}

bool gemm_allows_onednn_bf16() {
  return chosen_library(GemmFamily::kBFloat16) == GemmLibrary::kOneDnn;
}

}  // namespace openneuron::kernels
