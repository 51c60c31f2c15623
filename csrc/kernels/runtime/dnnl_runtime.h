// What every oneDNN caller in the kernel library shares: one CPU engine, a stream per thread,
// and the rule that oneDNN's own OpenMP team stays at one thread.
#pragma once

#include <cstddef>
#include <dnnl.hpp>

namespace openneuron::kernels {

// The process-wide oneDNN CPU engine.
dnnl::engine& dnnl_engine();

// The calling thread's oneDNN stream on dnnl_engine().
dnnl::stream& dnnl_thread_stream();

// The roles a working buffer plays in a oneDNN call. Each thread keeps one growing buffer per
// role, since fresh multi-megabyte temporaries cost a page fault per page on every call.
enum class DnnlBuffer {
  kConvSrc,
  kConvWeights,
  kConvDst,
  kConvDiffDst,
  kConvDiffDstForWeights,
  kConvScratchpad,
  kMatmulScratchpad,
  kMatmulLeftOperand,
  kMatmulColumnPiece,
  kScaledLeftOperand,
  kScaledRightOperand,
  kScaledAccumulator,
  kCount
};

// The calling thread's 64-byte aligned buffer for `role`, of at least `bytes` bytes; valid
// until the thread next asks for the same role.
void* dnnl_thread_buffer(DnnlBuffer role, size_t bytes);

// Limits the calling thread's OpenMP team to one thread while it lives, then restores it.
// oneDNN's idle OpenMP threads spin and starve the stream worker threads on a small host, so
// parallel_for (which sleeps when idle) provides the parallelism instead. Restoring matters when
// a kernel runs inline on the user's thread: torch's CPU ops there keep their thread count.
class OneOpenMPThread {
 public:
  OneOpenMPThread();
  ~OneOpenMPThread();
  OneOpenMPThread(const OneOpenMPThread&) = delete;
  OneOpenMPThread& operator=(const OneOpenMPThread&) = delete;

 private:
  int saved_;
};

}  // namespace openneuron::kernels
