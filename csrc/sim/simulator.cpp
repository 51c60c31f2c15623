#include "sim/simulator.h"

#include "sim/errors.h"
#include "sim/indirect.h"
#include "sim/interpreter.h"
#include "sim/rules.h"
#include "sim/unwritten_flow.h"

namespace openneuron::sim {

namespace {

// The next-fit layout timing uses, or `packed` (first-fit) when next-fit finds no gap:
// next-fit scatters small long-lived buffers around the ring, so a kernel whose live buffers
// fit may still find no gap wide enough; the capacity rule holds if any placement fits.
Layout timing_layout(const Program& program, const CoreProfile& profile, const Layout& packed) {
  try {
    return plan_layout(program, profile);
  } catch (const SimError& error) {
    if (error.rule != rule::kSbufCapacity && error.rule != rule::kPsumCapacity) throw;
    return packed;
  }
}

}  // namespace

Simulator::Simulator(Program program, const CoreProfile& profile)
    : program_(std::move(program)), profile_(profile) {
  // The packed placement first: when even it does not fit, its capacity error is the one raised.
  execution_layout_ = plan_layout(program_, profile_, /*next_fit=*/false);
  layout_ = timing_layout(program_, profile_, execution_layout_);
  check_rules(program_, profile_, layout_);
}

void Simulator::set_input(int32_t buffer, const void* data, size_t bytes) {
  const auto* begin = static_cast<const uint8_t*>(data);
  inputs_[buffer].assign(begin, begin + bytes);
}

void Simulator::bind(int32_t buffer, uint8_t* data) { bound_[buffer] = data; }

bool Simulator::run(bool reference) {
  if (next_ == 0) {
    state_ = std::make_unique<CoreState>(program_, profile_, execution_layout_);
    CoreState& core = *state_;
    for (const auto& [buffer, bytes] : inputs_) core.write_hbm(buffer, bytes.data(), bytes.size());
    for (const auto& [buffer, data] : bound_) core.bind_hbm(buffer, data);
    core.prepare();
  }
  // A resumed run keeps the bindings and inputs its first segment started with.
  inputs_.clear();
  bound_.clear();
  CoreState& core = *state_;
  try {
    while (next_ < program_.instructions.size()) {
      const size_t i = next_++;
      for (int32_t buffer : execution_layout_.born_at[i]) core.begin_life(buffer);
      const Instruction& instruction = program_.instructions[i];
      if (instruction.opcode == Opcode::kCoreBarrier) return false;
      if (instruction.indirect.active()) {
        for (const Instruction& plain : resolve_indirect(core, instruction)) {
          reference ? execute_reference(core, plain) : execute_fast(core, plain);
        }
      } else if (execute_move_carrying_unwritten(core, instruction, reference) ||
                 execute_computing_on_unwritten(core, instruction, reference)) {
        continue;
      } else if (reference) {
        execute_reference(core, instruction);
      } else {
        execute_fast(core, instruction);
      }
    }
  } catch (...) {
    next_ = 0;
    core.finish();
    throw;
  }
  next_ = 0;
  core.finish();
  return true;
}

std::vector<uint8_t> Simulator::hbm(int32_t buffer) const {
  const uint8_t* data = state_->hbm(buffer);
  const auto bytes = static_cast<size_t>(program_.buffers[buffer].bytes_per_partition);
  return std::vector<uint8_t>(data, data + bytes);
}

}  // namespace openneuron::sim
