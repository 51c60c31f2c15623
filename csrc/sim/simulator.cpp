#include "sim/simulator.h"

#include "sim/interpreter.h"
#include "sim/rules.h"

namespace openneuron::sim {

Simulator::Simulator(Program program, const CoreProfile& profile)
    : program_(std::move(program)), profile_(profile) {
  layout_ = plan_layout(program_, profile_);
  check_rules(program_, profile_, layout_);
}

CoreState& Simulator::state() {
  if (!state_) {
    execution_layout_ = plan_layout(program_, profile_, /*next_fit=*/false);
    state_ = std::make_unique<CoreState>(program_, profile_, execution_layout_);
  }
  return *state_;
}

void Simulator::set_input(int32_t buffer, const void* data, size_t bytes) {
  state().write_hbm(buffer, data, bytes);
}

void Simulator::run(bool reference) {
  CoreState& core = state();
  core.fill_missing_inputs();
  for (size_t i = 0; i < program_.instructions.size(); ++i) {
    for (int32_t buffer : execution_layout_.born_at[i]) core.begin_life(buffer);
    if (reference) {
      execute_reference(core, program_.instructions[i]);
    } else {
      execute_fast(core, program_.instructions[i]);
    }
  }
}

const std::vector<uint8_t>& Simulator::hbm(int32_t buffer) const { return state_->hbm(buffer); }

}  // namespace openneuron::sim
