#include "runtime/caching_allocator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/errors.h"

namespace openneuron::runtime {

namespace {

constexpr size_t kAlignment = 64;

std::string format_bytes(uint64_t bytes) {
  char text[64];
  if (bytes >= (uint64_t{1} << 30)) {
    std::snprintf(text, sizeof(text), "%.2f GiB", bytes / double(uint64_t{1} << 30));
  } else if (bytes >= (uint64_t{1} << 20)) {
    std::snprintf(text, sizeof(text), "%.2f MiB", bytes / double(uint64_t{1} << 20));
  } else {
    std::snprintf(text, sizeof(text), "%llu bytes", static_cast<unsigned long long>(bytes));
  }
  return text;
}

}  // namespace

CachingAllocator::CachingAllocator(int device, uint64_t capacity_bytes)
    : device_(device), capacity_(capacity_bytes) {}

CachingAllocator::~CachingAllocator() {
  // Runs only at teardown of a runtime whose streams are idle; memory goes back to the host.
  // Blocks still awaiting other streams are released too, once those streams get there.
  for (auto& pending : pending_) {
    for (auto& event : pending.events) event->synchronize();
    std::free(pending.block->ptr);
    delete pending.block;
  }
  for (auto& [stream, blocks] : cached_) {
    for (auto& [size, block] : blocks) {
      std::free(block->ptr);
      delete block;
    }
  }
}

size_t CachingAllocator::round_size(size_t bytes) {
  if (bytes <= kSmallSize) return (bytes + 511) / 512 * 512;
  // Large sizes round up to one of 8 steps per power of two: at most 12.5% slack, and
  // tensors of similar size share cached blocks.
  size_t power = size_t{1} << (63 - __builtin_clzll(bytes));
  size_t step = power / 8;
  return (bytes + step - 1) / step * step;
}

void CachingAllocator::update_stat(StatArray MemoryStats::* stat, int pool, int64_t delta) {
  for (int index : {static_cast<int>(kAllPools), pool}) {
    Stat& counter = (stats_.*stat)[index];
    if (delta >= 0)
      counter.increase(delta);
    else
      counter.decrease(-delta);
  }
}

std::multimap<size_t, CachingAllocator::Block*>& CachingAllocator::cached_for(Stream* stream) {
  if (stream != last_stream_) {
    last_cached_ = &cached_[stream];
    last_stream_ = stream;
  }
  return *last_cached_;
}

CachingAllocator::Block* CachingAllocator::take_cached(size_t size, Stream& stream) {
  auto& blocks = cached_for(&stream);
  auto candidate = blocks.lower_bound(size);
  // Accept a somewhat larger block, but do not let a small request pin a huge one, and never
  // cross pools: stats are kept per pool, by the block's size.
  if (candidate == blocks.end() || candidate->first > size + size / 4 ||
      pool_of(candidate->first) != pool_of(size)) {
    return nullptr;
  }
  Block* block = candidate->second;
  block->cached_node = blocks.extract(candidate);
  return block;
}

void CachingAllocator::cache_block(Block* block) {
  block->other_streams.clear();
  auto& blocks = cached_for(block->stream);
  if (block->cached_node.empty()) {
    blocks.emplace(block->size, block);
  } else {
    blocks.insert(std::move(block->cached_node));
  }
  int pool = pool_of(block->size);
  update_stat(&MemoryStats::active, pool, -1);
  update_stat(&MemoryStats::active_bytes, pool, -static_cast<int64_t>(block->size));
}

void CachingAllocator::process_pending_frees() {
  for (size_t i = 0; i < pending_.size();) {
    bool done = true;
    for (auto& event : pending_[i].events) done = done && event->query();
    if (!done) {
      ++i;
      continue;
    }
    cache_block(pending_[i].block);
    pending_[i] = std::move(pending_.back());
    pending_.pop_back();
  }
}

void CachingAllocator::release_cached_blocks() {
  for (auto& pending : pending_) {
    for (auto& event : pending.events) event->synchronize();
  }
  process_pending_frees();
  ++stats_.num_sync_all_streams;
  for (auto& [stream, blocks] : cached_) {
    // Queued work on this stream may still touch memory that was freed by the host.
    if (!blocks.empty()) stream->wait_idle();
    for (auto& [size, block] : blocks) {
      int pool = pool_of(size);
      update_stat(&MemoryStats::segment, pool, -1);
      update_stat(&MemoryStats::reserved_bytes, pool, -static_cast<int64_t>(size));
      ++stats_.num_device_free;
      std::free(block->ptr);
      delete block;
    }
    blocks.clear();
  }
}

std::string CachingAllocator::describe_oom(size_t requested, size_t rounded) const {
  const uint64_t reserved = stats_.reserved_bytes[kAllPools].current;
  const uint64_t allocated = stats_.allocated_bytes[kAllPools].current;
  return "neuron:" + std::to_string(device_) + " out of memory: tried to allocate " +
         format_bytes(requested) + " (" + std::to_string(requested) + " bytes, a block of " +
         std::to_string(rounded) + " bytes); " + format_bytes(capacity_ - reserved) + " (" +
         std::to_string(capacity_ - reserved) + " bytes) free of " + format_bytes(capacity_) +
         " (" + std::to_string(capacity_) + " bytes) capacity; " + format_bytes(allocated) +
         " allocated by tensors, " + format_bytes(reserved) +
         " reserved by the allocator. Free tensors, call torch.neuron.empty_cache(), or raise "
         "OPENNEURON_HBM_BYTES.";
}

void* CachingAllocator::allocate(size_t bytes, Stream& stream) {
  if (bytes == 0) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  process_pending_frees();
  const size_t size = round_size(bytes);
  const int pool = pool_of(size);
  Block* block = take_cached(size, stream);
  if (!block) {
    auto reserved = static_cast<uint64_t>(stats_.reserved_bytes[kAllPools].current);
    if (reserved + size > capacity_) {
      ++stats_.num_alloc_retries;
      release_cached_blocks();
      reserved = static_cast<uint64_t>(stats_.reserved_bytes[kAllPools].current);
    }
    void* memory = reserved + size <= capacity_ ? std::aligned_alloc(kAlignment, size) : nullptr;
    if (!memory) {
      ++stats_.num_ooms;
      throw OutOfMemoryError(describe_oom(bytes, size), bytes, capacity_ - reserved, capacity_);
    }
    block = new Block{memory, size, 0, &stream, {}, {}, {}};
    ++stats_.num_device_alloc;
    update_stat(&MemoryStats::segment, pool, 1);
    update_stat(&MemoryStats::reserved_bytes, pool, static_cast<int64_t>(size));
  }
  block->requested = bytes;
  if (block->live_node.empty()) {
    live_.emplace(reinterpret_cast<uintptr_t>(block->ptr), block);
  } else {
    live_.insert(std::move(block->live_node));
  }
  update_stat(&MemoryStats::allocation, pool, 1);
  update_stat(&MemoryStats::active, pool, 1);
  update_stat(&MemoryStats::allocated_bytes, pool, static_cast<int64_t>(block->size));
  update_stat(&MemoryStats::active_bytes, pool, static_cast<int64_t>(block->size));
  update_stat(&MemoryStats::requested_bytes, pool, static_cast<int64_t>(bytes));
  return block->ptr;
}

void CachingAllocator::free(void* ptr) {
  if (!ptr) return;
  if (!release(ptr)) {
    throw Error("neuron:" + std::to_string(device_) +
                " allocator asked to free a pointer it does not own");
  }
}

bool CachingAllocator::release(void* ptr, Freed* freed) {
  if (!ptr) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = live_.find(reinterpret_cast<uintptr_t>(ptr));
  if (found == live_.end()) return false;
  Block* block = found->second;
  block->live_node = live_.extract(found);
  if (freed) *freed = Freed{block->requested, block->stream->id()};
  const int pool = pool_of(block->size);
  update_stat(&MemoryStats::allocation, pool, -1);
  update_stat(&MemoryStats::allocated_bytes, pool, -static_cast<int64_t>(block->size));
  update_stat(&MemoryStats::requested_bytes, pool, -static_cast<int64_t>(block->requested));
  if (block->other_streams.empty()) {
    cache_block(block);
    return true;
  }
  PendingFree pending{block, {}};
  for (Stream* other : block->other_streams) {
    pending.events.push_back(std::make_unique<Event>());
    pending.events.back()->record(*other);
  }
  pending_.push_back(std::move(pending));
  return true;
}

void CachingAllocator::record_stream(void* ptr, Stream& stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = live_.upper_bound(reinterpret_cast<uintptr_t>(ptr));
  if (found == live_.begin()) return;
  Block* block = std::prev(found)->second;
  // Past the end of the nearest block below: not one of ours.
  if (reinterpret_cast<uintptr_t>(ptr) >= reinterpret_cast<uintptr_t>(block->ptr) + block->size)
    return;
  if (&stream == block->stream) return;
  for (Stream* other : block->other_streams) {
    if (other == &stream) return;
  }
  block->other_streams.push_back(&stream);
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached_blocks();
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (StatArray* array :
       {&stats_.allocation, &stats_.segment, &stats_.active, &stats_.allocated_bytes,
        &stats_.reserved_bytes, &stats_.active_bytes, &stats_.requested_bytes}) {
    for (Stat& stat : *array) stat.reset_peak();
  }
}

void CachingAllocator::reset_accumulated_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (StatArray* array :
       {&stats_.allocation, &stats_.segment, &stats_.active, &stats_.allocated_bytes,
        &stats_.reserved_bytes, &stats_.active_bytes, &stats_.requested_bytes}) {
    for (Stat& stat : *array) stat.reset_accumulated();
  }
  stats_.num_alloc_retries = stats_.num_ooms = 0;
  stats_.num_device_alloc = stats_.num_device_free = stats_.num_sync_all_streams = 0;
}

uint64_t CachingAllocator::free_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return capacity_ - static_cast<uint64_t>(stats_.reserved_bytes[kAllPools].current);
}

bool CachingAllocator::owns(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = live_.upper_bound(reinterpret_cast<uintptr_t>(ptr));
  if (found == live_.begin()) return false;
  const Block* block = std::prev(found)->second;
  return reinterpret_cast<uintptr_t>(ptr) < reinterpret_cast<uintptr_t>(block->ptr) + block->size;
}

std::vector<CachingAllocator::BlockInfo> CachingAllocator::blocks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<BlockInfo> result;
  auto add = [&](const Block* block, bool allocated) {
    result.push_back(BlockInfo{reinterpret_cast<uintptr_t>(block->ptr), block->size,
                               allocated ? block->requested : 0, block->stream->id(), allocated});
  };
  for (const auto& [address, block] : live_) add(block, true);
  for (const auto& [stream, by_size] : cached_) {
    for (const auto& [size, block] : by_size) add(block, false);
  }
  for (const auto& pending : pending_) add(pending.block, false);
  std::sort(result.begin(), result.end(),
            [](const BlockInfo& a, const BlockInfo& b) { return a.address < b.address; });
  return result;
}

}  // namespace openneuron::runtime
