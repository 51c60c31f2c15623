// Which vector ISA the simulator's CPU kernels use: AVX-512 when the CPU has it (chosen at run
// time, capped by OPENNEURON_MAX_CPU_ISA=avx2 like the kernel library), else AVX2, the baseline
// build's level. Both give identical bytes; tests force AVX2 to check that.
#pragma once

namespace openneuron::sim {

bool use_avx512();
// "avx512" or "avx2": what use_avx512() chooses now.
const char* vector_isa_name();
// Makes the kernels use AVX2 (true) or the best the CPU has (false).
void force_avx2(bool avx2);

// The attribute of functions compiled for AVX-512 inside a baseline (AVX2) translation unit.
#define OPENNEURON_SIM_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl")))

}  // namespace openneuron::sim
