#include "kernels/runtime/cpu_isa.h"

#include <oneapi/dnnl/dnnl_debug.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <mutex>
#include <stdexcept>
#include <string>

namespace openneuron::kernels {
namespace {

constexpr const char* kCapVariable = "OPENNEURON_MAX_CPU_ISA";

// -1 until first read; then the level in use (tests may override it).
std::atomic<int> current_isa{-1};

CpuIsa parse_cap(const char* text, CpuIsa detected) {
  const std::string value(text);
  if (value == "avx2") return CpuIsa::kAvx2;
  if (value == "avx512") return CpuIsa::kAvx512;
  if (value == "avx512_bf16") return CpuIsa::kAvx512Bf16;
  throw std::invalid_argument(std::string(kCapVariable) + "='" + value +
                              "' is not a valid ISA cap; accepted values: avx2, avx512, "
                              "avx512_bf16 (levels above the CPU's, " +
                              cpu_isa_name(detected) + ", act as no cap)");
}

}  // namespace

CpuIsa available_cpu_isa() {
  const CpuIsa detected = detected_cpu_isa();
  const char* cap = std::getenv(kCapVariable);
  if (cap == nullptr || *cap == '\0') return detected;
  const CpuIsa limit = parse_cap(cap, detected);
  return limit < detected ? limit : detected;
}

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAvx2:
      return "avx2";
    case CpuIsa::kAvx512:
      return "avx512";
    case CpuIsa::kAvx512Bf16:
      return "avx512_bf16";
  }
  return "unknown";
}

CpuIsa detected_cpu_isa() {
  // The AVX-512 kernels use F, BW, VL and DQ (the Skylake-SP set, ATen's "AVX512" level).
  // __builtin_cpu_supports also checks that the OS saves the vector registers (XCR0).
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (!avx512) return CpuIsa::kAvx2;
  return __builtin_cpu_supports("avx512bf16") ? CpuIsa::kAvx512Bf16 : CpuIsa::kAvx512;
}

CpuIsa cpu_isa() {
  int isa = current_isa.load(std::memory_order_acquire);
  if (isa < 0) {
    isa = static_cast<int>(available_cpu_isa());  // throws on a malformed cap, sets nothing
    int unset = -1;
    if (!current_isa.compare_exchange_strong(unset, isa)) isa = unset;
  }
  return static_cast<CpuIsa>(isa);
}

bool use_avx512_kernels() { return cpu_isa() >= CpuIsa::kAvx512; }

void set_cpu_isa_for_testing(CpuIsa isa) {
  if (isa > available_cpu_isa()) {
    throw std::invalid_argument(std::string("set_cpu_isa_for_testing: ") + cpu_isa_name(isa) +
                                " exceeds the available " + cpu_isa_name(available_cpu_isa()));
  }
  current_isa.store(static_cast<int>(isa), std::memory_order_release);
}

void reset_cpu_isa_for_testing() {
  current_isa.store(static_cast<int>(available_cpu_isa()), std::memory_order_release);
}

void cap_dnnl_isa() {
  static std::once_flag once;
  std::call_once(once, [] {
    // The top level leaves oneDNN uncapped (it may use AMX); lower ones cap it to match.
    const CpuIsa isa = available_cpu_isa();
    if (isa == detected_cpu_isa() && std::getenv(kCapVariable) == nullptr) return;
    dnnl::cpu_isa limit = dnnl::cpu_isa::all;
    if (isa == CpuIsa::kAvx2) limit = dnnl::cpu_isa::avx2;
    if (isa == CpuIsa::kAvx512) limit = dnnl::cpu_isa::avx512_core;
    if (isa == CpuIsa::kAvx512Bf16) limit = dnnl::cpu_isa::avx512_core_bf16;
    // Fails only once oneDNN has already dispatched a kernel: then its earlier choice stands.
    (void)dnnl::set_max_cpu_isa(limit);
  });
}

const char* dnnl_effective_isa_name() {
  cap_dnnl_isa();
  // "cpu_isa_avx2" -> "avx2"
  const char* name = dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa());
  const char* prefix = "cpu_isa_";
  return std::strncmp(name, prefix, std::strlen(prefix)) == 0 ? name + std::strlen(prefix) : name;
}

}  // namespace openneuron::kernels
