// The fast executor's streaming paths: copies and elementwise instructions walk their operands
// run by run (a run: elements at a fixed step inside one partition), a chunk at a time, with
// the ALU operation chosen once per chunk so the inner loops vectorise. Each element is
// computed exactly as the reference interpreter computes it (alu.h), so the bytes agree.
// Elementwise loops carry `ivdep`: a result may be written over its own input (the same
// pattern, elementwise-safe); operands overlapping any other way take the general path
// (streams()), so no loop reads an element another iteration wrote.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "sim/alu.h"
#include "sim/interpreter.h"
#include "sim/matmul_kernel.h"
#include "sim/vector_isa.h"
#include "sim/vector_loops.h"

namespace openneuron::sim {

namespace {

constexpr int64_t kChunk = 1024;

// The runs of an access pattern in row-major order. Free dimensions of one element are
// dropped and contiguous ones merged, so a dense tile is one run per partition.
class RunCursor {
 public:
  RunCursor(const CoreState& state, const AccessPattern& ap) : ap_(ap) {
    on_chip_ = state.program().buffers[ap.buffer].memory != Memory::kHbm;
    size_ = dtype_size(ap.dtype);
    partitions_ = on_chip_ ? ap.partitions() : 1;
    for (int d = on_chip_ ? 1 : 0; d < ap.rank; ++d) {
      if (ap.dims[d].size == 1) continue;
      if (count_ > 0 && strides_[count_ - 1] == ap.dims[d].size * ap.dims[d].stride) {
        sizes_[count_ - 1] *= ap.dims[d].size;  // merges into the outer one
        strides_[count_ - 1] = ap.dims[d].stride;
        continue;
      }
      sizes_[count_] = ap.dims[d].size;
      strides_[count_++] = ap.dims[d].stride;
    }
    if (count_ == 0) {
      sizes_[0] = 1;
      strides_[0] = 1;
      count_ = 1;
    }
    run_length_ = sizes_[count_ - 1];
    step_ = strides_[count_ - 1] * size_;
    base_ = state.row_base(ap);
    row_stride_ = state.row_stride(ap);
    start_partition();
  }

  bool done() const { return partition_ >= partitions_; }
  uint8_t* data() const { return data_; }
  int64_t remaining() const { return remaining_; }
  int64_t step() const { return step_; }
  int64_t partition() const { return partition_; }
  bool contiguous() const { return step_ == size_; }

  void advance(int64_t n) {
    data_ += n * step_;
    remaining_ -= n;
    if (remaining_ > 0) return;
    for (int d = count_ - 2; d >= 0; --d) {
      if (++index_[d] < sizes_[d]) {
        begin_run();
        return;
      }
      index_[d] = 0;
    }
    ++partition_;
    if (!done()) start_partition();
  }

 private:
  void start_partition() {
    row_ = base_ + partition_ * row_stride_;
    begin_run();
  }
  void begin_run() {
    int64_t offset = ap_.offset;
    for (int d = 0; d < count_ - 1; ++d) offset += index_[d] * strides_[d];
    data_ = row_ + offset * size_;
    remaining_ = run_length_;
  }

  const AccessPattern& ap_;
  uint8_t* base_ = nullptr;
  int64_t row_stride_ = 0;
  bool on_chip_ = false;
  int64_t size_ = 4;
  int64_t partitions_ = 1, partition_ = 0;
  int count_ = 0;
  int64_t sizes_[kMaxDims] = {}, strides_[kMaxDims] = {}, index_[kMaxDims] = {};
  int64_t run_length_ = 1, step_ = 4, remaining_ = 0;
  uint8_t* row_ = nullptr;
  uint8_t* data_ = nullptr;
};

// `n` elements of a run as fp32: in place when they already are, else converted into `buffer`.
const float* load_chunk(const RunCursor& run, DType dtype, int64_t n, float* buffer) {
  if (dtype == DType::kFloat32 && run.contiguous())
    return reinterpret_cast<const float*>(run.data());
  if (run.contiguous()) {
    load_row(dtype, run.data(), buffer, n);
  } else {
    for (int64_t i = 0; i < n; ++i) buffer[i] = load_element(dtype, run.data() + i * run.step());
  }
  return buffer;
}

// Where to compute `n` results: the destination itself when it holds contiguous fp32.
float* output_chunk(const RunCursor& run, DType dtype, float* buffer) {
  return dtype == DType::kFloat32 && run.contiguous() ? reinterpret_cast<float*>(run.data())
                                                      : buffer;
}

void store_chunk(const RunCursor& run, DType dtype, const float* values, int64_t n) {
  if (values == reinterpret_cast<const float*>(run.data())) return;
  if (run.contiguous()) {
    store_row(dtype, values, run.data(), n);
  } else {
    for (int64_t i = 0; i < n; ++i) store_element(dtype, run.data() + i * run.step(), values[i]);
  }
}

// Calls f with the ALU operation as a compile-time constant for the common ones.
template <typename F>
void with_alu(AluOp op, F&& f) {
  switch (op) {
    case AluOp::kBypass:
      return f(std::integral_constant<AluOp, AluOp::kBypass>{});
    case AluOp::kAdd:
      return f(std::integral_constant<AluOp, AluOp::kAdd>{});
    case AluOp::kSubtract:
      return f(std::integral_constant<AluOp, AluOp::kSubtract>{});
    case AluOp::kMultiply:
      return f(std::integral_constant<AluOp, AluOp::kMultiply>{});
    case AluOp::kDivide:
      return f(std::integral_constant<AluOp, AluOp::kDivide>{});
    case AluOp::kMax:
      return f(std::integral_constant<AluOp, AluOp::kMax>{});
    case AluOp::kMin:
      return f(std::integral_constant<AluOp, AluOp::kMin>{});
    default:
      return f(op);
  }
}

template <typename Op>
AluOp op_value(Op op) {
  if constexpr (std::is_same_v<Op, AluOp>) {
    return op;
  } else {
    return Op::value;
  }
}

bool same_pattern(const AccessPattern& x, const AccessPattern& y) {
  if (x.buffer != y.buffer || x.dtype != y.dtype || x.start_partition != y.start_partition ||
      x.offset != y.offset || x.rank != y.rank)
    return false;
  for (int d = 0; d < x.rank; ++d) {
    if (x.dims[d].size != y.dims[d].size || x.dims[d].stride != y.dims[d].stride) return false;
  }
  return true;
}

// lanes[0..8) = lanes op values[0..8) as apply_alu computes it, one AVX2 operation for the
// common reductions. Max and min use maxps/minps (which return the second operand unless the
// first compares greater / less, as apply_alu's selects do) and leave NaN to the caller: once a
// lane meets a NaN, apply_alu keeps it a quiet NaN, so `nan` collects the lanes that met one.
template <typename Op>
inline void fold_eight(Op op, __m256& lanes, __m256& nan, const float* values) {
  const __m256 v = _mm256_loadu_ps(values);
  const AluOp alu = op_value(op);
  if (alu == AluOp::kAdd) {
    lanes = _mm256_add_ps(lanes, v);
  } else if (alu == AluOp::kMultiply) {
    lanes = _mm256_mul_ps(lanes, v);
  } else if (alu == AluOp::kMax || alu == AluOp::kMin) {
    lanes = alu == AluOp::kMax ? _mm256_max_ps(lanes, v) : _mm256_min_ps(lanes, v);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  } else {
    alignas(32) float x[kReduceLanes];
    _mm256_store_ps(x, lanes);
    for (int l = 0; l < kReduceLanes; ++l) x[l] = apply_alu(alu, x[l], values[l]);
    lanes = _mm256_load_ps(x);
  }
}

// Folds values[0..n) into the lanes of a row whose first `count` elements are already in
// (alu.h's lane order), with eight independent accumulators over aligned blocks.
template <typename Op>
void fold_lanes(Op op, float* lanes, int64_t count, const float* values, int64_t n) {
  static_assert(kReduceLanes == 8, "one AVX2 vector of lanes");
  const AluOp alu = op_value(op);
  int64_t j = 0;
  for (; j < n && (count + j) % kReduceLanes != 0; ++j) {
    float& lane = lanes[(count + j) % kReduceLanes];
    lane = apply_alu(alu, lane, values[j]);
  }
  if (j + kReduceLanes <= n) {
    __m256 vector = _mm256_loadu_ps(lanes);
    __m256 nan = _mm256_cmp_ps(vector, vector, _CMP_UNORD_Q);
    for (; j + kReduceLanes <= n; j += kReduceLanes) fold_eight(op, vector, nan, values + j);
    if (alu == AluOp::kMax || alu == AluOp::kMin)
      vector =
          _mm256_blendv_ps(vector, _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN()), nan);
    _mm256_storeu_ps(lanes, vector);
  }
  for (; j < n; ++j) {
    float& lane = lanes[(count + j) % kReduceLanes];
    lane = apply_alu(alu, lane, values[j]);
  }
}

// An on-chip fp32 operand dense in each partition (defined with the matmul path below).
bool dense_fp32_rows(const CoreState& state, const AccessPattern& ap, float** first,
                     int64_t* row_floats);

// Two operands overlap in memory without being the same pattern: streaming would read what it
// just wrote, so such instructions take the general path (which reads everything first).
bool overlaps(const CoreState& state, const AccessPattern& dst, const AccessPattern& src) {
  if (!src.valid() || src.buffer != dst.buffer) return false;
  if (same_pattern(src, dst)) return false;
  const auto span = [&](const AccessPattern& ap, int64_t* low, int64_t* high) {
    const bool on_chip = state.program().buffers[ap.buffer].memory != Memory::kHbm;
    int64_t first = ap.offset, last = ap.offset;
    for (int d = on_chip ? 1 : 0; d < ap.rank; ++d) {
      const int64_t reach = (ap.dims[d].size - 1) * ap.dims[d].stride;
      (reach < 0 ? first : last) += reach;
    }
    *low = first * dtype_size(ap.dtype);
    *high = (last + 1) * dtype_size(ap.dtype);
  };
  int64_t dl, dh, sl, sh;
  span(dst, &dl, &dh);
  span(src, &sl, &sh);
  const bool on_chip = state.program().buffers[dst.buffer].memory != Memory::kHbm;
  const bool rows_meet =
      !on_chip || (dst.start_partition < src.start_partition + src.partitions() &&
                   src.start_partition < dst.start_partition + dst.partitions());
  return rows_meet && dl < sh && sl < dh;
}

void check_read(CoreState& state, const Instruction& ins, const AccessPattern& ap) {
  if (ap.valid() && !state.all_written(ap)) report_unwritten(state, ins, ap);
}

// `count` values of T filled with `value`, on the stack when they fit a partition's worth
// (instructions run once per tile: heap allocations were a visible share of small tiles).
template <typename T, int64_t kInline = 128>
class SmallArray {
 public:
  SmallArray(int64_t count, T value) {
    if (count > kInline) {
      heap_.assign(static_cast<size_t>(count), value);
      data_ = heap_.data();
    } else {
      std::fill(inline_, inline_ + count, value);
    }
  }
  SmallArray(const SmallArray&) = delete;
  T& operator[](int64_t i) { return data_[i]; }
  const T& operator[](int64_t i) const { return data_[i]; }
  T* data() { return data_; }

 private:
  T inline_[kInline];
  std::vector<T> heap_;
  T* data_ = inline_;
};

// The per-partition values of an optional [P, 1] operand, else the immediate.
void scalars(CoreState& state, const AccessPattern& operand, float immediate, int64_t partitions,
             SmallArray<float>& values) {
  if (!operand.valid()) return;
  RunCursor run(state, operand);
  for (int64_t p = 0; p < partitions && !run.done(); ++p) {
    values[p] = load_element(operand.dtype, run.data());
    run.advance(run.remaining());
  }
}

// Streams dst and up to three sources in lockstep: body(n, partition, dst run, source runs).
template <typename Body>
void stream(CoreState& state, const AccessPattern& dst, const AccessPattern* sources, int count,
            Body&& body) {
  RunCursor out(state, dst);
  std::vector<RunCursor> in;
  in.reserve(count);
  for (int s = 0; s < count; ++s) in.emplace_back(state, sources[s]);
  while (!out.done()) {
    int64_t n = std::min(out.remaining(), kChunk);
    for (const auto& run : in) n = std::min(n, run.remaining());
    body(n, out, in.data());
    out.advance(n);
    for (auto& run : in) run.advance(n);
  }
}

// An operand as `count` runs of `length` contiguous elements, run r at first + r · step bytes:
// an on-chip tile dense in each partition (a run per partition), or an HBM view whose rows are
// contiguous (a run per row, or one run for a contiguous view).
struct UniformRuns {
  uint8_t* first = nullptr;
  int64_t count = 0, length = 0, step = 0;
};

bool uniform_runs(const CoreState& state, const AccessPattern& ap, UniformRuns* runs) {
  const bool on_chip = state.program().buffers[ap.buffer].memory != Memory::kHbm;
  int64_t sizes[kMaxDims], strides[kMaxDims];
  int count = 0;
  for (int d = on_chip ? 1 : 0; d < ap.rank; ++d) {
    if (ap.dims[d].size == 1) continue;
    if (count > 0 && strides[count - 1] == ap.dims[d].size * ap.dims[d].stride) {
      sizes[count - 1] *= ap.dims[d].size;
      strides[count - 1] = ap.dims[d].stride;
      continue;
    }
    sizes[count] = ap.dims[d].size;
    strides[count++] = ap.dims[d].stride;
  }
  const int64_t size = dtype_size(ap.dtype);
  runs->first = state.row_base(ap) + ap.offset * size;
  if (count == 0) {
    sizes[0] = strides[0] = 1;
    count = 1;
  }
  if (strides[count - 1] != 1) return false;
  if (on_chip) {
    if (count != 1) return false;
    *runs = {runs->first, ap.partitions(), sizes[0], state.row_stride(ap)};
    return true;
  }
  if (count == 1) {
    *runs = {runs->first, 1, sizes[0], sizes[0] * size};
    return true;
  }
  if (count != 2) return false;
  *runs = {runs->first, sizes[0], sizes[1], strides[0] * size};
  return true;
}

// Splits a single contiguous run into `count` runs of `length` to match another operand.
bool match_runs(UniformRuns& x, const UniformRuns& y, int64_t size) {
  if (x.count == y.count && x.length == y.length) return true;
  if (x.count == 1 && x.length == y.count * y.length) {
    x = {x.first, y.count, y.length, y.length * size};
    return true;
  }
  return false;
}

// Same-dtype copies whose operands are uniform runs: one copy per run, no cursors. Short runs
// (small tiles) are copied in 32-byte moves rather than by a library call each.
bool copy_runs(CoreState& state, const AccessPattern& dst, const AccessPattern& src) {
  if (dst.dtype != src.dtype) return false;
  UniformRuns to, from;
  if (!uniform_runs(state, dst, &to) || !uniform_runs(state, src, &from)) return false;
  const int64_t size = dtype_size(dst.dtype);
  if (!match_runs(to, from, size) && !match_runs(from, to, size)) return false;
  if (to.count != from.count || to.length != from.length) return false;
  const int64_t bytes = to.length * size;
  for (int64_t r = 0; r < to.count; ++r) {
    uint8_t* out = to.first + r * to.step;
    const uint8_t* in = from.first + r * from.step;
    if (bytes > 256) {
      std::memcpy(out, in, static_cast<size_t>(bytes));
      continue;
    }
    int64_t b = 0;
    for (; b + 32 <= bytes; b += 32)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + b),
                          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + b)));
    if (b < bytes) std::memcpy(out + b, in + b, static_cast<size_t>(bytes - b));
  }
  return true;
}

void copy(CoreState& state, const Instruction& ins) {
  const AccessPattern& dst = ins.dst;
  const AccessPattern& src = ins.src[0];
  check_read(state, ins, src);
  if (copy_runs(state, dst, src)) {
    state.mark_written(dst);
    return;
  }
  const int64_t size = dtype_size(src.dtype);
  const bool same = src.dtype == dst.dtype;
  float buffer[kChunk], staging[kChunk];
  stream(state, dst, &src, 1, [&](int64_t n, RunCursor& out, RunCursor* in) {
    if (same) {
      if (out.contiguous() && in[0].contiguous()) {
        std::memcpy(out.data(), in[0].data(), static_cast<size_t>(n * size));
      } else {
        for (int64_t i = 0; i < n; ++i)
          std::memcpy(out.data() + i * out.step(), in[0].data() + i * in[0].step(), size);
      }
      return;
    }
    const float* values = load_chunk(in[0], src.dtype, n, buffer);
    if (values != buffer) {
      std::memcpy(staging, values, static_cast<size_t>(n) * sizeof(float));
      values = staging;
    }
    store_chunk(out, dst.dtype, values, n);
  });
  state.mark_written(dst);
}

// out[i] = x[i] op y[i] (out may be x or y itself).
template <typename Op>
void elementwise(Op op, float* out, const float* x, const float* y, int64_t n) {
  const AluOp alu = op_value(op);
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) out[i] = apply_alu(alu, x[i], y[i]);
}

// fp32 tensor_tensor over uniform runs of equal shape: one loop per run, no cursors.
bool tensor_tensor_runs(CoreState& state, const Instruction& ins) {
  const AccessPattern& dst = ins.dst;
  if (dst.dtype != DType::kFloat32 || ins.src[0].dtype != DType::kFloat32 ||
      ins.src[1].dtype != DType::kFloat32)
    return false;
  UniformRuns r, a, b;
  if (!uniform_runs(state, dst, &r) || !uniform_runs(state, ins.src[0], &a) ||
      !uniform_runs(state, ins.src[1], &b))
    return false;
  if (!match_runs(a, r, 4) || !match_runs(b, r, 4) || !match_runs(r, a, 4)) return false;
  if (a.count != r.count || a.length != r.length || b.count != r.count || b.length != r.length)
    return false;
  if (has_vector_alu(ins.alu0)) {
    for (int64_t run = 0; run < r.count; ++run) {
      elementwise_vector(ins.alu0, reinterpret_cast<float*>(r.first + run * r.step),
                         reinterpret_cast<const float*>(a.first + run * a.step),
                         reinterpret_cast<const float*>(b.first + run * b.step), r.length);
    }
    return true;
  }
  with_alu(ins.alu0, [&](auto op) {
    for (int64_t run = 0; run < r.count; ++run) {
      elementwise(op, reinterpret_cast<float*>(r.first + run * r.step),
                  reinterpret_cast<const float*>(a.first + run * a.step),
                  reinterpret_cast<const float*>(b.first + run * b.step), r.length);
    }
  });
  return true;
}

void tensor_tensor(CoreState& state, const Instruction& ins) {
  const AccessPattern sources[2] = {ins.src[0], ins.src[1]};
  check_read(state, ins, sources[0]);
  check_read(state, ins, sources[1]);
  if (tensor_tensor_runs(state, ins)) {
    state.mark_written(ins.dst);
    return;
  }
  float xa[kChunk], xb[kChunk], result[kChunk];
  with_alu(ins.alu0, [&](auto op) {
    stream(state, ins.dst, sources, 2, [&](int64_t n, RunCursor& out, RunCursor* in) {
      const float* a = load_chunk(in[0], sources[0].dtype, n, xa);
      const float* b = load_chunk(in[1], sources[1].dtype, n, xb);
      float* r = output_chunk(out, ins.dst.dtype, result);
      const AluOp alu = op_value(op);
      if (has_vector_alu(alu)) {
        elementwise_vector(alu, r, a, b, n);
      } else {
#pragma GCC ivdep
        for (int64_t i = 0; i < n; ++i) r[i] = apply_alu(alu, a[i], b[i]);
      }
      store_chunk(out, ins.dst.dtype, r, n);
    });
  });
  state.mark_written(ins.dst);
}

// r = x op s (reverse: s op x) for one per-partition scalar s; r may be x itself.
template <typename Op>
void scalar_pass(Op op, bool reverse, float s, const float* x, float* r, int64_t n) {
  const AluOp alu = op_value(op);
  if (reverse) {
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) r[i] = apply_alu(alu, s, x[i]);
  } else {
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) r[i] = apply_alu(alu, x[i], s);
  }
}

void tensor_scalar(CoreState& state, const Instruction& ins) {
  const AccessPattern& a = ins.src[0];
  check_read(state, ins, a);
  check_read(state, ins, ins.src[1]);
  check_read(state, ins, ins.src[2]);
  const int64_t p = a.partitions();
  SmallArray<float> s0(p, ins.imm0), s1(p, ins.imm1);
  scalars(state, ins.src[1], ins.imm0, p, s0);
  scalars(state, ins.src[2], ins.imm1, p, s1);
  float xa[kChunk], result[kChunk];
  stream(state, ins.dst, &a, 1, [&](int64_t n, RunCursor& out, RunCursor* in) {
    const float* x = load_chunk(in[0], a.dtype, n, xa);
    float* r = output_chunk(out, ins.dst.dtype, result);
    const int64_t partition = in[0].partition();
    // The first operation reads the source and writes the result, with no copy between.
    with_alu(ins.alu0, [&](auto op) { scalar_pass(op, ins.reverse0, s0[partition], x, r, n); });
    if (ins.alu1 != AluOp::kBypass) {
      with_alu(ins.alu1, [&](auto op) { scalar_pass(op, ins.reverse1, s1[partition], r, r, n); });
    }
    store_chunk(out, ins.dst.dtype, r, n);
  });
  state.mark_written(ins.dst);
}

// Calls f with the activation function as a compile-time constant.
template <typename F>
void with_function(ActivationFunction function, F&& f) {
  switch (function) {
#define ON_FUNCTION(name)        \
  case ActivationFunction::name: \
    return f(std::integral_constant<ActivationFunction, ActivationFunction::name>{});
    ON_FUNCTION(kCopy)
    ON_FUNCTION(kExp)
    ON_FUNCTION(kRelu)
    ON_FUNCTION(kSquare)
    ON_FUNCTION(kRsqrt)
    ON_FUNCTION(kSqrt)
    ON_FUNCTION(kReciprocal)
    ON_FUNCTION(kSigmoid)
    ON_FUNCTION(kSilu)
    ON_FUNCTION(kSiluDx)
    ON_FUNCTION(kGeluSigmoid)
    ON_FUNCTION(kGeluSigmoidDx)
    ON_FUNCTION(kLog)
    ON_FUNCTION(kTanh)
    ON_FUNCTION(kGelu)
    ON_FUNCTION(kGeluTanh)
    ON_FUNCTION(kSin)
    ON_FUNCTION(kCos)
    ON_FUNCTION(kSoftplus)
    ON_FUNCTION(kErf)
    ON_FUNCTION(kMish)
    ON_FUNCTION(kArctan)
    ON_FUNCTION(kAbs)
    ON_FUNCTION(kSign)
    ON_FUNCTION(kNegate)
#undef ON_FUNCTION
    default:
      return f(function);
  }
}

template <typename Fn>
ActivationFunction function_value(Fn fn) {
  if constexpr (std::is_same_v<Fn, ActivationFunction>) {
    return fn;
  } else {
    return Fn::value;
  }
}

// r[i] = f(x[i] · scale + bias), the same expression on each ISA (so the same bytes). sin and
// cos: the loop computes the reduced form everywhere, then the rare elements beyond
// sin_cos_reducible take libm's, as apply_activation does (in blocks, as r may be x itself).
template <typename Fn>
__attribute__((always_inline)) inline void activate_body(Fn fn, const float* x, float scale,
                                                         float bias, float* r, int64_t n) {
  const ActivationFunction function = function_value(fn);
  if (function != ActivationFunction::kSin && function != ActivationFunction::kCos) {
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) r[i] = apply_activation(function, std::fma(x[i], scale, bias));
    return;
  }
  const bool cosine = function == ActivationFunction::kCos;
  constexpr int64_t kBlock = 256;
  float t[kBlock];
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t count = std::min(kBlock, n - start);
    for (int64_t i = 0; i < count; ++i) t[i] = std::fma(x[start + i], scale, bias);
    for (int64_t i = 0; i < count; ++i) r[start + i] = sin_cos_f32(t[i], cosine);
    for (int64_t i = 0; i < count; ++i) {
      if (!sin_cos_reducible(t[i])) r[start + i] = cosine ? std::cos(t[i]) : std::sin(t[i]);
    }
  }
}

template <typename Fn>
void activate(Fn fn, const float* x, float scale, float bias, float* r, int64_t n) {
  activate_body(fn, x, scale, bias, r, n);
}

namespace isa_avx512 {  // the project's marker for code that needs AVX-512

// The AVX-512 copy lets the compiler use 16-lane vectors.
template <typename Fn>
OPENNEURON_SIM_AVX512 void activate_avx512(Fn fn, const float* x, float scale, float bias, float* r,
                                           int64_t n) {
  activate_body(fn, x, scale, bias, r, n);
}

}  // namespace isa_avx512

void activation(CoreState& state, const Instruction& ins) {
  const AccessPattern& a = ins.src[0];
  check_read(state, ins, a);
  check_read(state, ins, ins.src[1]);
  check_read(state, ins, ins.src[2]);
  const int64_t p = a.partitions();
  SmallArray<float> bias(p, ins.imm1), scale(p, ins.imm0);
  scalars(state, ins.src[1], ins.imm1, p, bias);
  scalars(state, ins.src[2], ins.imm0, p, scale);
  const bool reduce = ins.alu1 != AluOp::kBypass;
  float identity = 0.0f;
  const bool has_identity = reduction_identity(ins.alu1, &identity);
  SmallArray<float> reduced(p, identity);
  SmallArray<char> started(p, has_identity ? 1 : 0);
  SmallArray<float, 128 * kReduceLanes> lanes(p * kReduceLanes, identity);
  SmallArray<int64_t> counts(p, 0);
  float xa[kChunk], result[kChunk];
  const bool wide = use_avx512();
  // An fp32 destination dense in each partition holds exactly the values reduced: its rows are
  // reduced afterwards, several side by side, instead of one serial fold per chunk.
  float* dst_rows = nullptr;
  int64_t dst_row_floats = 0;
  const AluOp folded = ins.alu1 == AluOp::kSubtract ? AluOp::kAdd : ins.alu1;
  const bool reduce_rows = reduce && has_identity && ins.dst.partitions() == p &&
                           dense_fp32_rows(state, ins.dst, &dst_rows, &dst_row_floats) &&
                           (folded == AluOp::kAdd || folded == AluOp::kMultiply ||
                            folded == AluOp::kMax || folded == AluOp::kMin);
  with_function(ins.function, [&](auto fn) {
    stream(state, ins.dst, &a, 1, [&](int64_t n, RunCursor& out, RunCursor* in) {
      const float* x = load_chunk(in[0], a.dtype, n, xa);
      float* r = output_chunk(out, ins.dst.dtype, result);
      const int64_t partition = in[0].partition();
      const float sc = scale[partition], bi = bias[partition];
      if (wide) {
        isa_avx512::activate_avx512(fn, x, sc, bi, r, n);
      } else {
        activate(fn, x, sc, bi, r, n);
      }
      if (reduce_rows) {
        // reduced below, from the destination
      } else if (reduce && has_identity) {
        with_alu(ins.alu1 == AluOp::kSubtract ? AluOp::kAdd : ins.alu1, [&](auto op) {
          fold_lanes(op, lanes.data() + partition * kReduceLanes, counts[partition], r, n);
        });
        counts[partition] += n;
      } else if (reduce) {
        float acc = reduced[partition];
        int64_t i = 0;
        if (!started[partition] && n > 0) {
          acc = r[0];
          i = 1;
          started[partition] = 1;
        }
        for (int64_t j = i; j < n; ++j) acc = reduce_step(ins.alu1, acc, r[j]);
        reduced[partition] = acc;
      }
      store_chunk(out, ins.dst.dtype, r, n);
    });
  });
  state.mark_written(ins.dst);
  if (reduce_rows) {
    reduce_rows_vector(folded, dst_rows, dst_row_floats, p, ins.dst.free_size(), reduced.data());
  } else if (reduce && has_identity) {
    with_alu(ins.alu1, [&](auto op) {
      for (int64_t q = 0; q < p; ++q)
        reduced[q] = combine_lanes(op_value(op), lanes.data() + q * kReduceLanes);
    });
  }
  if (reduce) {
    RunCursor out(state, ins.dst2);
    for (int64_t q = 0; q < p && !out.done(); ++q) {
      store_element(ins.dst2.dtype, out.data(), reduced[q]);
      out.advance(out.remaining());
    }
    state.mark_written(ins.dst2);
  }
}

void memset_tile(CoreState& state, const Instruction& ins) {
  float values[kChunk];
  std::fill(values, values + kChunk, ins.imm0);
  stream(state, ins.dst, nullptr, 0, [&](int64_t n, RunCursor& out, RunCursor*) {
    store_chunk(out, ins.dst.dtype, values, n);
  });
  state.mark_written(ins.dst);
}

void select(CoreState& state, const Instruction& ins) {
  const AccessPattern sources[3] = {ins.src[0], ins.src[1], ins.src[2]};
  for (const auto& source : sources) check_read(state, ins, source);
  float xa[kChunk], xb[kChunk], xc[kChunk], result[kChunk];
  stream(state, ins.dst, sources, 3, [&](int64_t n, RunCursor& out, RunCursor* in) {
    const float* predicate = load_chunk(in[0], sources[0].dtype, n, xa);
    const float* on_true = load_chunk(in[1], sources[1].dtype, n, xb);
    const float* on_false = load_chunk(in[2], sources[2].dtype, n, xc);
    float* r = output_chunk(out, ins.dst.dtype, result);
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) r[i] = predicate[i] == 0.0f ? on_false[i] : on_true[i];
    store_chunk(out, ins.dst.dtype, r, n);
  });
  state.mark_written(ins.dst);
}

// dst[g] = reduction of group g (the last `reduce_dims` free dimensions), each group folded
// left to right from the identity (or its first element) as the reference folds it.
void tensor_reduce(CoreState& state, const Instruction& ins) {
  const AccessPattern& a = ins.src[0];
  check_read(state, ins, a);
  int64_t group = 1;
  for (int d = a.rank - ins.reduce_dims; d < a.rank; ++d) group *= a.dims[d].size;
  const int64_t groups = a.elements() / std::max<int64_t>(group, 1);
  std::vector<float> out(static_cast<size_t>(groups));
  float identity = 0.0f;
  const bool has_identity = reduction_identity(ins.alu0, &identity);
  float xa[kChunk];
  const AluOp folded = ins.alu0 == AluOp::kSubtract ? AluOp::kAdd : ins.alu0;
  float* rows;
  int64_t row_floats;
  // Whole rows of a dense on-chip fp32 tile: several rows folded side by side.
  const bool by_rows =
      group == a.free_size() && dense_fp32_rows(state, a, &rows, &row_floats) &&
      reduce_rows_vector(folded, rows, row_floats, a.partitions(), group, out.data());
  if (by_rows && ins.negate) {
    for (float& value : out) value = -value;
  }
  if (!by_rows)
    with_alu(folded, [&](auto op) {
      const AluOp alu = op_value(op);
      RunCursor in(state, a);
      int64_t g = 0, filled = 0;
      float acc = identity;
      float lanes[kReduceLanes];
      while (!in.done()) {
        const int64_t n = std::min(in.remaining(), kChunk);
        const float* x = load_chunk(in, a.dtype, n, xa);
        int64_t i = 0;
        while (i < n) {
          if (filled == 0) {
            if (has_identity) {
              std::fill(lanes, lanes + kReduceLanes, identity);
            } else {
              acc = x[i++];
              filled = 1;
            }
          }
          const int64_t take = std::min(n - i, group - filled);
          if (has_identity) {
            fold_lanes(op, lanes, filled, x + i, take);
          } else {
            for (int64_t j = 0; j < take; ++j) acc = apply_alu(alu, acc, x[i + j]);
          }
          i += take;
          filled += take;
          if (filled == group) {
            const float result = has_identity ? combine_lanes(alu, lanes) : acc;
            out[g++] = ins.negate ? -result : result;
            filled = 0;
          }
        }
        in.advance(n);
      }
    });
  RunCursor dst(state, ins.dst);
  int64_t written = 0;
  while (!dst.done()) {
    const int64_t n = dst.remaining();
    store_chunk(dst, ins.dst.dtype, out.data() + written, n);
    written += n;
    dst.advance(n);
  }
  state.mark_written(ins.dst);
}

// An on-chip fp32 operand whose free elements are contiguous in each partition: its first
// element and the floats from one partition to the next.
bool dense_fp32_rows(const CoreState& state, const AccessPattern& ap, float** first,
                     int64_t* row_floats) {
  if (ap.dtype != DType::kFloat32) return false;
  if (state.program().buffers[ap.buffer].memory == Memory::kHbm) return false;
  int64_t expected = 1;
  for (int d = ap.rank - 1; d >= 1; --d) {
    if (ap.dims[d].size != 1 && ap.dims[d].stride != expected) return false;
    expected *= ap.dims[d].size;
  }
  const int64_t stride = state.row_stride(ap);
  if (stride % static_cast<int64_t>(sizeof(float)) != 0) return false;
  *first = reinterpret_cast<float*>(state.row_base(ap)) + ap.offset;
  *row_floats = stride / static_cast<int64_t>(sizeof(float));
  return true;
}

// A matmul on fp32 operands read and written where they lie (no copies): returns false, doing
// nothing, when the operands need the general path (casts, tf32, strided free dimensions).
bool matmul_in_place(CoreState& state, const Instruction& ins) {
  float *a, *b, *out;
  int64_t lda, ldb, ldc;
  if (!dense_fp32_rows(state, ins.src[0], &a, &lda) ||
      !dense_fp32_rows(state, ins.src[1], &b, &ldb) || !dense_fp32_rows(state, ins.dst, &out, &ldc))
    return false;
  if (ins.dst.buffer == ins.src[0].buffer || ins.dst.buffer == ins.src[1].buffer) return false;
  check_read(state, ins, ins.src[0]);
  check_read(state, ins, ins.src[1]);
  if (ins.accumulate) check_read(state, ins, ins.dst);
  const int64_t k = ins.src[0].partitions(), m = ins.src[0].free_size();
  matmul_fp32(a, lda, b, ldb, k, m, ins.src[1].free_size(), out, ldc, ins.accumulate);
  state.mark_written(ins.dst);
  return true;
}

// out[j][i] = in[i][j] for an 8 × 8 block (rows `in_row` / `out_row` floats apart), in AVX2
// registers: pairs interleaved, then quads, then the 128-bit halves swapped.
inline void transpose_8x8(const float* in, int64_t in_row, float* out, int64_t out_row) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(in + i * in_row);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(out + i * out_row, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(out + (i + 4) * out_row, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}

// A transpose between fp32 tiles where they lie, in 8 × 8 blocks so both sides stay in cache;
// false (nothing done) when the general path is needed.
bool transpose_in_place(CoreState& state, const Instruction& ins) {
  float *in, *out;
  int64_t in_row, out_row;
  if (!dense_fp32_rows(state, ins.src[0], &in, &in_row) ||
      !dense_fp32_rows(state, ins.dst, &out, &out_row) || ins.dst.buffer == ins.src[0].buffer)
    return false;
  check_read(state, ins, ins.src[0]);
  const int64_t p = ins.src[0].partitions(), f = ins.src[0].free_size();
  constexpr int64_t kBlock = 8;
  for (int64_t i0 = 0; i0 < p; i0 += kBlock) {
    const int64_t i1 = std::min(p, i0 + kBlock);
    for (int64_t j0 = 0; j0 < f; j0 += kBlock) {
      const int64_t j1 = std::min(f, j0 + kBlock);
      if (i1 - i0 == kBlock && j1 - j0 == kBlock) {
        transpose_8x8(in + i0 * in_row + j0, in_row, out + j0 * out_row + i0, out_row);
        continue;
      }
      for (int64_t j = j0; j < j1; ++j) {
        for (int64_t i = i0; i < i1; ++i) out[j * out_row + i] = in[i * in_row + j];
      }
    }
  }
  state.mark_written(ins.dst);
  return true;
}

// One element per partition ([P, 1] tiles: running maxima, sums, per-row scales): element p
// of an operand is at row_base + p · row_stride, so the whole column is gathered, computed and
// scattered in three loops instead of one streamed run per partition. Inputs are all read
// before the output is written, as the reference does, so dst may alias a source.
bool single_column(const CoreState& state, const AccessPattern& ap, int64_t partitions) {
  return !ap.valid() || (state.program().buffers[ap.buffer].memory != Memory::kHbm &&
                         ap.free_size() == 1 && ap.partitions() == partitions);
}

void gather_column(const CoreState& state, const AccessPattern& ap, float* values, int64_t count) {
  const uint8_t* first = state.row_base(ap) + ap.offset * dtype_size(ap.dtype);
  const int64_t stride = state.row_stride(ap);
  if (ap.dtype == DType::kFloat32) {
    for (int64_t p = 0; p < count; ++p) std::memcpy(values + p, first + p * stride, 4);
  } else {
    for (int64_t p = 0; p < count; ++p) values[p] = load_element(ap.dtype, first + p * stride);
  }
}

bool column_in_place(CoreState& state, const Instruction& ins) {
  const int64_t p = ins.dst.partitions();
  if (p > 128 || !single_column(state, ins.dst, p)) return false;
  for (const auto& src : ins.src) {
    if (!single_column(state, src, p)) return false;
  }
  for (const auto& src : ins.src) check_read(state, ins, src);
  float x[128], y[128], z[128];
  gather_column(state, ins.src[0], x, p);
  switch (ins.opcode) {
    case Opcode::kTensorCopy:
      if (ins.src[0].dtype == ins.dst.dtype) {  // bits kept, as the reference's copy does
        const int64_t size = dtype_size(ins.dst.dtype);
        const uint8_t* from = state.row_base(ins.src[0]) + ins.src[0].offset * size;
        uint8_t* to = state.row_base(ins.dst) + ins.dst.offset * size;
        const int64_t from_stride = state.row_stride(ins.src[0]);
        const int64_t to_stride = state.row_stride(ins.dst);
        uint8_t bytes[128 * 4];
        for (int64_t q = 0; q < p; ++q) std::memcpy(bytes + q * size, from + q * from_stride, size);
        for (int64_t q = 0; q < p; ++q) std::memcpy(to + q * to_stride, bytes + q * size, size);
        state.mark_written(ins.dst);
        return true;
      }
      break;
    case Opcode::kTensorTensor:
      gather_column(state, ins.src[1], y, p);
      with_alu(ins.alu0, [&](auto op) {
        for (int64_t q = 0; q < p; ++q) x[q] = apply_alu(op_value(op), x[q], y[q]);
      });
      break;
    case Opcode::kTensorScalar: {
      std::fill(y, y + p, ins.imm0);
      std::fill(z, z + p, ins.imm1);
      if (ins.src[1].valid()) gather_column(state, ins.src[1], y, p);
      if (ins.src[2].valid()) gather_column(state, ins.src[2], z, p);
      for (int64_t q = 0; q < p; ++q) {
        float v = x[q];
        v = ins.reverse0 ? apply_alu(ins.alu0, y[q], v) : apply_alu(ins.alu0, v, y[q]);
        if (ins.alu1 != AluOp::kBypass)
          v = ins.reverse1 ? apply_alu(ins.alu1, z[q], v) : apply_alu(ins.alu1, v, z[q]);
        x[q] = v;
      }
      break;
    }
    default:
      return false;
  }
  uint8_t* first = state.row_base(ins.dst) + ins.dst.offset * dtype_size(ins.dst.dtype);
  const int64_t stride = state.row_stride(ins.dst);
  for (int64_t q = 0; q < p; ++q) store_element(ins.dst.dtype, first + q * stride, x[q]);
  state.mark_written(ins.dst);
  return true;
}

// Whether the streaming path computes `ins` exactly as the reference does.
bool streams(const CoreState& state, const Instruction& ins) {
  switch (ins.opcode) {
    case Opcode::kDmaCopy:
    case Opcode::kTensorCopy:
    case Opcode::kTensorTensor:
    case Opcode::kTensorScalar:
    case Opcode::kActivation:
    case Opcode::kMemset:
    case Opcode::kSelect:
    case Opcode::kTensorReduce:
      break;
    default:
      return false;
  }
  for (const auto& src : ins.src) {
    if (overlaps(state, ins.dst, src)) return false;
  }
  if (ins.opcode == Opcode::kTensorScalar && ins.dst2.valid()) return false;  // fused reduce
  if (ins.opcode == Opcode::kActivation && ins.dst2.valid() &&
      (overlaps(state, ins.dst2, ins.src[0]) || ins.dst2.buffer == ins.dst.buffer))
    return false;
  return true;
}

}  // namespace

void execute_fast(CoreState& state, const Instruction& ins) {
  if (ins.opcode == Opcode::kMatmul && matmul_in_place(state, ins)) return;
  if (ins.opcode == Opcode::kTranspose && transpose_in_place(state, ins)) return;
  if ((ins.opcode == Opcode::kTensorTensor ||
       (ins.opcode == Opcode::kTensorScalar && !ins.dst2.valid()) ||
       ins.opcode == Opcode::kTensorCopy) &&
      column_in_place(state, ins))
    return;
  if (!streams(state, ins)) {
    execute_rows(state, ins);
    return;
  }
  switch (ins.opcode) {
    case Opcode::kDmaCopy:
    case Opcode::kTensorCopy:
      return copy(state, ins);
    case Opcode::kTensorTensor:
      return tensor_tensor(state, ins);
    case Opcode::kTensorScalar:
      return tensor_scalar(state, ins);
    case Opcode::kActivation:
      return activation(state, ins);
    case Opcode::kMemset:
      return memset_tile(state, ins);
    case Opcode::kSelect:
      return select(state, ins);
    case Opcode::kTensorReduce:
      return tensor_reduce(state, ins);
    default:
      execute_rows(state, ins);
  }
}

}  // namespace openneuron::sim
