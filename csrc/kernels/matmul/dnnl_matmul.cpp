#include "kernels/matmul/dnnl_matmul.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <dnnl.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/core/dense_float.h"
#include "kernels/matmul/matrix_view.h"
#include "kernels/pointwise/cast.h"
#include "kernels/runtime/dnnl_runtime.h"
#include "kernels/runtime/gemm_library.h"
#include "kernels/runtime/library_calls.h"
#include "kernels/runtime/parallel_views.h"

namespace openneuron::kernels {
namespace {

using dnnl::memory;

memory::data_type dnnl_type(DType dtype) {
  switch (dtype) {
    case DType::BFloat16:
      return memory::data_type::bf16;
    case DType::Float32:
      return memory::data_type::f32;
    default:
      return memory::data_type::undef;
  }
}

// A 2-D or 3-D view as oneDNN sees it; a stride-0 batch becomes a broadcast batch of 1.
memory::desc describe(const TensorView& view) {
  memory::dims dims(view.sizes, view.sizes + view.ndim);
  memory::dims strides(view.strides, view.strides + view.ndim);
  if (view.ndim == 3 && view.strides[0] == 0) dims[0] = 1;
  // A size-1 dim's stride is arbitrary in PyTorch; oneDNN wants it to span the inner dims.
  for (int d = view.ndim - 1; d >= 0; --d) {
    if (dims[d] != 1) continue;
    memory::dim span = 1;
    for (int inner = d + 1; inner < view.ndim; ++inner)
      span = std::max(span, dims[inner] * strides[inner]);
    strides[d] = span;
  }
  return memory::desc(dims, dnnl_type(view.dtype), strides);
}

// A problem's identity for the primitive cache: dtypes, sizes, strides, alpha, beta, the
// calling thread and the piece index: pieces and callers run concurrently (a grouped product's
// blocks run on every kernel thread), and executions of one oneDNN primitive serialise.
using ProblemKey = std::vector<int64_t>;

void append_key(ProblemKey& key, const TensorView& view) {
  key.push_back(static_cast<int64_t>(view.dtype) << 8 | view.ndim);
  for (int d = 0; d < view.ndim; ++d) {
    key.push_back(view.sizes[d]);
    key.push_back(view.strides[d]);
  }
}

int64_t bits_of(double value) {
  int64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

struct ProblemKeyHash {
  size_t operator()(const ProblemKey& key) const {
    uint64_t hash = 1469598103934665603ULL;  // FNV-1a over the words
    for (int64_t word : key) hash = (hash ^ static_cast<uint64_t>(word)) * 1099511628211ULL;
    return static_cast<size_t>(hash);
  }
};

struct Primitive {
  dnnl::matmul matmul;
  bool optimised;
  memory::desc scratchpad;
};

// A small number per thread that calls into oneDNN, so that threads never share a primitive.
int64_t calling_thread_slot() {
  static std::atomic<int64_t> next{0};
  thread_local const int64_t slot = next.fetch_add(1, std::memory_order_relaxed);
  return slot;
}

class PrimitiveCache {
 public:
  // The primitive for this problem, created on first use (check `optimised` before use). Shared:
  // a caller keeps it alive while it runs, even if the cache is cleared meanwhile.
  std::shared_ptr<const Primitive> find_or_create(const TensorView& out, const TensorView& a,
                                                  const TensorView& b, double alpha,
                                                  bool accumulate, double beta, int64_t piece) {
    ProblemKey key;
    key.reserve(24);
    append_key(key, out);
    append_key(key, a);
    append_key(key, b);
    key.push_back(bits_of(alpha));
    key.push_back(bits_of(accumulate ? beta : 0.0));
    key.push_back(piece);
    key.push_back(calling_thread_slot());
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = cache_.find(key);
    if (found != cache_.end()) return found->second;
    if (cache_.size() > 4096) cache_.clear();  // shapes churn (e.g. dynamic batch): start over
    Primitive primitive{dnnl::matmul(), false};
    try {
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      if (alpha != 1.0) attr.set_output_scales(0, {static_cast<float>(alpha)});
      if (accumulate) {
        dnnl::post_ops ops;
        ops.append_sum(static_cast<float>(beta));
        attr.set_post_ops(ops);
      }
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(describe(a), describe(b), describe(out)),
                                      attr, dnnl_engine());
      const std::string impl = pd.impl_info_str();
      // Reference kernels are slow, and gemm-based ones fail inside a torch process (libtorch
      // exports a same-named initialiser of its own oneDNN's gemm kernels): use brgemm only.
      const bool usable = impl.find("ref") == std::string::npos && impl.rfind("gemm", 0) != 0;
      primitive = Primitive{dnnl::matmul(pd), usable, pd.scratchpad_desc()};
    } catch (const dnnl::error&) {
      primitive.optimised = false;
    }
    auto shared = std::make_shared<const Primitive>(std::move(primitive));
    cache_.emplace(key, shared);
    return shared;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<ProblemKey, std::shared_ptr<const Primitive>, ProblemKeyHash> cache_;
};

PrimitiveCache& cache() {
  static auto* instance = new PrimitiveCache();
  return *instance;
}

// A dense view shaped like `view` in the calling thread's buffer for `role` (valid until the
// thread next asks for that role).
TensorView thread_dense_like(DnnlBuffer role, const TensorView& view) {
  const size_t bytes = static_cast<size_t>(view.numel()) * element_size(view.dtype);
  return dense_view_like(dnnl_thread_buffer(role, bytes), view.dtype, view);
}

// A row-major copy of `view` in a buffer the calling thread reuses (valid until its next call).
TensorView row_major_copy(const TensorView& view) {
  const TensorView dense = thread_dense_like(DnnlBuffer::kMatmulLeftOperand, view);
  copy(dense, view);
  return dense;
}

struct Problem {
  TensorView out, a, b;
};

// The product restricted to [begin, begin + length) of out's dim `dim`: batches (3-D), rows
// or columns.
Problem piece(const TensorView& out, const TensorView& a, const TensorView& b, int dim,
              int64_t begin, int64_t length) {
  const int64_t end = begin + length;
  if (dim == out.ndim - 1) {
    return {slice_view(out, dim, begin, end), a, slice_view(b, dim, begin, end)};
  }
  Problem part{slice_view(out, dim, begin, end), slice_view(a, dim, begin, end), b};
  const bool batch_split = out.ndim == 3 && dim == 0;
  if (batch_split && b.strides[0] != 0) part.b = slice_view(b, 0, begin, end);
  return part;
}

// A product with fewer rows than this per thread is split by columns, in multiples of
// kColumnBlock (the width oneDNN's kernels block by).
constexpr int64_t kMinSplitRows = 64;
constexpr int64_t kColumnBlock = 64;

// How a product is cut into pieces for the kernel threads: along out's dim `dim`, in chunks of
// `chunk`, one primitive per piece (none when some piece has no fast oneDNN kernel).
struct Split {
  int dim = 0;
  int64_t extent = 0;
  int64_t chunk = 0;
  // Column pieces (two or more) of more than one row are not dense, and oneDNN's fast kernels want
  // a dense destination: each is computed into its thread's buffer, then copied into place.
  bool staged = false;
  std::vector<std::shared_ptr<const Primitive>> primitives;

  // Piece `index` of the product.
  Problem piece_at(const TensorView& out, const TensorView& a, const TensorView& b,
                   int64_t index) const {
    const int64_t begin = index * chunk;
    return piece(out, a, b, dim, begin, std::min(chunk, extent - begin));
  }
};

// Products from 2M multiply-adds are split. With the threshold at 32M, a 512x256x128 fp32
// product (an attention projection) ran on one core at 0.55x torch's speed; split, 1.0x.
constexpr int64_t kMinSplitWork = int64_t{1} << 21;
// So are products that read at least 1 MiB of b: with few rows they are bound by that read
// (a decode step's 1024x1024 bf16 projection: 1M multiply-adds, 2 MiB of weight).
constexpr int64_t kMinSplitBytes = int64_t{1} << 20;

Split plan_split(const TensorView& out, const TensorView& a, const TensorView& b, double alpha,
                 bool accumulate, double beta, int dim, int64_t work, int threads) {
  Split split;
  split.dim = dim;
  split.extent = out.sizes[dim];
  const int64_t b_bytes = b.sizes[b.ndim - 2] * b.sizes[b.ndim - 1] * element_size(b.dtype);
  const bool small = work < kMinSplitWork && b_bytes < kMinSplitBytes;
  const int64_t parts = small ? 1 : std::min<int64_t>(threads, split.extent);
  split.chunk = (split.extent + parts - 1) / parts;
  const bool columns = dim == out.ndim - 1;
  if (columns) split.chunk = (split.chunk + kColumnBlock - 1) / kColumnBlock * kColumnBlock;
  const int64_t pieces = (split.extent + split.chunk - 1) / split.chunk;
  split.staged = columns && pieces > 1 && out.sizes[out.ndim - 2] > 1;
  for (int64_t index = 0; index < pieces; ++index) {
    const Problem part = split.piece_at(out, a, b, index);
    const TensorView dst =
        split.staged ? dense_view_like(nullptr, part.out.dtype, part.out) : part.out;
    std::shared_ptr<const Primitive> primitive =
        cache().find_or_create(dst, part.a, part.b, alpha, accumulate, beta, index);
    if (!primitive->optimised) return Split{};
    split.primitives.push_back(std::move(primitive));
  }
  return split;
}

}  // namespace

bool dnnl_gemm(const TensorView& out, const TensorView& a_in, const TensorView& b,
               const TensorView* bias, double alpha, double beta) {
  // bf16 operands may write bf16 or (a widened product, unrounded) fp32.
  const bool supported_dtype = a_in.dtype == DType::BFloat16 || a_in.dtype == DType::Float32;
  const bool supported_out = out.dtype == a_in.dtype || out.dtype == DType::Float32;
  if (!supported_dtype || !supported_out || b.dtype != a_in.dtype) return false;
  if (a_in.dtype == DType::Float32 ? !gemm_allows_onednn_fp32() : !gemm_allows_onednn_bf16()) {
    return false;
  }
  for (int d = 0; d < out.ndim; ++d) {
    if (out.sizes[d] == 0 || a_in.sizes[d] == 0 || b.sizes[d] == 0 || out.strides[d] == 0)
      return false;
  }
  const OneOpenMPThread one_openmp_thread;
  // oneDNN's brgemm kernels want a row-major left operand; with a transposed one (a weight
  // gradient's grad_output^T) it picks gemm-based kernels that are slower or fail in-process.
  // Copying it costs M*K moves against M*N*K multiply-adds.
  const TensorView a = a_in.strides[a_in.ndim - 1] == 1 ? a_in : row_major_copy(a_in);
  const bool accumulate = bias != nullptr && beta != 0.0;
  const int rows_dim = out.ndim - 2;
  const int64_t k = a.sizes[out.ndim - 1];
  const int64_t batches = out.ndim == 3 ? out.sizes[0] : 1;
  const int64_t work = batches * out.sizes[rows_dim] * out.sizes[out.ndim - 1] * k;
  // Split batches when there are enough of them, else rows, else (few rows: a decode step's
  // tokens) columns, so that each thread reads its own part of b instead of all of it. Column
  // pieces need a b whose column slices oneDNN's fast kernels take (a transposed weight's do,
  // a row-major b's do not): otherwise the rows are split.
  // Inside a parallel region (a grouped product's blocks) pieces would run one by one: none.
  const int threads = available_kernel_threads();
  const int cols_dim = out.ndim - 1;
  Split split;
  const bool few_rows = out.sizes[rows_dim] < kMinSplitRows * threads &&
                        out.sizes[cols_dim] >= kColumnBlock * threads;
  if (batches >= threads) {
    split = plan_split(out, a, b, alpha, accumulate, beta, 0, work, threads);
  } else if (few_rows) {
    split = plan_split(out, a, b, alpha, accumulate, beta, cols_dim, work, threads);
  }
  if (split.primitives.empty())
    split = plan_split(out, a, b, alpha, accumulate, beta, rows_dim, work, threads);
  if (split.primitives.empty()) return false;
  if (accumulate && bias->data != out.data) copy(out, *bias);  // the sum post-op adds beta * out

  std::atomic<bool> failed{false};
  const auto& primitives = split.primitives;
  parallel_for(0, static_cast<int64_t>(primitives.size()), 1, [&](int64_t first, int64_t last) {
    const OneOpenMPThread one_openmp_thread;
    dnnl::engine& engine = dnnl_engine();
    dnnl::stream& stream = dnnl_thread_stream();
    for (int64_t index = first; index < last; ++index) {
      const Problem part = split.piece_at(out, a, b, index);
      const TensorView dst =
          split.staged ? thread_dense_like(DnnlBuffer::kMatmulColumnPiece, part.out) : part.out;
      if (split.staged && accumulate) copy(dst, part.out);  // the sum post-op reads out
      memory a_memory(describe(part.a), engine, part.a.data);
      memory b_memory(describe(part.b), engine, part.b.data);
      memory out_memory(describe(dst), engine, dst.data);
      const Primitive& primitive = *primitives[index];
      // Each thread brings its own scratchpad: a library-managed one is shared by concurrent
      // executions and serialises them.
      memory scratchpad(
          primitive.scratchpad, engine,
          dnnl_thread_buffer(DnnlBuffer::kMatmulScratchpad, primitive.scratchpad.get_size()));
      try {
        primitive.matmul.execute(stream, {{DNNL_ARG_SRC, a_memory},
                                          {DNNL_ARG_WEIGHTS, b_memory},
                                          {DNNL_ARG_DST, out_memory},
                                          {DNNL_ARG_SCRATCHPAD, scratchpad}});
        stream.wait();
        if (split.staged) copy(part.out, dst);
      } catch (const dnnl::error&) {
        failed = true;
      }
    }
  });
  // On failure the BLAS path recomputes out from scratch (it reads bias, never out).
  if (!failed) count_library_call(LibraryCall::kOneDnnMatmul);
  return !failed;
}

bool dense_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc) {
  const auto matrix = [](const float* data, int64_t rows, int64_t cols, int64_t ld,
                         bool transposed) {
    return matrix_view(const_cast<float*>(data), DType::Float32, rows, cols, ld, transposed);
  };
  const TensorView a_view = matrix(a, m, k, lda, trans_a);
  const TensorView b_view = matrix(b, k, n, ldb, trans_b);
  const TensorView c_view = matrix(c, m, n, ldc, false);
  return dnnl_gemm(c_view, a_view, b_view, beta != 0.0f ? &c_view : nullptr, alpha, beta);
}

}  // namespace openneuron::kernels
