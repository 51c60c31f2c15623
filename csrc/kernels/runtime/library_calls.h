// Counts of the dense-math library calls the kernels make, so tests can check which path
// really ran and the benchmark can say which library ran each measurement.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace openneuron::kernels {

enum class LibraryCall {
  kOneDnnMatmul,       // a product run by oneDNN's matmul primitive
  kOpenBlasGemm,       // a product run by OpenBLAS (sgemm/dgemm)
  kMklGemm,            // a product run by oneMKL (sgemm/dgemm)
  kOneDnnConvolution,  // a convolution pass run by oneDNN's convolution primitives
  kCount
};

// "onednn_matmul", "openblas_gemm", "mkl_gemm", "onednn_convolution".
const char* library_call_name(LibraryCall call);

void count_library_call(LibraryCall call);

// Calls so far in this process, indexed by LibraryCall.
std::array<uint64_t, static_cast<size_t>(LibraryCall::kCount)> library_call_counts();

}  // namespace openneuron::kernels
