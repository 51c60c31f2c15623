// The ISA level the kernels use: the cap's parsing and ordering, and that it caps oneDNN.
#include "kernels/runtime/cpu_isa.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <dnnl.hpp>
#include <stdexcept>
#include <string>

namespace openneuron::kernels {
namespace {

// Sets OPENNEURON_MAX_CPU_ISA for one test and restores the previous value.
class ScopedCap {
 public:
  explicit ScopedCap(const char* value) {
    const char* old = std::getenv("OPENNEURON_MAX_CPU_ISA");
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv("OPENNEURON_MAX_CPU_ISA", value, 1);
  }
  ~ScopedCap() {
    if (had_) {
      setenv("OPENNEURON_MAX_CPU_ISA", old_.c_str(), 1);
    } else {
      unsetenv("OPENNEURON_MAX_CPU_ISA");
    }
  }

 private:
  bool had_ = false;
  std::string old_;
};

TEST(CpuIsa, CapLowersTheLevelAndHigherCapsAreNoCap) {
  const CpuIsa detected = detected_cpu_isa();
  {
    ScopedCap cap("avx2");
    EXPECT_EQ(available_cpu_isa(), CpuIsa::kAvx2);
  }
  {
    ScopedCap cap("avx512");
    EXPECT_EQ(available_cpu_isa(), detected < CpuIsa::kAvx512 ? detected : CpuIsa::kAvx512);
  }
  {
    ScopedCap cap("avx512_bf16");
    EXPECT_EQ(available_cpu_isa(), detected);
  }
}

TEST(CpuIsa, MalformedCapNamesTheAcceptedValues) {
  ScopedCap cap("avx1024");
  try {
    available_cpu_isa();
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("OPENNEURON_MAX_CPU_ISA='avx1024'"), std::string::npos) << message;
    EXPECT_NE(message.find("avx2, avx512, avx512_bf16"), std::string::npos) << message;
  }
}

TEST(CpuIsa, TestOverrideStaysWithinTheAvailableLevel) {
  set_cpu_isa_for_testing(CpuIsa::kAvx2);
  EXPECT_EQ(cpu_isa(), CpuIsa::kAvx2);
  EXPECT_FALSE(use_avx512_kernels());
  reset_cpu_isa_for_testing();
  EXPECT_EQ(cpu_isa(), available_cpu_isa());
  if (available_cpu_isa() < CpuIsa::kAvx512Bf16) {
    EXPECT_THROW(set_cpu_isa_for_testing(CpuIsa::kAvx512Bf16), std::invalid_argument);
  }
  EXPECT_STREQ(cpu_isa_name(CpuIsa::kAvx512Bf16), "avx512_bf16");
}

// Under a cap, oneDNN's JIT kernels stay at or below the same level.
TEST(CpuIsa, CapAlsoCapsOneDnn) {
  cap_dnnl_isa();
  const auto effective = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto isa_bits = [](dnnl::cpu_isa isa) { return static_cast<unsigned>(isa); };
  // oneDNN's ISA values are bit sets: a level includes every bit of the levels below it.
  if (available_cpu_isa() == CpuIsa::kAvx2) {
    EXPECT_EQ(effective & ~isa_bits(dnnl::cpu_isa::avx2), 0u) << dnnl_effective_isa_name();
  } else {
    EXPECT_EQ(effective & isa_bits(dnnl::cpu_isa::avx512_core),
              isa_bits(dnnl::cpu_isa::avx512_core))
        << dnnl_effective_isa_name();
  }
}

}  // namespace
}  // namespace openneuron::kernels
