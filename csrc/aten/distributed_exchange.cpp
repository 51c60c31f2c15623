#include "aten/distributed_exchange.h"

#include <ATen/ATen.h>

#include <cstring>
#include <stdexcept>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

namespace openneuron::bridge {

namespace {

// Header words: sequence number, then the four fingerprint fields.
constexpr int64_t kHeaderWords = 5;
constexpr int64_t kHeaderBytes = kHeaderWords * static_cast<int64_t>(sizeof(int64_t));
constexpr int64_t kBlockBytes = kHeaderBytes + FingerprintExchange::kCarriedBytes;

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
  return gathered_.data_ptr<uint8_t>() + rank * kBlockBytes + kHeaderBytes;
}

void FingerprintExchange::run(const Fingerprint& mine, const void* payload, int64_t bytes) {
  TORCH_CHECK(bytes >= 0 && bytes <= kCarriedBytes, "neuron backend: a fingerprint block carries ",
              kCarriedBytes, " bytes at most, got ", bytes);
  if (!block_.defined()) {
    block_ = at::empty({kBlockBytes}, at::kByte);
    gathered_ = at::empty({size_ * kBlockBytes}, at::kByte);
  }
  const int64_t sequence = sequence_++;
  const int64_t words[kHeaderWords] = {sequence, mine.kind, mine.dtype, mine.count, mine.reduce_op};
  std::memcpy(block_.data_ptr(), words, sizeof(words));
  if (bytes > 0) std::memcpy(block_.data_ptr<uint8_t>() + kHeaderBytes, payload, bytes);
  transport_->_allgather_base(gathered_, block_)->wait();
  const uint8_t* base = gathered_.data_ptr<uint8_t>();
  for (int rank = 0; rank < size_; ++rank) {
    int64_t theirs_words[kHeaderWords];
    std::memcpy(theirs_words, base + rank * kBlockBytes, sizeof(theirs_words));
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
