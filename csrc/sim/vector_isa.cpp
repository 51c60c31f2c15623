#include "sim/vector_isa.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace openneuron::sim {

namespace {

bool cpu_has_avx512() {
  // __builtin_cpu_supports also checks that the OS saves the vector registers.
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512dq") ||
      !__builtin_cpu_supports("avx512bw") || !__builtin_cpu_supports("avx512vl"))
    return false;
  const char* cap = std::getenv("OPENNEURON_MAX_CPU_ISA");
  return cap == nullptr || std::strcmp(cap, "avx2") != 0;
}

std::atomic<bool> forced_avx2{false};

}  // namespace

bool use_avx512() {
  static const bool available = cpu_has_avx512();
  return available && !forced_avx2.load(std::memory_order_relaxed);
}

const char* vector_isa_name() { return use_avx512() ? "avx512" : "avx2"; }

void force_avx2(bool avx2) { forced_avx2.store(avx2, std::memory_order_relaxed); }

}  // namespace openneuron::sim
