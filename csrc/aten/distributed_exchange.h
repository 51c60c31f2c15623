// The first message of every collective, with the collective's fingerprint folded in: each rank
// sends every peer its fingerprint (kind, dtype, element count, reduce op) and the first bytes of
// its payload into a receive the peer posted at the end of the previous collective, so a
// fingerprint costs no extra round trip, and a mismatch is found before any message could
// overflow the buffer posted for it (which makes Gloo abort the process).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <vector>

namespace openneuron::bridge {

// What every rank's collective must agree on; -1 marks a field that is not compared.
struct Fingerprint {
  int64_t kind = -1;  // c10d::OpType
  int64_t dtype = -1;
  int64_t count = -1;
  int64_t reduce_op = -1;  // c10d::ReduceOp::RedOpType
  bool operator==(const Fingerprint& other) const {
    return kind == other.kind && dtype == other.dtype && count == other.count &&
           reduce_op == other.reduce_op;
  }
  // "ALLREDUCE of Float with 4 elements (SUM)".
  std::string describe() const;
};

// Bytes one rank sends to, or expects from, one peer.
struct PeerBytes {
  void* data = nullptr;
  int64_t bytes = 0;
};

class PeerExchange {
 public:
  PeerExchange(c10::intrusive_ptr<c10d::Backend> transport, int rank, int size,
               std::chrono::milliseconds timeout);

  void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

  // Sends `mine` and `sends[p]` to every peer p and receives each peer's fingerprint and its
  // bytes into `receives[p]` (entries for this rank are ignored; empty lists mean no payload).
  // If any peer's fingerprint or byte count differs, takes in what that peer sent anyway (so
  // the group stays usable) and throws std::runtime_error naming both sides. A transport
  // failure or a peer silent for the timeout throws and leaves the exchange unusable (a posted
  // receive may still be matched later). Not thread-safe: one caller at a time.
  void run(const Fingerprint& mine, const std::vector<PeerBytes>& sends,
           const std::vector<PeerBytes>& receives);

  // A reusable host buffer of at least `bytes` bytes for received payloads (slot 0..size-1).
  void* scratch(int slot, int64_t bytes);

 private:
  // The buffer the first message of collective `sequence` from `peer` arrives in (two per peer).
  at::Tensor& inbox(int peer, int64_t sequence);
  // Posts the first-message receives of collectives `sequence` and `sequence + 1` from every
  // peer that are not posted yet: a receive is posted a collective ahead, while the transport
  // is idle, never just as data arrives (the transport's event thread then holds the lock).
  void ensure_posted(int64_t sequence);

  c10::intrusive_ptr<c10d::Backend> transport_;
  const int rank_;
  const int size_;
  std::chrono::milliseconds timeout_;
  int64_t sequence_ = 0;
  std::string broken_;                              // why the exchange is unusable
  std::vector<std::array<at::Tensor, 2>> inboxes_;  // per peer: header + first chunk
  std::vector<std::deque<c10::intrusive_ptr<c10d::Work>>> pending_;  // per peer, in order
  std::vector<int64_t> next_posted_;  // per peer: the next collective to post a receive for
  std::vector<at::Tensor> scratch_;
};

}  // namespace openneuron::bridge
