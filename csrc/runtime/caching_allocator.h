// Per-device caching allocator: device memory is reserved in segments, reused by stream,
// and bounded by the device's capacity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime/event.h"
#include "runtime/memory_stats.h"
#include "runtime/stream.h"

namespace openneuron::runtime {

class CachingAllocator {
 public:
  // Requests up to this size come from the small pool (512-byte granularity).
  static constexpr size_t kSmallSize = size_t{1} << 20;

  CachingAllocator(int device, uint64_t capacity_bytes);
  ~CachingAllocator();

  // A 64-byte aligned block of at least `bytes` for work on `stream`; nullptr for 0 bytes.
  // A freed block is reused only by work on its own stream, which orders the reuse after
  // every queued use. When capacity would be exceeded the cached blocks are released and
  // the allocation retried; if it still does not fit, throws OutOfMemoryError naming the
  // requested, free and capacity bytes; live blocks and statistics stay consistent.
  void* allocate(size_t bytes, Stream& stream);

  // Returns a block from allocate() to the cache. If the block was used on other streams
  // (record_stream), it is reused only once their work queued so far has completed. Throws
  // for a pointer this allocator did not hand out.
  void free(void* ptr);

  // What release() freed: the size the caller asked for and the id of the block's stream.
  struct Freed {
    size_t requested = 0;
    int64_t stream = 0;
  };
  // As free(), but returns false (and frees nothing) for a pointer this allocator did not
  // hand out, so a caller holding only the pointer can offer it to each device in turn.
  bool release(void* ptr, Freed* freed = nullptr);

  // Declares that `ptr`'s block is also used by work on `stream`.
  void record_stream(void* ptr, Stream& stream);

  // Waits for the streams that used cached blocks, then returns those blocks' memory.
  void empty_cache();

  MemoryStats stats() const;
  void reset_peak_stats();
  void reset_accumulated_stats();

  uint64_t capacity() const { return capacity_; }
  // Capacity minus reserved bytes: what new segments can still take.
  uint64_t free_bytes() const;
  // True when `ptr` lies inside a block this allocator handed out.
  bool owns(const void* ptr) const;

  // One block of device memory as a memory snapshot shows it (each block is its own segment).
  struct BlockInfo {
    uintptr_t address;
    size_t size;       // rounded size
    size_t requested;  // what the caller asked for (0 for a cached block)
    int64_t stream;    // id of the stream it serves
    bool allocated;    // held by a tensor (false: cached, or waiting on other streams)
  };
  // Every block the allocator holds, by address.
  std::vector<BlockInfo> blocks() const;

 private:
  struct Block {
    void* ptr;
    size_t size;  // rounded size, also the segment size
    size_t requested;
    Stream* stream;  // the stream it was allocated for
    std::vector<Stream*> other_streams;
    // The map nodes that held it last, kept so that taking a block from the cache and giving
    // it back allocates nothing (small tensors come and go once per op).
    std::multimap<size_t, Block*>::node_type cached_node;
    std::map<uintptr_t, Block*>::node_type live_node;
  };
  struct PendingFree {
    Block* block;
    std::vector<std::unique_ptr<Event>> events;
  };
  static size_t round_size(size_t bytes);
  static int pool_of(size_t size) { return size <= kSmallSize ? kSmallPool : kLargePool; }
  Block* take_cached(size_t size, Stream& stream);
  void cache_block(Block* block);
  void process_pending_frees();
  void release_cached_blocks();
  void update_stat(StatArray MemoryStats::* stat, int pool, int64_t delta);
  std::string describe_oom(size_t requested, size_t rounded) const;

  const int device_;
  const uint64_t capacity_;
  mutable std::mutex mutex_;
  MemoryStats stats_;
  // Free blocks by stream, then by size.
  std::unordered_map<Stream*, std::multimap<size_t, Block*>> cached_;
  // The last stream looked up there and its entry (entries are never erased, so it stays
  // valid): most programs use one stream, and the lookup is on every allocation and free.
  Stream* last_stream_ = nullptr;
  std::multimap<size_t, Block*>* last_cached_ = nullptr;
  std::multimap<size_t, Block*>& cached_for(Stream* stream);
  std::map<uintptr_t, Block*> live_;  // by address, so owns() can find interior pointers
  std::vector<PendingFree> pending_;
};

}  // namespace openneuron::runtime
