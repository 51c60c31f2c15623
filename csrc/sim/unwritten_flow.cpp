#include "sim/unwritten_flow.h"

#include <set>
#include <utility>
#include <vector>

#include "sim/interpreter.h"

namespace openneuron::sim {

namespace {

bool covered(Opcode opcode) {
  switch (opcode) {
    case Opcode::kTensorTensor:
    case Opcode::kTensorScalar:
    case Opcode::kActivation:
    case Opcode::kTensorReduce:
    case Opcode::kMatmul:
      return true;
    default:
      return false;
  }
}

// Marks in `result` (one flag per dst element) those that source element `n` of operand `src`
// feeds.
void mark_dependents(const Instruction& ins, const AccessPattern& src, int64_t n,
                     std::vector<char>& result) {
  const AccessPattern& dst = ins.dst;
  const int64_t total = dst.elements();
  if (ins.opcode == Opcode::kMatmul) {
    const int64_t m_size = dst.partitions(), n_size = dst.free_size();
    if (&src == &ins.src[0]) {  // stationary [K, M]: column m feeds result row m
      const int64_t m = n % m_size;
      for (int64_t j = 0; j < n_size; ++j) result[m * n_size + j] = 1;
    } else if (&src == &ins.src[1]) {  // moving [K, N]: column j feeds result column j
      const int64_t j = n % n_size;
      for (int64_t m = 0; m < m_size; ++m) result[m * n_size + j] = 1;
    } else {
      result[n] = 1;  // the accumulated result itself
    }
    return;
  }
  if (ins.opcode == Opcode::kTensorReduce) {
    result[n / (src.elements() / total)] = 1;
    return;
  }
  if (src.elements() == total) {
    result[n] = 1;
    return;
  }
  const int64_t row = dst.free_size();  // a [P, 1] operand: element n is partition n's value
  for (int64_t j = 0; j < row; ++j) result[n * row + j] = 1;
}

}  // namespace

bool execute_computing_on_unwritten(CoreState& state, const Instruction& ins, bool reference) {
  if (!covered(ins.opcode)) return false;
  const AccessPattern& dst = ins.dst;
  std::vector<const AccessPattern*> sources;
  for (const auto& src : ins.src) {
    if (src.valid()) sources.push_back(&src);
  }
  if (ins.opcode == Opcode::kMatmul && ins.accumulate) sources.push_back(&dst);
  std::vector<std::vector<int64_t>> unwritten(sources.size());
  bool any = false;
  for (size_t s = 0; s < sources.size(); ++s) {
    unwritten[s] = state.unwritten_elements(*sources[s]);
    any = any || !unwritten[s].empty();
  }
  if (!any) return false;
  auto shares_an_output = [&](const AccessPattern& src) {
    return src.buffer == dst.buffer || (ins.dst2.valid() && src.buffer == ins.dst2.buffer);
  };
  // Where the results land (only when a source shares their buffer): a source element there
  // takes the result's mark, not its own.
  std::set<std::pair<int64_t, int64_t>> written_places;
  for (size_t s = 0; s < sources.size(); ++s) {
    if (unwritten[s].empty() || !shares_an_output(*sources[s]) || !written_places.empty()) continue;
    for (const AccessPattern* out : {&dst, &ins.dst2}) {
      if (!out->valid()) continue;
      for (int64_t n = 0; n < out->elements(); ++n)
        written_places.insert(state.element_address(*out, n));
    }
  }
  for (size_t s = 0; s < sources.size(); ++s) {
    if (!unwritten[s].empty()) state.mark_written(*sources[s]);
  }
  reference ? execute_reference(state, ins) : execute_fast(state, ins);
  std::vector<char> result(static_cast<size_t>(dst.elements()), 0);
  for (size_t s = 0; s < sources.size(); ++s) {
    for (const int64_t n : unwritten[s]) mark_dependents(ins, *sources[s], n, result);
  }
  const int64_t row = dst.free_size();
  for (int64_t n = 0; n < dst.elements(); ++n) {
    if (!result[n]) continue;
    state.mark_element_unwritten(dst, n);
    if (ins.dst2.valid()) state.mark_element_unwritten(ins.dst2, n / row);  // its row's reduction
  }
  for (size_t s = 0; s < sources.size(); ++s) {
    const AccessPattern& src = *sources[s];
    const bool shares = shares_an_output(src);
    for (const int64_t n : unwritten[s]) {
      if (!shares || !written_places.count(state.element_address(src, n)))
        state.mark_element_unwritten(src, n);
    }
  }
  return true;
}

}  // namespace openneuron::sim
