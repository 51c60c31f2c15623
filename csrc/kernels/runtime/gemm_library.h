// Which library runs the matrix products, per dtype. OPENNEURON_GEMM_LIBRARY forces one
// (`mkl`, `onednn`, `openblas`) so each path is testable on one machine; `auto` (the default)
// is the measured choice: oneMKL for fp32/fp64 on Intel CPUs (what PyTorch's CPU build uses),
// OpenBLAS elsewhere (on an AMD EPYC with AVX2 it beat oneMKL: 0.82x against 0.67x PyTorch's
// rate at 1024^3 fp32), and oneDNN for bf16 where it has native bf16 kernels.
#pragma once

#include <string>

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

// True when `auto` gives fp32/fp64 products to oneMKL: it is installed and the CPU is Intel's.
bool auto_prefers_mkl();

// True when fp32 and fp64 BLAS calls go to oneMKL (else OpenBLAS). Throws std::runtime_error
// with mkl_status() when `mkl` is forced and oneMKL could not be loaded.
bool gemm_uses_mkl();

// True when oneDNN may run fp32 products (it still declines shapes it has no fast kernel for).
bool gemm_allows_onednn_fp32();

// True when oneDNN may run bf16 products natively (otherwise they widen to fp32 for BLAS).
bool gemm_allows_onednn_bf16();

}  // namespace openneuron::kernels
