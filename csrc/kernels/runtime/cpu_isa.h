// Which vector instruction set the kernels use: the best level the CPU supports, capped by
// OPENNEURON_MAX_CPU_ISA. The cap also caps oneDNN (as ONEDNN_MAX_CPU_ISA does), so one
// machine can run every path a smaller CPU would.
#pragma once

namespace openneuron::kernels {

// Ordered: each level includes the ones before it. kAvx2 is the baseline build (x86-64-v3).
enum class CpuIsa { kAvx2 = 0, kAvx512 = 1, kAvx512Bf16 = 2 };

// "avx2", "avx512", "avx512_bf16".
const char* cpu_isa_name(CpuIsa isa);

// The highest level this CPU (and the OS's saved vector state) supports.
CpuIsa detected_cpu_isa();

// detected_cpu_isa() capped by OPENNEURON_MAX_CPU_ISA. Throws std::invalid_argument naming
// the accepted values when the variable is malformed.
CpuIsa available_cpu_isa();

// The level the kernels use: available_cpu_isa(), read once (or the test override).
CpuIsa cpu_isa();

// True when kernels compiled for AVX-512 run (cpu_isa() >= kAvx512).
bool use_avx512_kernels();

// Overrides cpu_isa() for tests of one ISA's kernels; the level must not exceed
// available_cpu_isa() (std::invalid_argument otherwise). Not for use while kernels run.
void set_cpu_isa_for_testing(CpuIsa isa);

// Restores cpu_isa() to available_cpu_isa().
void reset_cpu_isa_for_testing();

// Applies cpu_isa() as oneDNN's maximum ISA. Must run before oneDNN's first use; oneDNN's
// own ONEDNN_MAX_CPU_ISA still applies on top. Idempotent.
void cap_dnnl_isa();

// The ISA oneDNN's JIT kernels actually use, e.g. "avx2", "avx512_core_amx" (caps applied).
const char* dnnl_effective_isa_name();

}  // namespace openneuron::kernels
