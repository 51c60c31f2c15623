#include "kernels/runtime/library_calls.h"

#include <atomic>

namespace openneuron::kernels {
namespace {

constexpr size_t kCalls = static_cast<size_t>(LibraryCall::kCount);
std::array<std::atomic<uint64_t>, kCalls> counts{};

}  // namespace

const char* library_call_name(LibraryCall call) {
  switch (call) {
    case LibraryCall::kOneDnnMatmul:
      return "onednn_matmul";
    case LibraryCall::kOpenBlasGemm:
      return "openblas_gemm";
    case LibraryCall::kMklGemm:
      return "mkl_gemm";
    case LibraryCall::kOneDnnConvolution:
      return "onednn_convolution";
    case LibraryCall::kCount:
      break;
  }
  return "unknown";
}

void count_library_call(LibraryCall call) {
  counts[static_cast<size_t>(call)].fetch_add(1, std::memory_order_relaxed);
}

std::array<uint64_t, kCalls> library_call_counts() {
  std::array<uint64_t, kCalls> result{};
  for (size_t i = 0; i < kCalls; ++i) result[i] = counts[i].load(std::memory_order_relaxed);
  return result;
}

}  // namespace openneuron::kernels
