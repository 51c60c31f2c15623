// A fixture for kernels built once per ISA level (isa_variant.h): each test runs once per
// level, as that level, and skips (with the reason) the levels this CPU or the cap lacks.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "kernels/runtime/cpu_isa.h"

namespace openneuron::kernels::testing {

class PerIsaTest : public ::testing::TestWithParam<CpuIsa> {
 protected:
  void SetUp() override {
    if (GetParam() > available_cpu_isa()) {
      GTEST_SKIP() << cpu_isa_name(GetParam()) << " kernels need a CPU with "
                   << cpu_isa_name(GetParam()) << "; this one offers "
                   << cpu_isa_name(available_cpu_isa())
                   << " (CPU features capped by OPENNEURON_MAX_CPU_ISA)";
    }
    set_cpu_isa_for_testing(GetParam());
  }
  void TearDown() override { reset_cpu_isa_for_testing(); }
};

// The levels with their own kernel builds: avx2 (the baseline) and avx512.
inline auto kernel_isas() { return ::testing::Values(CpuIsa::kAvx2, CpuIsa::kAvx512); }

inline std::string isa_test_name(const ::testing::TestParamInfo<CpuIsa>& info) {
  return cpu_isa_name(info.param);
}

}  // namespace openneuron::kernels::testing
