#include "runtime/device.h"

#include <algorithm>
#include <string>

#include "runtime/errors.h"

namespace openneuron::runtime {

Device::Device(int index, const RuntimeConfig& config)
    : index_(index),
      launch_blocking_(config.launch_blocking),
      allocator_(index, config.device_memory_bytes) {
  streams_[0] = std::make_unique<Stream>(index_, 0, launch_blocking_);
}

Stream& Device::stream(int64_t id) {
  if (id < 0 || id > kPoolSize) {
    throw Error("neuron:" + std::to_string(index_) + " has no stream with id " +
                std::to_string(id) + "; ids run from 0 to " + std::to_string(kPoolSize));
  }
  if (id == 0) return default_stream();
  std::lock_guard<std::mutex> lock(streams_mutex_);
  auto& slot = streams_[id];
  if (!slot) slot = std::make_unique<Stream>(index_, id, launch_blocking_);
  return *slot;
}

Stream& Device::next_pool_stream() {
  // Unsigned, so the index stays in range when the counter wraps after 2^31 calls.
  int index = static_cast<int>(static_cast<unsigned>(next_pool_index_.fetch_add(1)) % kPoolSize);
  return stream(1 + index);
}

std::array<Stream*, Device::kPoolSize + 1> Device::existing_streams() {
  std::array<Stream*, kPoolSize + 1> existing{};
  std::lock_guard<std::mutex> lock(streams_mutex_);
  for (size_t i = 0; i < streams_.size(); ++i) existing[i] = streams_[i].get();
  return existing;
}

void Device::halt_streams(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (Stream* stream : existing_streams()) {
    if (stream == nullptr) continue;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    stream->halt(std::max(left, std::chrono::milliseconds(0)));
  }
}

void Device::wait_idle() {
  for (Stream* stream : existing_streams()) {
    if (stream) stream->wait_idle();
  }
}

void Device::synchronize() {
  const auto existing = existing_streams();
  for (Stream* stream : existing) {
    if (stream) stream->finish();  // every stream first: one stream's error must not skip a wait
  }
  for (Stream* stream : existing) {
    if (stream) stream->synchronize();  // idle now: raises a captured error, if any
  }
}

}  // namespace openneuron::runtime
