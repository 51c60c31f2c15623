// oneMKL's GEMMs, loaded at run time (dlopen, RTLD_LOCAL) from the `mkl` package of the Python
// environment. Loaded privately so its cblas_* names never displace OpenBLAS's, which stays
// linked: the fallback when MKL is absent and a choice tests can force.
#pragma once

#include <cstdint>
#include <string>

namespace openneuron::kernels {

// Row-major, sequential (one thread per call: parallel_for splits large products).
struct MklGemms {
  using Sgemm = void (*)(int layout, int trans_a, int trans_b, int m, int n, int k, float alpha,
                         const float* a, int lda, const float* b, int ldb, float beta, float* c,
                         int ldc);
  using Dgemm = void (*)(int layout, int trans_a, int trans_b, int m, int n, int k, double alpha,
                         const double* a, int lda, const double* b, int ldb, double beta, double* c,
                         int ldc);
  // bf16 operands (raw uint16 bits), fp32 accumulation and output.
  using GemmBf16 = void (*)(int layout, int trans_a, int trans_b, int m, int n, int k, float alpha,
                            const uint16_t* a, int lda, const uint16_t* b, int ldb, float beta,
                            float* c, int ldc);
  Sgemm sgemm = nullptr;
  Dgemm dgemm = nullptr;
  GemmBf16 gemm_bf16 = nullptr;
};

// CBLAS's enum values, which MKL's ABI shares with OpenBLAS's cblas.h.
constexpr int kMklRowMajor = 101;
constexpr int kMklNoTrans = 111;
constexpr int kMklTrans = 112;

// Where to load libmkl_rt from; must precede the first mkl_gemms() call to take effect (the
// bridge passes the path of the installed `mkl` package). Without it, OPENNEURON_MKL_LIBRARY,
// then the plain soname on the loader's search path.
void set_mkl_library_path(const std::string& path);

// The loaded functions (threading set to sequential, ISA capped as cpu_isa() is), or nullptr
// when MKL could not be loaded; mkl_status() then says why. Loads once; thread-safe.
const MklGemms* mkl_gemms();

// "oneMKL <version> from <path>" when loaded, else the reason it is not.
std::string mkl_status();

}  // namespace openneuron::kernels
