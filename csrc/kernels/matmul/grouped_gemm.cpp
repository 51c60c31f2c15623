// Groups are cut into blocks of at most kBlock rows, columns or inner indices, and the blocks
// are shared out among the kernel threads by work. Each block is one single-threaded product:
// a mixture of experts' groups are too small to split well one at a time, and the block
// sizes bound the distinct shapes (so the compiled products are reused while the router's
// group sizes change from step to step).
#include "kernels/matmul/grouped_gemm.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "kernels/core/dense_float.h"
#include "kernels/core/scalar.h"
#include "kernels/matmul/group_views.h"
#include "kernels/matmul/matmul.h"
#include "kernels/pointwise/cast.h"
#include "kernels/runtime/parallel_views.h"

namespace openneuron::kernels {

namespace {

constexpr int64_t kBlock = 256;

// One block: [begin, end) of group `group`'s range along the grouped dimension, or (the
// inner-dimension form) of the rows of out[group].
struct Block {
  int64_t group;
  int64_t begin;
  int64_t end;
  int64_t work;  // multiply-adds
};

// Group g's range [start, end) along a grouped dimension of `extent`, with each end clamped
// to [previous end, extent]. Returns where the last group ended.
template <typename Visit>
int64_t for_each_group(const TensorView& offsets, int64_t extent, Visit&& visit) {
  int64_t start = 0;
  for (int64_t g = 0; g < offsets.sizes[0]; ++g) {
    const int64_t end = std::clamp<int64_t>(group_end(offsets, g), start, extent);
    visit(g, start, end);
    start = end;
  }
  return start;
}

void append_blocks(std::vector<Block>& blocks, int64_t group, int64_t begin, int64_t end,
                   int64_t work_per_index) {
  for (int64_t first = begin; first < end; first += kBlock) {
    const int64_t last = std::min(end, first + kBlock);
    blocks.push_back({group, first, last, (last - first) * work_per_index});
  }
}

// Runs run(block) for every block, the blocks split into one contiguous run per kernel thread
// with about equal work.
template <typename Run>
void run_blocks(const std::vector<Block>& blocks, Run&& run) {
  int64_t total = 0;
  for (const Block& block : blocks) total += block.work;
  const int64_t threads =
      std::min<int64_t>(kernel_thread_count(), static_cast<int64_t>(blocks.size()));
  if (threads <= 1 || total == 0) {  // nothing to share (an empty inner dimension: zeros)
    for (const Block& block : blocks) run(block);
    return;
  }
  // Block i goes to the thread whose share of the total work holds the block's first unit.
  std::vector<int> owner(blocks.size());
  int64_t before = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    owner[i] = static_cast<int>(std::min<int64_t>(threads - 1, before * threads / total));
    before += blocks[i].work;
  }
  parallel_for(0, threads, 1, [&](int64_t first, int64_t last) {
    for (size_t i = 0; i < blocks.size(); ++i) {
      if (owner[i] >= first && owner[i] < last) run(blocks[i]);
    }
  });
}

// out[g] rows [row_begin, row_end) = a[row range, s:e] @ b[s:e, :], summed block by block of
// the inner range in fp32 and rounded once into out. A range of one block (an expert's tokens,
// usually) is one product straight into out: gemm rounds its fp32 sum once, as the copy would.
void inner_grouped_block(const TensorView& out_g, const TensorView& a, const TensorView& b,
                         int64_t inner_begin, int64_t inner_end) {
  if (inner_end - inner_begin <= kBlock) {
    gemm(out_g, slice_view(a, 1, inner_begin, inner_end), slice_view(b, 0, inner_begin, inner_end),
         nullptr, 1, 0);
    return;
  }
  const int64_t rows = out_g.sizes[0];
  const int64_t cols = out_g.sizes[1];
  thread_local std::vector<float> sum, part;
  sum.resize(static_cast<size_t>(rows * cols));
  part.resize(static_cast<size_t>(rows * cols));
  const TensorView sum_view = dense_view_like(sum.data(), DType::Float32, out_g);
  const TensorView part_view = dense_view_like(part.data(), DType::Float32, out_g);
  for (int64_t first = inner_begin; first < inner_end; first += kBlock) {
    const int64_t last = std::min(inner_end, first + kBlock);
    const bool first_block = first == inner_begin;  // the first block's product starts the sum
    gemm(first_block ? sum_view : part_view, slice_view(a, 1, first, last),
         slice_view(b, 0, first, last), nullptr, 1, 0);
    if (!first_block) {
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += part[i];
    }
  }
  copy(out_g, sum_view);
}

}  // namespace

void grouped_gemm(const TensorView& out, const TensorView& a, const TensorView& b,
                  const TensorView* offsets) {
  const Scalar zero = Scalar::from_int(0);
  if (a.ndim == 3 && b.ndim == 3) {
    gemm(out, a, b, nullptr, 1.0, 0.0);
    return;
  }
  if (offsets == nullptr || offsets->dtype != DType::Int32 || offsets->ndim != 1) {
    throw std::invalid_argument("openneuron kernels: grouped_gemm needs int32 offsets");
  }
  std::vector<Block> blocks;
  if (a.ndim == 2 && b.ndim == 3) {
    const int64_t rows = a.sizes[0];
    const int64_t per_row = a.sizes[1] * b.sizes[2];
    const int64_t done = for_each_group(*offsets, rows, [&](int64_t g, int64_t s, int64_t e) {
      append_blocks(blocks, g, s, e, per_row);
    });
    run_blocks(blocks, [&](const Block& k) {
      gemm(slice_view(out, 0, k.begin, k.end), slice_view(a, 0, k.begin, k.end),
           select_first(b, k.group), nullptr, 1, 0);
    });
    if (done < rows) fill(slice_view(out, 0, done, rows), zero);
  } else if (a.ndim == 3 && b.ndim == 2) {
    const int64_t cols = b.sizes[1];
    const int64_t per_col = a.sizes[1] * a.sizes[2];
    const int64_t done = for_each_group(*offsets, cols, [&](int64_t g, int64_t s, int64_t e) {
      append_blocks(blocks, g, s, e, per_col);
    });
    run_blocks(blocks, [&](const Block& k) {
      gemm(slice_view(out, 1, k.begin, k.end), select_first(a, k.group),
           slice_view(b, 1, k.begin, k.end), nullptr, 1, 0);
    });
    if (done < cols) fill(slice_view(out, 1, done, cols), zero);
  } else if (a.ndim == 2 && b.ndim == 2) {
    // Blocks cut the rows of each out[g]; each sums its group's inner range block by block.
    std::vector<std::pair<int64_t, int64_t>> inner;  // per group
    for_each_group(*offsets, a.sizes[1], [&](int64_t g, int64_t s, int64_t e) {
      inner.emplace_back(s, e);
      if (e == s) {
        fill(select_first(out, g), zero);
      } else {
        append_blocks(blocks, g, 0, out.sizes[1], (e - s) * out.sizes[2]);
      }
    });
    run_blocks(blocks, [&](const Block& k) {
      const auto [s, e] = inner[static_cast<size_t>(k.group)];
      inner_grouped_block(slice_view(select_first(out, k.group), 0, k.begin, k.end),
                          slice_view(a, 0, k.begin, k.end), b, s, e);
    });
  } else {
    throw std::invalid_argument("openneuron kernels: grouped_gemm operands must be 2-D or 3-D");
  }
}

}  // namespace openneuron::kernels
