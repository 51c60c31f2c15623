#include "runtime/copy.h"

#include <cstdlib>
#include <cstring>
#include <memory>

#include "runtime/event.h"
#include "runtime/pinned_host_memory.h"

namespace openneuron::runtime {

namespace {
// Copies this small take about as long as handing them to the stream's worker.
constexpr size_t kSmallCopyBytes = 16384;
}  // namespace

void copy_host_to_device(Stream& stream, void* device_dst, const void* host_src, size_t bytes,
                         bool non_blocking) {
  if (bytes == 0) return;
  const TraceInfo to_device{ActivityKind::kCopyHostToDevice, bytes};
  auto& pinned = PinnedHostMemory::instance();
  if (non_blocking && pinned.is_pinned(host_src)) {
    stream.enqueue(
        "copy_host_to_device", [=] { std::memcpy(device_dst, host_src, bytes); }, to_device);
    pinned.record_use(host_src, stream);
    return;
  }
  std::shared_ptr<char[]> staging(new char[bytes]);
  std::memcpy(staging.get(), host_src, bytes);
  stream.enqueue(
      "copy_host_to_device", [=] { std::memcpy(device_dst, staging.get(), bytes); }, to_device);
}

void copy_device_to_host(Stream& stream, void* host_dst, const void* device_src, size_t bytes,
                         bool non_blocking) {
  auto& pinned = PinnedHostMemory::instance();
  const bool asynchronous = non_blocking && pinned.is_pinned(host_dst);
  const TraceInfo to_host{ActivityKind::kCopyDeviceToHost, bytes};
  if (bytes > kSmallCopyBytes) {
    stream.enqueue(
        "copy_device_to_host", [=] { std::memcpy(host_dst, device_src, bytes); }, to_host);
  } else if (bytes > 0) {  // e.g. reading a loss: done at once when the stream is idle
    stream.enqueue_small(
        "copy_device_to_host", [=] { std::memcpy(host_dst, device_src, bytes); }, to_host);
  }
  if (asynchronous) {
    pinned.record_use(host_dst, stream);
  } else {
    stream.synchronize();
  }
}

void copy_device_to_device(Stream& dst_stream, void* dst, Stream& src_stream, const void* src,
                           size_t bytes) {
  if (bytes == 0) return;
  if (&dst_stream != &src_stream) {
    Event source_ready;
    source_ready.record(src_stream);
    source_ready.block(dst_stream);
  }
  dst_stream.enqueue(
      "copy_device_to_device", [=] { std::memmove(dst, src, bytes); },
      TraceInfo{ActivityKind::kCopyDeviceToDevice, bytes});
  if (&dst_stream != &src_stream) {
    Event copy_done;
    copy_done.record(dst_stream);
    copy_done.block(src_stream);
  }
}

}  // namespace openneuron::runtime
