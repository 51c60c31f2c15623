// Which bytes of one buffer a kernel has written, so reads of never-written memory are caught.
//
// Kept per buffer as rectangles (a partition range × a byte range inside each partition): a tile
// written whole, or in column or row blocks, stays a handful of rectangles and every check is
// O(1). Patterns that do not fit (strided writes, many pieces, HBM rows of a 2-D tensor) switch
// the buffer to a bitmap with one bit per byte, rows of 64-bit words.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace openneuron::sim {

class WrittenMap {
 public:
  // `rows` partitions (HBM: 1) of `row_bytes` bytes each, none written.
  WrittenMap(int64_t rows, int64_t row_bytes);

  // Marks bytes [low, high) of rows [first_row, last_row) written.
  void mark(int64_t first_row, int64_t last_row, int64_t low, int64_t high);
  // Whether every byte [low, high) of rows [first_row, last_row) was written.
  bool covered(int64_t first_row, int64_t last_row, int64_t low, int64_t high);
  // Marks bytes [low, high) of row `row` never written again.
  void unmark(int64_t row, int64_t low, int64_t high);
  // Forgets everything (a new life of the buffer).
  void clear();
  // The byte ranges [low, high) of row `row` never written, in order.
  std::vector<std::pair<int64_t, int64_t>> unwritten(int64_t row) const;

 private:
  struct Rect {
    int64_t first_row, last_row, low, high;
  };
  void to_bits();
  void set_bits(int64_t row, int64_t low, int64_t high);
  bool all_bits(int64_t row, int64_t low, int64_t high) const;

  int64_t rows_, row_bytes_, row_words_;
  std::vector<Rect> rects_;
  bool bitmap_ = false;
  std::vector<uint64_t> bits_;
};

}  // namespace openneuron::sim
