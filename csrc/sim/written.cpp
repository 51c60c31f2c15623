#include "sim/written.h"

#include <algorithm>

namespace openneuron::sim {

namespace {

constexpr size_t kMaxRects = 8;

// Bits [low, high) of one 64-bit word set.
uint64_t word_mask(int64_t low, int64_t high) {
  const uint64_t upper = high >= 64 ? ~uint64_t{0} : ((uint64_t{1} << high) - 1);
  return upper & ~((uint64_t{1} << low) - 1);
}

}  // namespace

WrittenMap::WrittenMap(int64_t rows, int64_t row_bytes)
    : rows_(rows), row_bytes_(row_bytes), row_words_((row_bytes + 63) / 64) {}

void WrittenMap::clear() {
  rects_.clear();
  bitmap_ = false;
  bits_.clear();
}

void WrittenMap::mark(int64_t first_row, int64_t last_row, int64_t low, int64_t high) {
  if (first_row >= last_row || low >= high) return;
  if (bitmap_) {
    for (int64_t r = first_row; r < last_row; ++r) set_bits(r, low, high);
    return;
  }
  for (Rect& rect : rects_) {
    const bool same_rows = rect.first_row == first_row && rect.last_row == last_row;
    const bool same_bytes = rect.low == low && rect.high == high;
    if (rect.first_row <= first_row && last_row <= rect.last_row && rect.low <= low &&
        high <= rect.high) {
      return;  // already inside
    }
    if (same_rows && low <= rect.high && rect.low <= high) {
      rect.low = std::min(rect.low, low);
      rect.high = std::max(rect.high, high);
      return;
    }
    if (same_bytes && first_row <= rect.last_row && rect.first_row <= last_row) {
      rect.first_row = std::min(rect.first_row, first_row);
      rect.last_row = std::max(rect.last_row, last_row);
      return;
    }
  }
  if (rects_.size() < kMaxRects) {
    rects_.push_back({first_row, last_row, low, high});
    return;
  }
  to_bits();
  for (int64_t r = first_row; r < last_row; ++r) set_bits(r, low, high);
}

void WrittenMap::unmark(int64_t row, int64_t low, int64_t high) {
  if (low >= high) return;
  if (!bitmap_) to_bits();
  uint64_t* words = bits_.data() + row * row_words_;
  for (int64_t byte = low; byte < high; ++byte) words[byte / 64] &= ~(uint64_t{1} << (byte % 64));
}

bool WrittenMap::covered(int64_t first_row, int64_t last_row, int64_t low, int64_t high) {
  if (first_row >= last_row || low >= high) return true;
  if (!bitmap_) {
    for (const Rect& rect : rects_) {
      if (rect.first_row <= first_row && last_row <= rect.last_row && rect.low <= low &&
          high <= rect.high) {
        return true;
      }
    }
    if (rects_.size() <= 1) return false;
    to_bits();  // several rectangles may cover it together
  }
  for (int64_t r = first_row; r < last_row; ++r) {
    if (!all_bits(r, low, high)) return false;
  }
  return true;
}

std::vector<std::pair<int64_t, int64_t>> WrittenMap::unwritten(int64_t row) const {
  std::vector<std::pair<int64_t, int64_t>> gaps;
  const auto add = [&](int64_t low, int64_t high) {
    if (low >= high) return;
    if (!gaps.empty() && gaps.back().second == low) {
      gaps.back().second = high;
    } else {
      gaps.emplace_back(low, high);
    }
  };
  if (!bitmap_) {
    std::vector<std::pair<int64_t, int64_t>> spans;
    for (const Rect& rect : rects_) {
      if (rect.first_row <= row && row < rect.last_row) spans.emplace_back(rect.low, rect.high);
    }
    std::sort(spans.begin(), spans.end());
    int64_t reached = 0;
    for (const auto& [low, high] : spans) {
      add(reached, low);
      reached = std::max(reached, high);
    }
    add(reached, row_bytes_);
    return gaps;
  }
  const uint64_t* words = bits_.data() + row * row_words_;
  for (int64_t w = 0; w < row_words_; ++w) {
    if (words[w] == ~uint64_t{0}) continue;
    for (int64_t bit = 0; bit < 64 && w * 64 + bit < row_bytes_; ++bit) {
      if (!((words[w] >> bit) & 1u)) add(w * 64 + bit, w * 64 + bit + 1);
    }
  }
  return gaps;
}

void WrittenMap::to_bits() {
  bitmap_ = true;
  bits_.assign(static_cast<size_t>(rows_ * row_words_), 0);
  for (const Rect& rect : rects_) {
    for (int64_t r = rect.first_row; r < rect.last_row; ++r) set_bits(r, rect.low, rect.high);
  }
  rects_.clear();
}

void WrittenMap::set_bits(int64_t row, int64_t low, int64_t high) {
  uint64_t* words = bits_.data() + row * row_words_;
  int64_t first = low / 64, last = (high - 1) / 64;
  if (first == last) {
    words[first] |= word_mask(low % 64, high - first * 64);
    return;
  }
  words[first] |= word_mask(low % 64, 64);
  for (int64_t w = first + 1; w < last; ++w) words[w] = ~uint64_t{0};
  words[last] |= word_mask(0, high - last * 64);
}

bool WrittenMap::all_bits(int64_t row, int64_t low, int64_t high) const {
  const uint64_t* words = bits_.data() + row * row_words_;
  int64_t first = low / 64, last = (high - 1) / 64;
  if (first == last) {
    const uint64_t mask = word_mask(low % 64, high - first * 64);
    return (words[first] & mask) == mask;
  }
  const uint64_t head = word_mask(low % 64, 64);
  if ((words[first] & head) != head) return false;
  for (int64_t w = first + 1; w < last; ++w) {
    if (words[w] != ~uint64_t{0}) return false;
  }
  const uint64_t tail = word_mask(0, high - last * 64);
  return (words[last] & tail) == tail;
}

}  // namespace openneuron::sim
