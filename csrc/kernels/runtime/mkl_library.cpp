#include "kernels/runtime/mkl_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "kernels/runtime/cpu_isa.h"

namespace openneuron::kernels {
namespace {

// Values of mkl_service.h's MKL_THREADING_SEQUENTIAL, MKL_INTERFACE_LP64 and MKL_ENABLE_*.
constexpr int kSequential = 1;
constexpr int kLp64 = 0;
constexpr int kEnableAvx2 = 2;
constexpr int kEnableAvx512 = 4;

std::mutex& state_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::string& requested_path() {
  static std::string path;
  return path;
}

struct Loaded {
  MklGemms gemms;
  bool ok = false;
  std::string status;
};

template <typename F>
F symbol(void* handle, const char* name) {
  return reinterpret_cast<F>(dlsym(handle, name));
}

Loaded load() {
  Loaded result;
  std::string path = requested_path();
  if (path.empty()) {
    const char* from_env = std::getenv("OPENNEURON_MKL_LIBRARY");
    path = from_env != nullptr && *from_env != '\0' ? from_env : "libmkl_rt.so.3";
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    result.status = "oneMKL not loaded: " + std::string(error ? error : path);
    return result;
  }
  // Threading and interface layers must be chosen before MKL's first computation.
  const auto set_threading = symbol<int (*)(int)>(handle, "MKL_Set_Threading_Layer");
  const auto set_interface = symbol<int (*)(int)>(handle, "MKL_Set_Interface_Layer");
  const auto enable_instructions = symbol<int (*)(int)>(handle, "MKL_Enable_Instructions");
  const auto version = symbol<void (*)(char*, int)>(handle, "MKL_Get_Version_String");
  result.gemms.sgemm = symbol<MklGemms::Sgemm>(handle, "cblas_sgemm");
  result.gemms.dgemm = symbol<MklGemms::Dgemm>(handle, "cblas_dgemm");
  result.gemms.gemm_bf16 = symbol<MklGemms::GemmBf16>(handle, "cblas_gemm_bf16bf16f32");
  if (!set_threading || !set_interface || !result.gemms.sgemm || !result.gemms.dgemm ||
      !result.gemms.gemm_bf16) {
    result.status = "oneMKL not loaded: " + path + " lacks the expected functions";
    return result;
  }
  set_interface(kLp64);
  set_threading(kSequential);
  // The kernels' ISA cap (OPENNEURON_MAX_CPU_ISA) caps MKL too, so one machine runs every path.
  if (enable_instructions != nullptr && cpu_isa() != detected_cpu_isa()) {
    enable_instructions(cpu_isa() == CpuIsa::kAvx2 ? kEnableAvx2 : kEnableAvx512);
  }
  char buffer[256] = {0};
  if (version != nullptr) version(buffer, sizeof(buffer) - 1);
  result.ok = true;
  result.status = std::string(buffer[0] ? buffer : "oneMKL") + " from " + path;
  return result;
}

const Loaded& loaded() {
  static const Loaded instance = [] {
    std::lock_guard<std::mutex> lock(state_mutex());
    return load();
  }();
  return instance;
}

}  // namespace

void set_mkl_library_path(const std::string& path) {
  std::lock_guard<std::mutex> lock(state_mutex());
  requested_path() = path;
}

const MklGemms* mkl_gemms() {
  const Loaded& state = loaded();
  return state.ok ? &state.gemms : nullptr;
}

std::string mkl_status() { return loaded().status; }

}  // namespace openneuron::kernels
