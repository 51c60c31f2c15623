// A small fork-join pool for kernels: splits an index range across the host's cores.
#pragma once

#include <cstdint>
#include <functional>

namespace openneuron::kernels {

// Number of threads parallel_for uses (the host's cores, or OPENNEURON_NUM_THREADS).
int kernel_thread_count();

// Threads a parallel_for started here would use: kernel_thread_count(), or 1 inside a
// parallel_for body (nested calls run inline).
int available_kernel_threads();

// Calls body(chunk_begin, chunk_end) over disjoint chunks covering [begin, end), in
// parallel when the range holds at least 2 * grain indices, else inline. Blocks until
// every chunk is done. Calls made from inside a body run inline (no nested parallelism).
// Exceptions thrown by a body are rethrown in the caller after all chunks finish.
void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& body);

}  // namespace openneuron::kernels
