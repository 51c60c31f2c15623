#include "kernels/runtime/dnnl_runtime.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <memory>
#include <new>

#include "kernels/runtime/cpu_isa.h"
#include "kernels/runtime/process_state.h"

namespace openneuron::kernels {

dnnl::engine& dnnl_engine() {
  // Never destroyed: stream workers may still run a kernel while static destructors run.
  static auto* instance = [] {
    cap_dnnl_isa();  // before oneDNN picks any kernel
    return new dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return *instance;
}

void initialize_dnnl_process_state() noexcept {
  try {
    const dnnl::memory::desc square({2, 2}, dnnl::memory::data_type::f32,
                                    dnnl::memory::format_tag::ab);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(square, square, square),
                                          dnnl_engine());
    const dnnl::matmul primitive(pd);
  } catch (...) {
    // Without oneDNN's state now, kernels create it on first use, as before.
  }
}

dnnl::stream& dnnl_thread_stream() {
  thread_local dnnl::stream stream(dnnl_engine());
  return stream;
}

void* dnnl_thread_buffer(DnnlBuffer role, size_t bytes) {
  struct Buffer {
    std::unique_ptr<char, void (*)(void*)> data{nullptr, std::free};
    size_t capacity = 0;
  };
  thread_local std::array<Buffer, static_cast<size_t>(DnnlBuffer::kCount)> buffers;
  Buffer& buffer = buffers[static_cast<size_t>(role)];
  if (buffer.capacity < bytes || !buffer.data) {
    const size_t rounded = std::max<size_t>(64, (bytes + 63) / 64 * 64);
    buffer.data.reset(static_cast<char*>(std::aligned_alloc(64, rounded)));
    if (!buffer.data) throw std::bad_alloc();
    buffer.capacity = rounded;
  }
  return buffer.data.get();
}

OneOpenMPThread::OneOpenMPThread() : saved_(omp_get_max_threads()) {
  if (saved_ != 1) omp_set_num_threads(1);
}

OneOpenMPThread::~OneOpenMPThread() {
  if (saved_ != 1) omp_set_num_threads(saved_);
}

}  // namespace openneuron::kernels
