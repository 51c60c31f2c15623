#include "sim/layout.h"

#include <algorithm>
#include <map>
#include <string>

#include "sim/errors.h"

namespace openneuron::sim {

namespace {

// Live intervals [begin, end) of one memory, keyed by begin.
class RingAllocator {
 public:
  RingAllocator(int64_t capacity, int64_t unit, bool next_fit)
      : capacity_(capacity), unit_(unit), next_fit_(next_fit) {}

  // Returns the offset of `bytes` free bytes, searching from the cursor and wrapping; -1 if none.
  int64_t allocate(int64_t bytes, int32_t buffer) {
    bytes = (bytes + unit_ - 1) / unit_ * unit_;
    if (bytes > capacity_) return -1;
    for (int64_t start : {cursor_, int64_t{0}}) {
      int64_t candidate = start;
      auto next = live_.lower_bound(candidate);
      if (next != live_.begin()) {
        auto previous = std::prev(next);
        candidate = std::max(candidate, previous->second.first);
      }
      while (true) {
        if (candidate + bytes > capacity_) break;
        if (next == live_.end() || candidate + bytes <= next->first) {
          live_[candidate] = {candidate + bytes, buffer};
          cursor_ = next_fit_ ? candidate + bytes : 0;
          used_ += bytes;
          return candidate;
        }
        candidate = next->second.first;
        ++next;
      }
    }
    return -1;
  }

  void release(int64_t offset) {
    auto it = live_.find(offset);
    if (it == live_.end()) return;
    used_ -= it->second.first - it->first;
    live_.erase(it);
  }

  int64_t used() const { return used_; }
  std::vector<int32_t> live_buffers() const {
    std::vector<int32_t> result;
    for (const auto& [begin, entry] : live_) result.push_back(entry.second);
    return result;
  }

 private:
  int64_t capacity_;
  int64_t unit_;
  bool next_fit_;
  int64_t cursor_ = 0;
  int64_t used_ = 0;
  std::map<int64_t, std::pair<int64_t, int32_t>> live_;
};

std::string describe_live(const Program& program, const std::vector<int32_t>& live) {
  std::string text;
  size_t shown = 0;
  for (int32_t index : live) {
    if (shown++ == 8) {
      text += ", ...";
      break;
    }
    const Buffer& buffer = program.buffers[index];
    if (!text.empty()) text += ", ";
    text += "'" + buffer.name + "' (line " + std::to_string(buffer.line) + ", " +
            std::to_string(buffer.bytes_per_partition) + " B)";
  }
  return text;
}

}  // namespace

Layout plan_layout(const Program& program, const CoreProfile& profile, bool next_fit) {
  const size_t buffer_count = program.buffers.size();
  const size_t count = program.instructions.size();
  Layout layout;
  layout.base.assign(buffer_count, 0);
  layout.first_use.assign(buffer_count, -1);
  layout.last_use.assign(buffer_count, -1);
  layout.born_at.assign(count, {});
  auto touch = [&](const AccessPattern& ap, int32_t index) {
    if (!ap.valid() || static_cast<size_t>(ap.buffer) >= buffer_count) return;
    if (layout.first_use[ap.buffer] < 0) layout.first_use[ap.buffer] = index;
    layout.last_use[ap.buffer] = index;
  };
  for (size_t i = 0; i < count; ++i) {
    const Instruction& instruction = program.instructions[i];
    const auto index = static_cast<int32_t>(i);
    touch(instruction.dst, index);
    touch(instruction.dst2, index);
    for (const auto& src : instruction.src) touch(src, index);
    touch(instruction.indirect.index, index);
  }
  std::vector<std::vector<int32_t>> dies_after(count);
  for (size_t b = 0; b < buffer_count; ++b) {
    if (layout.first_use[b] < 0) continue;
    layout.born_at[layout.first_use[b]].push_back(static_cast<int32_t>(b));
    dies_after[layout.last_use[b]].push_back(static_cast<int32_t>(b));
  }

  RingAllocator sbuf(profile.sbuf_bytes_per_partition, 64, next_fit);
  RingAllocator psum(profile.psum_bytes_per_partition, profile.psum_bank_bytes, next_fit);
  for (size_t i = 0; i < count; ++i) {
    for (int32_t b : layout.born_at[i]) {
      const Buffer& buffer = program.buffers[b];
      if (buffer.memory == Memory::kHbm) continue;
      const bool on_psum = buffer.memory == Memory::kPsum;
      RingAllocator& allocator = on_psum ? psum : sbuf;
      const int64_t offset = allocator.allocate(buffer.bytes_per_partition, b);
      if (offset < 0) {
        const int64_t capacity =
            on_psum ? profile.psum_bytes_per_partition : profile.sbuf_bytes_per_partition;
        throw SimError(
            on_psum ? rule::kPsumCapacity : rule::kSbufCapacity,
            std::string(on_psum ? "PSUM" : "SBUF") + " is full: buffer '" + buffer.name +
                "' (line " + std::to_string(buffer.line) + ") needs " +
                std::to_string(buffer.bytes_per_partition) + " B per partition, " +
                std::to_string(allocator.used()) + " of " + std::to_string(capacity) +
                " B are held by live buffers: " + describe_live(program, allocator.live_buffers()) +
                (on_psum ? " (PSUM is allocated in 2 KiB banks, 8 per partition)" : ""),
            program.source, program.instructions[i].line);
      }
      layout.base[b] = offset;
    }
    layout.sbuf_peak_bytes = std::max(layout.sbuf_peak_bytes, sbuf.used());
    layout.psum_peak_bytes = std::max(layout.psum_peak_bytes, psum.used());
    for (int32_t b : dies_after[i]) {
      const Buffer& buffer = program.buffers[b];
      if (buffer.memory == Memory::kSbuf) sbuf.release(layout.base[b]);
      if (buffer.memory == Memory::kPsum) psum.release(layout.base[b]);
    }
  }
  return layout;
}

}  // namespace openneuron::sim
