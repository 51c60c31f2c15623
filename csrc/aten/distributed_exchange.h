// The fingerprint of every collective, exchanged with the collective's first message: each rank
// contributes a block of fixed size (the fingerprint, then up to kCarriedBytes of payload) to one
// all-gather of the transport, so ranks whose collectives differ still exchange equal sizes (a
// mismatched size makes Gloo abort the process) and each sees every rank's fingerprint. Small
// collectives travel whole in that block: the fingerprint costs them no extra message.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <torch/csrc/distributed/c10d/Backend.hpp>

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

class FingerprintExchange {
 public:
  // Payload bytes a block carries besides the fingerprint.
  static constexpr int64_t kCarriedBytes = 16 << 10;

  FingerprintExchange(c10::intrusive_ptr<c10d::Backend> transport, int rank, int size);

  // All-gathers this rank's fingerprint and `bytes` (at most kCarriedBytes) of `payload`; throws
  // std::runtime_error naming both sides if any rank's fingerprint differs (every rank sees the
  // same blocks, so all of them throw). Transport failures and timeouts throw too.
  void run(const Fingerprint& mine, const void* payload, int64_t bytes);

  // The payload rank `rank` carried in the last run().
  const uint8_t* carried(int rank) const;

 private:
  c10::intrusive_ptr<c10d::Backend> transport_;
  const int rank_;
  const int size_;
  int64_t sequence_ = 0;
  at::Tensor block_;     // this rank's block
  at::Tensor gathered_;  // every rank's block, in rank order
};

}  // namespace openneuron::bridge
