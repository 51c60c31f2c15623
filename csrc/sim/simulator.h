// One kernel on one simulated NeuronCore: placement, rule checks, execution and timing.
#pragma once

#include <cstdint>
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

  // Fills HBM input `buffer` (its bytes, row-major) before run().
  void set_input(int32_t buffer, const void* data, size_t bytes);

  // Executes every instruction in issue order (each buffer's life starts at its first use,
  // poisoned); `reference` selects the reference interpreter instead of the fast executor.
  // Throws SimError on a read of never-written memory.
  void run(bool reference = false);

  // An HBM buffer's bytes after run().
  const std::vector<uint8_t>& hbm(int32_t buffer) const;

  // The per-engine schedule (does not need run()).
  Timeline timing() const { return schedule(program_, profile_, layout_); }

  const Program& program() const { return program_; }
  const Layout& layout() const { return layout_; }
  const CoreProfile& profile() const { return profile_; }

 private:
  CoreState& state();

  Program program_;
  const CoreProfile& profile_;
  Layout layout_;            // next-fit: the timing model's placement
  Layout execution_layout_;  // first-fit: the functional state's (smaller) placement
  std::unique_ptr<CoreState> state_;
};

}  // namespace openneuron::sim
