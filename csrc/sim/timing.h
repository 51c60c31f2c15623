// The timing model: when each instruction runs on its engine, and how long the kernel takes.
//
// Each engine (Tensor, Vector, Scalar, GpSimd) executes its instructions in issue order; the 16
// DMA engines share their summed bandwidth, and a transfer takes it as soon as its data is
// ready (DMA queues do not wait on one another). An instruction starts when its
// engine is free and the memory it reads was written (RAW), and the memory it writes is no
// longer being read or written (WAR, WAW); waiting on another engine costs a semaphore wait.
// Dependencies are tracked at the partitions × bytes each SBUF/PSUM access spans and at the
// byte range of each HBM access. Because buffers are placed next-fit (layout.h), reusing memory
// creates the back-pressure a real kernel's buffer count gives.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/isa.h"
#include "sim/layout.h"
#include "sim/profile.h"

namespace openneuron::sim {

struct InstructionTiming {
  double start_ns = 0;
  double end_ns = 0;
};

struct EngineSummary {
  int64_t instructions = 0;
  double busy_ns = 0;      // time the engine was executing (DMA: time any transfer was in flight)
  double utilization = 0;  // busy_ns / total_ns
};

struct Timeline {
  std::vector<InstructionTiming> instructions;
  EngineSummary engines[static_cast<int>(Engine::kCount)];
  double total_ns = 0;
  int64_t dma_bytes = 0;
  int64_t matmul_flops = 0;
};

// The engine-busy time of one instruction on `profile`, in ns (DMA: the queue occupancy,
// without the fixed latency).
double instruction_cost_ns(const Program& program, const Instruction& instruction,
                           const CoreProfile& profile);

// Schedules `program` on `profile`'s engines.
Timeline schedule(const Program& program, const CoreProfile& profile, const Layout& layout);

// The timeline as Chrome/Perfetto trace-event JSON: one track per engine, one slice per
// instruction (name, source line, operand shapes), times in µs.
std::string chrome_trace(const Program& program, const Timeline& timeline,
                         const std::string& profile_name);

}  // namespace openneuron::sim
