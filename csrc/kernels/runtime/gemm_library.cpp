#include "kernels/runtime/gemm_library.h"

#include <cpuid.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

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

bool auto_prefers_mkl() {
  static const bool intel = cpu_vendor_is_intel();
  return intel && mkl_gemms() != nullptr;
}

bool gemm_uses_mkl() {
  switch (requested_gemm_library()) {
    case GemmLibrary::kAuto:
      return auto_prefers_mkl();
    case GemmLibrary::kMkl:
      if (mkl_gemms() == nullptr) {
        throw std::runtime_error(std::string(kVariable) + "=mkl, but " + mkl_status());
      }
      return true;
    case GemmLibrary::kOneDnn:
    case GemmLibrary::kOpenBlas:
      return false;
  }
  return false;
}

bool gemm_allows_onednn_fp32() {
  const GemmLibrary library = requested_gemm_library();
  if (library == GemmLibrary::kOneDnn) return true;
  // On Intel CPUs oneMKL takes fp32 (oneDNN 2.6's fp32 matmul reached 0.76-0.82x PyTorch's
  // MKL there); elsewhere oneDNN runs it where it has kernels, OpenBLAS where it does not.
  return library == GemmLibrary::kAuto && !auto_prefers_mkl();
}

bool gemm_allows_onednn_bf16() {
  const GemmLibrary library = requested_gemm_library();
  return library == GemmLibrary::kAuto || library == GemmLibrary::kOneDnn;
}

}  // namespace openneuron::kernels
