#include "aten/distributed/distributed_exchange.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

namespace openneuron::bridge {

namespace {

// Header words: sequence number, the four fingerprint fields, then the payload's bytes.
constexpr int64_t kHeaderWords = 6;
constexpr int64_t kHeaderBytes = kHeaderWords * static_cast<int64_t>(sizeof(int64_t));
constexpr int64_t kSlotBytes = kHeaderBytes + FingerprintExchange::kCarriedBytes;

const char* reduce_op_name(int64_t op) {
  switch (static_cast<c10d::ReduceOp::RedOpType>(op)) {
    case c10d::ReduceOp::SUM:
      return "SUM";
    case c10d::ReduceOp::AVG:
      return "AVG";
    case c10d::ReduceOp::PRODUCT:
      return "PRODUCT";
    case c10d::ReduceOp::MIN:
      return "MIN";
    case c10d::ReduceOp::MAX:
      return "MAX";
    case c10d::ReduceOp::BAND:
      return "BAND";
    case c10d::ReduceOp::BOR:
      return "BOR";
    case c10d::ReduceOp::BXOR:
      return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM:
      return "PREMUL_SUM";
    default:
      return "an unknown reduction";
  }
}

}  // namespace

std::string Fingerprint::describe() const {
  std::string text = c10d::opTypeToString(static_cast<c10d::OpType>(kind));
  if (dtype >= 0) text += std::string(" of ") + c10::toString(static_cast<c10::ScalarType>(dtype));
  if (count >= 0) text += " with " + std::to_string(count) + " elements";
  if (reduce_op >= 0) text += std::string(" (") + reduce_op_name(reduce_op) + ")";
  return text;
}

FingerprintExchange::FingerprintExchange(c10::intrusive_ptr<c10d::Backend> transport, int rank,
                                         int size)
    : transport_(std::move(transport)), rank_(rank), size_(size) {}

const uint8_t* FingerprintExchange::carried(int rank) const {
  const int slot = rank < rank_ ? rank : rank - 1;  // no slot for this rank
  return incoming_.data_ptr<uint8_t>() + slot * kSlotBytes + kHeaderBytes;
}

void FingerprintExchange::run_same(const Fingerprint& mine, const void* data, int64_t bytes) {
  run(mine, std::vector<Carry>(size_, Carry{data, bytes}));
}

void FingerprintExchange::run(const Fingerprint& mine, const std::vector<Carry>& to_peer) {
  TORCH_CHECK(to_peer.empty() || static_cast<int>(to_peer.size()) == size_,
              "neuron backend: a fingerprint exchange carries one payload per rank");
  if (size_ == 1) return;
  if (!incoming_.defined()) incoming_ = at::empty({(size_ - 1) * kSlotBytes}, at::kByte);
  const int64_t sequence = sequence_++;
  std::vector<int64_t> sent(size_, 0), received(size_, kSlotBytes);
  sent[rank_] = received[rank_] = 0;
  int64_t total = 0;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    const int64_t bytes = to_peer.empty() ? 0 : to_peer[peer].bytes;
    TORCH_CHECK(bytes >= 0 && bytes <= kCarriedBytes, "neuron backend: a fingerprint exchange ",
                "carries ", kCarriedBytes, " bytes per peer at most, got ", bytes);
    sent[peer] = kHeaderBytes + bytes;
    total += sent[peer];
  }
  if (!outgoing_.defined() || outgoing_.numel() < total) {
    outgoing_ = at::empty({std::max<int64_t>(total, 4096)}, at::kByte);
  }
  uint8_t* out = outgoing_.data_ptr<uint8_t>();
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    const int64_t bytes = sent[peer] - kHeaderBytes;
    const int64_t words[kHeaderWords] = {sequence,   mine.kind,      mine.dtype,
                                         mine.count, mine.reduce_op, bytes};
    std::memcpy(out, words, sizeof(words));
    if (bytes > 0) std::memcpy(out + kHeaderBytes, to_peer[peer].data, bytes);
    out += sent[peer];
  }
  // The transport may move the split vectors away: keep the sizes apart.
  auto outgoing = outgoing_.narrow(0, 0, total);
  auto send_splits = sent;
  auto receive_splits = received;
  c10d::AllToAllOptions options;
  transport_->alltoall_base(incoming_, outgoing, receive_splits, send_splits, options)->wait();
  for (int rank = 0; rank < size_; ++rank) {
    if (rank == rank_) continue;
    int64_t theirs_words[kHeaderWords];
    std::memcpy(theirs_words, carried(rank) - kHeaderBytes, sizeof(theirs_words));
    const Fingerprint theirs{theirs_words[1], theirs_words[2], theirs_words[3], theirs_words[4]};
    if (theirs_words[0] != sequence) {
      throw std::runtime_error("rank " + std::to_string(rank) + " is at collective " +
                               std::to_string(theirs_words[0]) + " of this group, this rank (" +
                               std::to_string(rank_) + ") at " + std::to_string(sequence));
    }
    if (!(theirs == mine)) {
      // The queue names the collective ("neuron backend: <op> failed: ...").
      throw std::runtime_error("the ranks' collectives do not match: rank " +
                               std::to_string(rank_) + " (this rank) runs " + mine.describe() +
                               ", rank " + std::to_string(rank) + " runs " + theirs.describe());
    }
  }
}

}  // namespace openneuron::bridge
