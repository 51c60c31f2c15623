// For kernel sources with wide-vector code, which the build compiles once per ISA level
// (the list is in CMakeLists.txt): each copy defines OPENNEURON_KERNEL_AVX512 as 0 or 1 and
// puts its code in its own namespace, so isa_dispatch.cpp can pick one at run time.
//
// A variant source includes its ordinary headers first, then wraps its code in
// OPENNEURON_ISA_BEGIN ... OPENNEURON_ISA_END inside namespace OPENNEURON_ISA_NAMESPACE.
// Only code defined inside the region is compiled for the wider ISA; inline functions and
// templates from headers included before it keep the baseline ISA, so no shared definition
// (std::vector's members, say) can carry AVX-512 instructions into code run on any CPU.
#pragma once

#include <immintrin.h>  // GCC's intrinsics are usable in any function targeting their ISA

#if !defined(OPENNEURON_KERNEL_AVX512)
#error "compiled only through the per-ISA copies that CMakeLists.txt generates"
#endif

#if OPENNEURON_KERNEL_AVX512
#define OPENNEURON_ISA_NAMESPACE isa_avx512
// F, BW, VL, DQ: the set cpu_isa.h calls avx512 (GCC's target macros stay unset in C++,
// hence OPENNEURON_KERNEL_AVX512 instead of __AVX512F__).
#define OPENNEURON_ISA_BEGIN \
  _Pragma("GCC push_options") _Pragma("GCC target(\"avx512f,avx512bw,avx512vl,avx512dq\")")
#else
#define OPENNEURON_ISA_NAMESPACE isa_avx2
#define OPENNEURON_ISA_BEGIN _Pragma("GCC push_options")
#endif
#define OPENNEURON_ISA_END _Pragma("GCC pop_options")
