// One kernel on one simulated NeuronCore: placement, rule checks, execution and timing.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "sim/isa.h"
#include "sim/layout.h"
#include "sim/profile.h"
#include "sim/state.h"
#include "sim/timing.h"

namespace openneuron::sim {

class Simulator {
 public:
  // Places the buffers and checks every rule; throws SimError on the first violation.
  Simulator(Program program, const CoreProfile& profile);

  // Fills HBM input `buffer` (its bytes, row-major) for the next run(): a copy is kept.
  void set_input(int32_t buffer, const void* data, size_t bytes);
  // Makes HBM buffer `buffer` live in the caller's memory (its full size) for the next run():
  // inputs are read there and kernel-created tensors written there, without copies. The
  // memory must stay valid until run() returns.
  void bind(int32_t buffer, uint8_t* data);

  // Executes the instructions in issue order on a fresh core (each buffer's life starts at
  // its first use, unwritten); `reference` selects the reference interpreter instead of the
  // fast executor. Throws SimError on a read of never-written memory. Bindings and inputs
  // apply to this run only. A program with core barriers runs in segments: each call stops
  // after the next barrier (returning false) and the following call resumes there on the
  // same core state; the call that reaches the end returns true, and the next starts afresh.
  bool run(bool reference = false);

  // An HBM buffer's bytes after run().
  std::vector<uint8_t> hbm(int32_t buffer) const;

  // The per-engine schedule (does not need run()).
  Timeline timing() const { return schedule(program_, profile_, layout_); }

  const Program& program() const { return program_; }
  const Layout& layout() const { return layout_; }
  const CoreProfile& profile() const { return profile_; }

 private:
  Program program_;
  const CoreProfile& profile_;
  Layout layout_;            // next-fit: the timing model's placement
  Layout execution_layout_;  // first-fit: the functional state's (smaller) placement
  std::map<int32_t, std::vector<uint8_t>> inputs_;
  std::map<int32_t, uint8_t*> bound_;
  std::unique_ptr<CoreState> state_;
  size_t next_ = 0;  // the instruction a resumed run() starts at
};

}  // namespace openneuron::sim
