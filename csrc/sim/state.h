// The memories of one NeuronCore while a program runs: SBUF and PSUM as partitions × bytes,
// HBM tensors, and a written-flag per byte so reads of never-written memory are caught.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/isa.h"
#include "sim/layout.h"
#include "sim/profile.h"

namespace openneuron::sim {

// One element of an operand: where its bytes are and where its written-flags are (null for
// memory that is always written: kernel inputs).
struct ElementRef {
  uint8_t* data;
  uint8_t* written;
};

class CoreState {
 public:
  CoreState(const Program& program, const CoreProfile& profile, const Layout& layout);

  // Copies `bytes` into HBM buffer `buffer` and marks them written.
  void write_hbm(int32_t buffer, const void* data, size_t bytes);
  const std::vector<uint8_t>& hbm(int32_t buffer) const { return hbm_[buffer]; }

  // Inputs the caller never filled read as zeros.
  void fill_missing_inputs();

  // Starts a buffer's life: on-chip bytes are filled with NaN (0xFF in every float format)
  // and marked never written, as a fresh allocation on the device holds stale data.
  void begin_life(int32_t buffer);

  // Row `partition` (relative to the pattern's start) of an operand: the address of element
  // offset 0 of that partition; elements are then at + offset·size. HBM ignores `partition`.
  // With `flags`, the written-flags instead, or null when the memory is always written.
  uint8_t* row(const AccessPattern& ap, int64_t partition, bool flags);

  // Every element of `ap` in row-major order (partition, then free dims).
  std::vector<ElementRef> elements(const AccessPattern& ap);

  const Program& program() const { return program_; }

 private:
  const Program& program_;
  const CoreProfile& profile_;
  const Layout& layout_;
  // Bytes per partition actually modelled: the highest byte any buffer reaches, so a small
  // kernel does not pay for the whole 24 MiB SBUF.
  int64_t sbuf_row_bytes_ = 0;
  int64_t psum_row_bytes_ = 0;
  std::vector<uint8_t> sbuf_, sbuf_written_;
  std::vector<uint8_t> psum_, psum_written_;
  std::vector<std::vector<uint8_t>> hbm_, hbm_written_;
};

}  // namespace openneuron::sim
