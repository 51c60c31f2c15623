// The fingerprint of every collective, exchanged with the collective's first message: one
// all-to-all of the transport in which each rank sends every peer a header (the fingerprint)
// followed by up to kCarriedBytes of payload for that peer, and receives into a slot of
// kCarriedBytes plus the header per peer. The transport accepts a message shorter than the
// receive it lands in (a longer one aborts the process), so ranks whose collectives differ
// still exchange safely, each sends only what it carries, and every rank sees every peer's
// fingerprint. Collectives whose data fits travel whole in it: the check costs them no message.
#pragma once

#include <chrono>
#include <cstdint>
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

// Bytes that one exchange carries to one peer.
struct Carry {
  const void* data = nullptr;
  int64_t bytes = 0;
};

class FingerprintExchange {
 public:
  // Payload bytes a rank may carry to each peer. The receive slots are allocated at this size
  // once (untouched pages cost no memory); what travels is only what each rank carries.
  static constexpr int64_t kCarriedBytes = 32 << 20;

  FingerprintExchange(c10::intrusive_ptr<c10d::Backend> transport, int rank, int size);

  // Sends every peer this rank's fingerprint and `to_peer[peer]` (at most kCarriedBytes; an
  // empty vector carries nothing) and receives theirs; throws std::runtime_error naming both
  // sides if any rank's fingerprint or position in the group's order differs (every rank sees
  // the same fingerprints, so all of them throw). Transport failures and timeouts throw too.
  void run(const Fingerprint& mine, const std::vector<Carry>& to_peer = {});

  // run() carrying the same bytes to every peer.
  void run_same(const Fingerprint& mine, const void* data, int64_t bytes);

  // The payload peer `rank` carried to this rank in the last run().
  const uint8_t* carried(int rank) const;

 private:
  c10::intrusive_ptr<c10d::Backend> transport_;
  const int rank_;
  const int size_;
  int64_t sequence_ = 0;
  at::Tensor outgoing_;  // headers and payloads for the peers, in rank order
  at::Tensor incoming_;  // one slot per peer, in rank order (none for this rank)
};

}  // namespace openneuron::bridge
