// Byte copies between host and device memory, ordered on a stream.
#pragma once

#include <cstddef>

#include "runtime/stream.h"

namespace openneuron::runtime {

// Copies host -> device after the work queued on `stream` and returns at once. With
// non_blocking and a pinned source, the source is read when the copy runs (the caller
// keeps it unchanged until then, as with CUDA); otherwise it is staged first, so the
// caller may reuse it immediately.
void copy_host_to_device(Stream& stream, void* device_dst, const void* host_src, size_t bytes,
                         bool non_blocking);

// Copies device -> host after the work queued on `stream`. Blocks until the bytes have
// arrived (raising any queued error) unless non_blocking and the destination is pinned;
// then the caller synchronises before reading.
void copy_device_to_host(Stream& stream, void* host_dst, const void* device_src, size_t bytes,
                         bool non_blocking);

// Copies between device buffers, possibly on two devices. The copy runs on dst_stream
// after the work queued on src_stream, and later work on src_stream waits for it.
void copy_device_to_device(Stream& dst_stream, void* dst, Stream& src_stream, const void* src,
                           size_t bytes);

}  // namespace openneuron::runtime
