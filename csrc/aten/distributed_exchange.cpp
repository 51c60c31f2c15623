#include "aten/distributed_exchange.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

namespace openneuron::bridge {

namespace {

// Transport tags of their own (user point-to-point tags are small numbers): the first message,
// and the rest of a payload larger than the first chunk.
constexpr int kFirstTag = 0x7ffffff0;
constexpr int kRestTag = 0x7ffffff1;
// Header words: sequence number, the four fingerprint fields, payload bytes for the receiver.
constexpr int64_t kHeaderWords = 6;
constexpr int64_t kHeaderBytes = kHeaderWords * static_cast<int64_t>(sizeof(int64_t));
// Payload bytes carried by the first message: up to this much costs a copy in and out; anything
// larger goes in place as a second message, received once the header matched.
constexpr int64_t kFirstChunkBytes = 64 << 10;

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

PeerExchange::PeerExchange(c10::intrusive_ptr<c10d::Backend> transport, int rank, int size,
                           std::chrono::milliseconds timeout)
    : transport_(std::move(transport)),
      rank_(rank),
      size_(size),
      timeout_(timeout),
      inboxes_(size),
      pending_(size),
      next_posted_(size, 0),
      scratch_(size) {}

void* PeerExchange::scratch(int slot, int64_t bytes) {
  auto& buffer = scratch_.at(slot);
  if (!buffer.defined() || buffer.numel() < bytes) buffer = at::empty({bytes}, at::kByte);
  return buffer.data_ptr();
}

at::Tensor& PeerExchange::inbox(int peer, int64_t sequence) {
  auto& slot = inboxes_[peer][sequence % 2];
  if (!slot.defined()) slot = at::empty({kHeaderBytes + kFirstChunkBytes}, at::kByte);
  return slot;
}

void PeerExchange::ensure_posted(int64_t sequence) {
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    while (next_posted_[peer] <= sequence + 1) {
      std::vector<at::Tensor> message{inbox(peer, next_posted_[peer])};
      pending_[peer].push_back(transport_->recv(message, peer, kFirstTag));
      ++next_posted_[peer];
    }
  }
}

void PeerExchange::run(const Fingerprint& mine, const std::vector<PeerBytes>& sends,
                       const std::vector<PeerBytes>& receives) {
  if (!broken_.empty()) throw std::runtime_error(broken_);
  auto bytes_of = [](const std::vector<PeerBytes>& list, int peer) {
    return list.empty() ? PeerBytes{} : list.at(peer);
  };
  const int64_t sequence = sequence_++;
  std::vector<c10::intrusive_ptr<c10d::Work>> sent;
  std::vector<at::Tensor> outboxes;  // alive until their sends are done
  std::string mismatch;
  try {
    ensure_posted(sequence);
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      const PeerBytes payload = bytes_of(sends, peer);
      const int64_t first = std::min(payload.bytes, kFirstChunkBytes);
      auto outbox = at::empty({kHeaderBytes + first}, at::kByte);
      const int64_t words[kHeaderWords] = {sequence,   mine.kind,      mine.dtype,
                                           mine.count, mine.reduce_op, payload.bytes};
      std::memcpy(outbox.data_ptr(), words, sizeof(words));
      if (first > 0) std::memcpy(outbox.data_ptr<uint8_t>() + kHeaderBytes, payload.data, first);
      std::vector<at::Tensor> message{outbox};
      sent.push_back(transport_->send(message, peer, kFirstTag));
      if (payload.bytes > first) {
        std::vector<at::Tensor> rest{at::from_blob(static_cast<uint8_t*>(payload.data) + first,
                                                   {payload.bytes - first}, at::kByte)};
        sent.push_back(transport_->send(rest, peer, kRestTag));
      }
      outboxes.push_back(std::move(outbox));
    }

    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      pending_[peer].front()->wait(timeout_);
      pending_[peer].pop_front();
      const at::Tensor& received = inbox(peer, sequence);
      int64_t words[kHeaderWords];
      std::memcpy(words, received.data_ptr(), sizeof(words));
      const Fingerprint theirs{words[1], words[2], words[3], words[4]};
      const int64_t their_bytes = words[5];
      if (words[0] != sequence) {
        throw std::runtime_error("rank " + std::to_string(peer) + " is at collective " +
                                 std::to_string(words[0]) + " of this group, this rank (" +
                                 std::to_string(rank_) + ") at " + std::to_string(sequence));
      }
      const PeerBytes expected = bytes_of(receives, peer);
      const int64_t first = std::min(their_bytes, kFirstChunkBytes);
      const bool agrees = theirs == mine && their_bytes == expected.bytes;
      if (agrees && first > 0) {
        std::memcpy(expected.data, received.data_ptr<uint8_t>() + kHeaderBytes, first);
      }
      if (their_bytes > first) {
        // The rest goes where it belongs, or, on a mismatch, into scratch (it must be taken in).
        uint8_t* target = agrees ? static_cast<uint8_t*>(expected.data) + first
                                 : static_cast<uint8_t*>(scratch(peer, their_bytes - first));
        std::vector<at::Tensor> rest{at::from_blob(target, {their_bytes - first}, at::kByte)};
        transport_->recv(rest, peer, kRestTag)->wait(timeout_);
      }
      if (!agrees && mismatch.empty()) {
        mismatch = "the ranks' collectives do not match: rank " + std::to_string(rank_) +
                   " (this rank) runs " + mine.describe() + ", rank " + std::to_string(peer) +
                   " runs " + theirs.describe();
        if (theirs == mine) {
          mismatch += ", sending " + std::to_string(their_bytes) + " bytes where " +
                      std::to_string(expected.bytes) + " were expected";
        }
      }
    }
    for (auto& work : sent) work->wait(timeout_);
  } catch (const std::exception& error) {
    broken_ = std::string("the group is unusable after an earlier failure: ") + error.what();
    throw;
  }
  if (!mismatch.empty()) throw std::runtime_error(mismatch);
}

}  // namespace openneuron::bridge
