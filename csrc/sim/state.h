// The memories of one NeuronCore while a program runs: SBUF and PSUM as partitions × bytes,
// HBM tensors (owned, or the caller's memory bound in place), and which bytes of each buffer
// were written, so reads of never-written memory are caught (written.h).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "sim/isa.h"
#include "sim/layout.h"
#include "sim/profile.h"
#include "sim/written.h"

namespace openneuron::sim {

class CoreState {
 public:
  CoreState(const Program& program, const CoreProfile& profile, const Layout& layout);

  // Makes HBM buffer `buffer` live in the caller's `data` (its full size, row-major) for the
  // run: inputs are read there, kernel-created tensors written there (no copies).
  void bind_hbm(int32_t buffer, uint8_t* data);
  // Copies `bytes` into HBM buffer `buffer` (owned storage; the rest reads as zeros).
  void write_hbm(int32_t buffer, const void* data, size_t bytes);
  const uint8_t* hbm(int32_t buffer) const { return hbm_[buffer]; }

  // Before the first instruction: inputs without storage read as zeros; kernel-created HBM
  // tensors are marked never written and read as NaN (0xFF in every float format) where the
  // kernel leaves them unwritten: owned ones are filled now, bound ones by finish().
  void prepare();
  // After the last instruction (or a failed one): fills the bytes of bound kernel-created
  // tensors the kernel never wrote with 0xFF, so they hold NaN as if poisoned up front (reads
  // of unwritten bytes are errors, so nothing observed the difference).
  void finish();

  // Starts an on-chip buffer's life: none of its bytes are written (reads of them are errors,
  // so the stale bytes a new allocation holds are never observed).
  void begin_life(int32_t buffer);

  // Row `partition` (relative to the pattern's start) of an operand: the address of element
  // offset 0 of that partition; elements are then at + offset·size. HBM ignores `partition`.
  uint8_t* row(const AccessPattern& ap, int64_t partition) const {
    return row_base(ap) + partition * row_stride(ap);
  }
  // Row 0 of `ap` (as row()) and the bytes from one row to the next (0 for HBM).
  uint8_t* row_base(const AccessPattern& ap) const {
    const Memory memory = program_.buffers[ap.buffer].memory;
    if (memory == Memory::kHbm) return hbm_[ap.buffer];
    if (memory == Memory::kPsum)
      return psum_.get() + ap.start_partition * psum_row_bytes_ + layout_.base[ap.buffer];
    return sbuf_.get() + ap.start_partition * sbuf_row_bytes_ + layout_.base[ap.buffer];
  }
  int64_t row_stride(const AccessPattern& ap) const {
    const Memory memory = program_.buffers[ap.buffer].memory;
    return memory == Memory::kHbm ? 0 : memory == Memory::kPsum ? psum_row_bytes_ : sbuf_row_bytes_;
  }

  // The written-state of a buffer; null for memory that is always written (kernel inputs).
  WrittenMap* written(int32_t buffer) { return written_[buffer].get(); }

  // Whether every element of `ap` was written / marks them written (its whole footprint).
  bool all_written(const AccessPattern& ap);
  void mark_written(const AccessPattern& ap);
  // Whether element `index` (row-major over `ap`) was written: the slow path errors take.
  bool element_written(const AccessPattern& ap, int64_t index);
  // The row-major positions of the elements of `ap` never written (empty when all were).
  std::vector<int64_t> unwritten_elements(const AccessPattern& ap);
  // Marks element `index` of `ap` never written again (a move carried an unwritten element).
  void mark_element_unwritten(const AccessPattern& ap, int64_t index);
  // Where element `index` (row-major over `ap`) lives: (partition, byte in it); HBM: (0, byte).
  std::pair<int64_t, int64_t> element_address(const AccessPattern& ap, int64_t index) const;

  const Program& program() const { return program_; }

 private:
  // Calls visit(first_row, last_row, low, high) for byte ranges covering `ap`'s footprint.
  template <typename Visit>
  void for_each_footprint(const AccessPattern& ap, Visit&& visit) const;

  const Program& program_;
  const CoreProfile& profile_;
  const Layout& layout_;
  // Bytes per partition actually modelled: the highest byte any buffer reaches, so a small
  // kernel does not pay for the whole 24 MiB SBUF.
  int64_t sbuf_row_bytes_ = 0;
  int64_t psum_row_bytes_ = 0;
  std::unique_ptr<uint8_t[]> sbuf_, psum_;
  std::vector<uint8_t*> hbm_;                    // per buffer: where its bytes are
  std::vector<std::vector<uint8_t>> hbm_owned_;  // storage of buffers not bound
  std::vector<std::unique_ptr<WrittenMap>> written_;
  std::vector<int32_t> poison_at_finish_;
};

}  // namespace openneuron::sim
