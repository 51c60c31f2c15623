// Which library runs the matrix products, per dtype. OPENNEURON_GEMM_LIBRARY forces one
// (`mkl`, `onednn`, `openblas`) so each path is testable on one machine; `auto` (the default)
// is the measured choice, a pure function of the CPU (vendor, ISA after caps) and of whether
// oneMKL loaded: auto_gemm_library() below, whose rule and measurements are in its source.
#pragma once

#include <string>

#include "kernels/runtime/cpu_isa.h"

namespace openneuron::kernels {

enum class GemmLibrary { kAuto, kMkl, kOneDnn, kOpenBlas };

// "auto", "mkl", "onednn", "openblas".
const char* gemm_library_name(GemmLibrary library);

// A value of OPENNEURON_GEMM_LIBRARY (nullptr or empty: auto). Throws std::invalid_argument
// naming the accepted values when it is none of them.
GemmLibrary parse_gemm_library(const char* value);

// OPENNEURON_GEMM_LIBRARY, parsed once (or the test override).
GemmLibrary requested_gemm_library();

// Overrides the variable for tests; not for use while kernels run.
void set_gemm_library_for_testing(GemmLibrary library);
void reset_gemm_library_for_testing();

// The operand dtypes a product's library is chosen for (fp16 and fp8 are packed to fp32).
enum class GemmFamily { kFloat32, kFloat64, kBFloat16 };

// What `auto` decides on.
struct GemmHost {
  bool intel = false;          // the CPU vendor is GenuineIntel
  CpuIsa isa = CpuIsa::kAvx2;  // cpu_isa(): the detected level under OPENNEURON_MAX_CPU_ISA
  bool mkl_loaded = false;     // oneMKL is installed and loaded
};

// The library `auto` gives a product of `family` on `host`: kMkl, kOneDnn or kOpenBlas (never
// kAuto). kOneDnn means "oneDNN where it has a JIT kernel for the shape": it declines the rest,
// which then go to BLAS (bf16 widened to fp32, under the fp32 choice). Pure; no I/O.
GemmLibrary auto_gemm_library(GemmFamily family, const GemmHost& host);

// This process's host: vendor (read once), cpu_isa(), and oneMKL (loaded only when the rule
// could choose it on this vendor).
GemmHost this_gemm_host();

// True when `auto` gives fp32/fp64 products to oneMKL on this host.
bool auto_prefers_mkl();

// True when BLAS calls of `family` (fp32 or fp64) go to oneMKL (else OpenBLAS). Throws
// std::runtime_error with mkl_status() when `mkl` is forced and oneMKL could not be loaded.
bool gemm_uses_mkl(GemmFamily family);

// True when oneDNN may run fp32 products (it still declines shapes it has no fast kernel for).
bool gemm_allows_onednn_fp32();

// True when oneDNN may run bf16 products natively (otherwise they widen to fp32 for BLAS).
bool gemm_allows_onednn_bf16();

}  // namespace openneuron::kernels
