#include "sim/state.h"

#include <algorithm>
#include <cstring>

namespace openneuron::sim {

CoreState::CoreState(const Program& program, const CoreProfile& profile, const Layout& layout)
    : program_(program), profile_(profile), layout_(layout) {
  for (size_t b = 0; b < program.buffers.size(); ++b) {
    const Buffer& buffer = program.buffers[b];
    if (buffer.memory == Memory::kHbm || layout.first_use[b] < 0) continue;
    int64_t& extent = buffer.memory == Memory::kPsum ? psum_row_bytes_ : sbuf_row_bytes_;
    extent = std::max(extent, layout.base[b] + buffer.bytes_per_partition);
  }
  const size_t sbuf_bytes = static_cast<size_t>(profile.partitions * sbuf_row_bytes_);
  const size_t psum_bytes = static_cast<size_t>(profile.partitions * psum_row_bytes_);
  sbuf_.assign(sbuf_bytes, 0xFF);
  sbuf_written_.assign(sbuf_bytes, 0);
  psum_.assign(psum_bytes, 0xFF);
  psum_written_.assign(psum_bytes, 0);
  hbm_.resize(program.buffers.size());
  hbm_written_.resize(program.buffers.size());
  for (size_t b = 0; b < program.buffers.size(); ++b) {
    const Buffer& buffer = program.buffers[b];
    if (buffer.memory != Memory::kHbm) continue;
    const auto bytes = static_cast<size_t>(buffer.bytes_per_partition);
    // An input is written in full before the kernel starts and stays so: it needs no flags,
    // and its bytes arrive with write_hbm (one pass over the memory, not two).
    if (buffer.initialized) continue;
    hbm_[b].assign(bytes, 0xFF);
    hbm_written_[b].assign(bytes, 0);
  }
}

void CoreState::fill_missing_inputs() {
  for (size_t b = 0; b < program_.buffers.size(); ++b) {
    const Buffer& buffer = program_.buffers[b];
    if (buffer.memory == Memory::kHbm && buffer.initialized && hbm_[b].empty()) {
      hbm_[b].assign(static_cast<size_t>(buffer.bytes_per_partition), 0);
    }
  }
}

void CoreState::write_hbm(int32_t buffer, const void* data, size_t bytes) {
  const auto capacity = static_cast<size_t>(program_.buffers[buffer].bytes_per_partition);
  auto& storage = hbm_[buffer];
  const auto* bytes_in = static_cast<const uint8_t*>(data);
  storage.assign(bytes_in, bytes_in + std::min(bytes, capacity));
  storage.resize(capacity, 0);
  if (!hbm_written_[buffer].empty()) std::memset(hbm_written_[buffer].data(), 1, bytes);
}

void CoreState::begin_life(int32_t buffer) {
  const Buffer& info = program_.buffers[buffer];
  if (info.memory == Memory::kHbm) return;
  const bool on_psum = info.memory == Memory::kPsum;
  auto& data = on_psum ? psum_ : sbuf_;
  auto& written = on_psum ? psum_written_ : sbuf_written_;
  const int64_t row_bytes = on_psum ? psum_row_bytes_ : sbuf_row_bytes_;
  const int64_t base = layout_.base[buffer];
  for (int64_t p = 0; p < info.partitions; ++p) {
    const size_t at = static_cast<size_t>(p * row_bytes + base);
    std::memset(data.data() + at, 0xFF, static_cast<size_t>(info.bytes_per_partition));
    std::memset(written.data() + at, 0, static_cast<size_t>(info.bytes_per_partition));
  }
}

uint8_t* CoreState::row(const AccessPattern& ap, int64_t partition, bool flags) {
  const Buffer& info = program_.buffers[ap.buffer];
  if (info.memory == Memory::kHbm) {
    auto& storage = (flags ? hbm_written_ : hbm_)[ap.buffer];
    return storage.empty() ? nullptr : storage.data();
  }
  const bool on_psum = info.memory == Memory::kPsum;
  const int64_t row_bytes = on_psum ? psum_row_bytes_ : sbuf_row_bytes_;
  uint8_t* memory =
      on_psum ? (flags ? psum_written_ : psum_).data() : (flags ? sbuf_written_ : sbuf_).data();
  return memory + (ap.start_partition + partition) * row_bytes + layout_.base[ap.buffer];
}

std::vector<ElementRef> CoreState::elements(const AccessPattern& ap) {
  std::vector<ElementRef> result;
  result.reserve(static_cast<size_t>(ap.elements()));
  const bool on_chip = program_.buffers[ap.buffer].memory != Memory::kHbm;
  const int64_t size = dtype_size(ap.dtype);
  const int first_free = on_chip ? 1 : 0;
  int64_t index[kMaxDims] = {0, 0, 0, 0, 0};
  const int64_t total = ap.elements();
  for (int64_t n = 0; n < total; ++n) {
    int64_t offset = ap.offset;
    for (int d = first_free; d < ap.rank; ++d) offset += index[d] * ap.dims[d].stride;
    const int64_t partition = on_chip ? index[0] : 0;
    uint8_t* flags = row(ap, partition, true);
    result.push_back(
        {row(ap, partition, false) + offset * size, flags ? flags + offset * size : nullptr});
    for (int d = ap.rank - 1; d >= 0; --d) {
      if (++index[d] < ap.dims[d].size) break;
      index[d] = 0;
    }
  }
  return result;
}

}  // namespace openneuron::sim
