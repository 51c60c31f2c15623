// Keeps OpenBLAS on the calling thread: its worker threads busy-wait when idle, which on a
// small host starves the threads that enqueue work. parallel_for provides the parallelism.
#pragma once

#include <cblas.h>

namespace openneuron::kernels {

inline void single_threaded_blas() {
  static const bool configured = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)configured;
}

}  // namespace openneuron::kernels
