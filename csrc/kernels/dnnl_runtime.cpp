#include "kernels/dnnl_runtime.h"

#include <omp.h>

namespace openneuron::kernels {

dnnl::engine& dnnl_engine() {
  static dnnl::engine instance(dnnl::engine::kind::cpu, 0);
  return instance;
}

dnnl::stream& dnnl_thread_stream() {
  thread_local dnnl::stream stream(dnnl_engine());
  return stream;
}

void use_one_openmp_thread() {
  thread_local bool done = false;
  if (!done) {
    omp_set_num_threads(1);
    done = true;
  }
}

}  // namespace openneuron::kernels
