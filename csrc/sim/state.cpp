#include "sim/state.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace openneuron::sim {

CoreState::CoreState(const Program& program, const CoreProfile& profile, const Layout& layout)
    : program_(program), profile_(profile), layout_(layout) {
  const size_t count = program.buffers.size();
  for (size_t b = 0; b < count; ++b) {
    const Buffer& buffer = program.buffers[b];
    if (buffer.memory == Memory::kHbm || layout.first_use[b] < 0) continue;
    int64_t& extent = buffer.memory == Memory::kPsum ? psum_row_bytes_ : sbuf_row_bytes_;
    extent = std::max(extent, layout.base[b] + buffer.bytes_per_partition);
  }
  // Left uninitialised: every read is checked against the written-state first.
  sbuf_.reset(new uint8_t[static_cast<size_t>(profile.partitions * sbuf_row_bytes_) + 1]);
  psum_.reset(new uint8_t[static_cast<size_t>(profile.partitions * psum_row_bytes_) + 1]);
  hbm_.assign(count, nullptr);
  hbm_owned_.resize(count);
  written_.resize(count);
  for (size_t b = 0; b < count; ++b) {
    const Buffer& buffer = program.buffers[b];
    if (buffer.memory == Memory::kHbm) {
      if (!buffer.initialized)
        written_[b] = std::make_unique<WrittenMap>(1, buffer.bytes_per_partition);
    } else {
      written_[b] = std::make_unique<WrittenMap>(buffer.partitions, buffer.bytes_per_partition);
    }
  }
}

void CoreState::bind_hbm(int32_t buffer, uint8_t* data) { hbm_[buffer] = data; }

void CoreState::write_hbm(int32_t buffer, const void* data, size_t bytes) {
  const auto capacity = static_cast<size_t>(program_.buffers[buffer].bytes_per_partition);
  auto& storage = hbm_owned_[buffer];
  const auto* bytes_in = static_cast<const uint8_t*>(data);
  storage.assign(bytes_in, bytes_in + std::min(bytes, capacity));
  storage.resize(capacity, 0);
  hbm_[buffer] = storage.data();
  if (written_[buffer]) written_[buffer]->mark(0, 1, 0, static_cast<int64_t>(bytes));
}

void CoreState::prepare() {
  for (size_t b = 0; b < program_.buffers.size(); ++b) {
    const Buffer& buffer = program_.buffers[b];
    if (buffer.memory != Memory::kHbm) continue;
    const auto bytes = static_cast<size_t>(buffer.bytes_per_partition);
    const bool owned = !hbm_owned_[b].empty();
    if (hbm_[b] == nullptr) {
      hbm_owned_[b].assign(bytes, buffer.initialized ? 0 : 0xFF);
      hbm_[b] = hbm_owned_[b].data();
    } else if (!buffer.initialized && !owned) {
      poison_at_finish_.push_back(static_cast<int32_t>(b));
    }
  }
}

void CoreState::finish() {
  for (int32_t b : poison_at_finish_) {
    for (const auto& [low, high] : written_[b]->unwritten(0))
      std::memset(hbm_[b] + low, 0xFF, static_cast<size_t>(high - low));
  }
  poison_at_finish_.clear();
}

void CoreState::begin_life(int32_t buffer) {
  if (program_.buffers[buffer].memory == Memory::kHbm) return;
  written_[buffer]->clear();
}

template <typename Visit>
void CoreState::for_each_footprint(const AccessPattern& ap, Visit&& visit) const {
  const bool on_chip = program_.buffers[ap.buffer].memory != Memory::kHbm;
  const int64_t size = dtype_size(ap.dtype);
  const int64_t first_row = on_chip ? ap.start_partition : 0;
  const int64_t last_row = on_chip ? first_row + ap.partitions() : 1;
  // The free dimensions with more than one element, innermost last.
  int64_t sizes[kMaxDims], strides[kMaxDims];
  int count = 0;
  for (int d = on_chip ? 1 : 0; d < ap.rank; ++d) {
    if (ap.dims[d].size == 1) continue;
    sizes[count] = ap.dims[d].size;
    strides[count++] = ap.dims[d].stride;
  }
  // Dense (row-major contiguous) free dimensions: one byte range per partition.
  bool dense = true;
  int64_t expected = 1, total = 1;
  for (int d = count - 1; d >= 0; --d) {
    if (strides[d] != expected) dense = false;
    expected *= sizes[d];
    total *= sizes[d];
  }
  if (dense) {
    visit(first_row, last_row, ap.offset * size, (ap.offset + total) * size);
    return;
  }
  // Otherwise each run of the innermost dimension (a single element when it is strided).
  const bool inner_contiguous = strides[count - 1] == 1;
  const int64_t run = inner_contiguous ? sizes[count - 1] : 1;
  const int outer = inner_contiguous ? count - 1 : count;
  int64_t index[kMaxDims] = {0, 0, 0, 0, 0};
  const int64_t runs = total / run;
  for (int64_t n = 0; n < runs; ++n) {
    int64_t offset = ap.offset;
    for (int d = 0; d < outer; ++d) offset += index[d] * strides[d];
    visit(first_row, last_row, offset * size, (offset + run) * size);
    for (int d = outer - 1; d >= 0; --d) {
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
  }
}

bool CoreState::all_written(const AccessPattern& ap) {
  WrittenMap* map = written_[ap.buffer].get();
  if (map == nullptr) return true;
  bool ok = true;
  for_each_footprint(ap, [&](int64_t r0, int64_t r1, int64_t low, int64_t high) {
    if (ok && !map->covered(r0, r1, low, high)) ok = false;
  });
  return ok;
}

void CoreState::mark_written(const AccessPattern& ap) {
  WrittenMap* map = written_[ap.buffer].get();
  if (map == nullptr) return;
  for_each_footprint(
      ap, [&](int64_t r0, int64_t r1, int64_t low, int64_t high) { map->mark(r0, r1, low, high); });
}

namespace {

// Row and byte offset of element `index` (row-major over `ap`).
std::pair<int64_t, int64_t> element_place(const Program& program, const AccessPattern& ap,
                                          int64_t index) {
  const bool on_chip = program.buffers[ap.buffer].memory != Memory::kHbm;
  int64_t offset = ap.offset, row = 0;
  for (int d = ap.rank - 1; d >= 0; --d) {
    const int64_t i = index % ap.dims[d].size;
    index /= ap.dims[d].size;
    if (on_chip && d == 0) {
      row = ap.start_partition + i;
    } else {
      offset += i * ap.dims[d].stride;
    }
  }
  return {row, offset * dtype_size(ap.dtype)};
}

}  // namespace

std::vector<int64_t> CoreState::unwritten_elements(const AccessPattern& ap) {
  std::vector<int64_t> positions;
  if (all_written(ap)) return positions;
  const int64_t total = ap.elements();
  for (int64_t n = 0; n < total; ++n) {
    if (!element_written(ap, n)) positions.push_back(n);
  }
  return positions;
}

std::pair<int64_t, int64_t> CoreState::element_address(const AccessPattern& ap,
                                                       int64_t index) const {
  return element_place(program_, ap, index);
}

void CoreState::mark_element_unwritten(const AccessPattern& ap, int64_t index) {
  WrittenMap* map = written_[ap.buffer].get();
  if (map == nullptr) return;
  const auto [row, byte] = element_place(program_, ap, index);
  map->unmark(row, byte, byte + dtype_size(ap.dtype));
}

bool CoreState::element_written(const AccessPattern& ap, int64_t index) {
  WrittenMap* map = written_[ap.buffer].get();
  if (map == nullptr) return true;
  const auto [row, byte] = element_place(program_, ap, index);
  return map->covered(row, row + 1, byte, byte + dtype_size(ap.dtype));
}

}  // namespace openneuron::sim
