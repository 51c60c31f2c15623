// The tile instruction set a NeuronCore runs, as the simulator defines it.
//
// A program is a list of buffers and a list of instructions in issue order. Each instruction
// belongs to one engine; each engine executes its own instructions in order, and engines wait
// for one another only where one reads or overwrites memory another is still using.
//
// Operands are access patterns over a buffer. On-chip buffers (SBUF, PSUM) are 2-D: a partition
// range and a number of bytes per partition. An on-chip access pattern's first dimension walks
// partitions (stride 1 partition, starting at `start_partition` of the buffer) and its other
// dimensions walk elements inside each partition (`offset` + Σ index·stride, in elements of the
// pattern's dtype). HBM buffers are flat; there every dimension's stride is in elements.
//
// Reading an element never written is an error (uninitialized-read), except that transposes,
// tensor copies and stream shuffles carry such elements along to their destination, where they
// stay never written, and nonzero_with_count leaves the partition it compacts from one never
// written (the hardware moves whatever bits are there; what reads them later is reported).
//
// Arithmetic happens in fp32: every input element is read as fp32, the result is rounded once to
// the destination's dtype. Which NaN (sign, payload) a result holds when NaNs meet is not
// defined: any NaN is as good as another. Instructions, operand slots and semantics (P =
// partitions, F = the free elements per partition of an operand, `a`..`c` = src[0..2]):
//
//   Tensor engine
//   kMatmul         dst[M,N] (PSUM, fp32) = (accumulate ? dst : 0) + a[K,M]ᵀ · b[K,N];
//                   a "stationary", b "moving", both in SBUF; products summed over k = 0..K-1 in
//                   fp32 with fused multiply-add. K ≤ 128, M ≤ 128, N ≤ 512; dst within one bank.
//   kTranspose      dst[F,P] (PSUM) = a[P,F]ᵀ; P ≤ 128, F ≤ 128.
//   Vector engine
//   kTensorTensor   dst = a alu0 b, elementwise; a and b not both in PSUM.
//   kTensorScalar   dst = (a alu0 s0) alu1 s1 where s0/s1 are b[p,0] / c[p,0] when given (one
//                   value per partition) else imm0 / imm1; reverse0/reverse1 swap the operands;
//                   alu1 = kBypass ends after the first operation. With dst2 (tensor_scalar_
//                   reduce), alu1 instead reduces each row of the result: dst2[p,0], as
//                   kActivation's reduction does; one instruction, timed as kTensorScalar.
//   kTensorReduce   dst[P, kept...] = reduction with alu0 of a over its last `reduce_dims` free
//                   dimensions (never the partition dimension); negate flips the result's sign.
//                   Reductions whose op has an identity fold in eight lanes (alu.h reduce_row):
//                   element j into lane j mod 8, lanes combined pairwise; others left to right.
//   kTensorCopy     dst = a, with a dtype cast; may run on Vector, Scalar or GpSimd.
//   kMemset         dst = imm0.
//   kSelect         dst = a != 0 ? b : c, elementwise.
//   kTensorTensorScan  along the last free dimension, r[-1] = s (c[p,0] if given, else imm0),
//                   r[i] = (r[i-1] alu0 a[i]) alu1 b[i]; dst = r.
//   kBnStats        dst[P,6] = for the even- and odd-indexed elements of a[P,F] (F ≤ 512):
//                   (count, mean, population variance) of each half.
//   kBnAggr         dst[P,2] = (mean, population variance) of everything the groups of six in
//                   a[P,6G] describe.
//   Scalar engine (activation)
//   kActivation     dst = func(a · scale + bias): scale is c[p,0] if given else imm0; bias is
//                   b[p,0] if given else imm1. With alu1 ≠ kBypass, also dst2[p,0] = reduction
//                   with alu1 of that result over every free element.
//   GpSimd engine
//   kIota           dst[p, i1..in] = imm0 + imm1·p + Σ pattern[k]·i_k.
//   kAffineSelect   v = imm0 + imm1·p + Σ pattern[k]·i_k; dst = (v alu0 0) ? a : imm2.
//   kPartitionReduce  dst[0, f...] = reduction with alu0 of a over its partitions.
//   Vector engine (top-k)
//   kMax8           dst[P,8] = the 8 largest elements of each partition of a (8 ≤ F ≤ 16384),
//                   as fp32, in descending order (duplicates kept; NaN ranks above +inf).
//   kFindIndex8     dst[P,8] (uint16 or uint32) = for each of the 8 values b[p,0..8), the index
//                   (row-major over a's free elements, from 0) of its first element equal to it
//                   in partition p of a (8 ≤ F ≤ 16384); all ones (0xFFFF / 0xFFFFFFFF) when
//                   none is (so always for NaN).
//   kStreamShuffle  moves partitions within each quadrant of 32: dst partition 32q + i (from the
//                   start of dst) = a partition 32q + mask[i] (from the start of a), i = 0..31;
//                   mask[i] = 255 leaves that dst partition as it was. The 32 mask bytes are
//                   `pattern` (byte i of the 32 in little-endian order). Same dtype, same free
//                   size; a may span fewer partitions than dst (mask 0: a broadcast). Only the
//                   partitions of a that some dst partition copies are read.
//   kMatchReplace8  dst = a with the first not-yet-replaced element equal to each of the 8 values
//                   b[p,0..8) set to imm0, the values taken in the order 7, 6, ..., 0 (so
//                   duplicate values pair with successive matches, the first match going to the
//                   highest slot); when dst2 is given, dst2[p,v] (uint16 / uint32 / fp32) = the
//                   index of value v's match (row-major over a's free elements), all ones when
//                   none (always for NaN). dst has a's shape; 8 ≤ F ≤ 16384.
//   kRangeSelect    per element j of a's free elements, v = j + imm0; keep when
//                   (v alu0 b[p,0]) and (v alu1 c[p,0]): dst = keep ? a : imm1. When dst2 is
//                   given, dst2[p,0] = reduction of that dst row with the AluOp in pattern[0].
//   GpSimd engine (stream compaction)
//   kNonzeroWithCount  on partitions 0, 16, 32, ... of a (from its start; each of GpSimd's eight
//                   cores reads the first of its 16 partitions), with F free elements: dst's same
//                   partition [F + 1] = the indices j + imm0 of the nonzero elements a[j] in
//                   order, then imm1 up to index F - 1, then their count at index F. The other
//                   partitions of dst are left as they were. NaN counts as nonzero.
//   kNGather        gather within each partition: dst[p, i] = a[p, b[p, i]], the index b (uint32)
//                   counting a's free elements in row-major order; b's free shape gives dst's.
//                   Same dtype, bits moved unchanged (a never-written element stays never
//                   written where it lands). Every index must lie in [0, F of a): out-of-bounds.
//   Vector engine (predicated copy)
//   kTensorCopyPredicated  where (b != 0) != reverse0: dst = a (bits unchanged, same dtype), or
//                   imm0 rounded to dst's dtype when a is absent; elsewhere dst keeps what it
//                   held (including never written). b is an unsigned integer predicate.
//   Microscaling (NeuronCore-v4, trn3)
//   kQuantizeMx     dst [P, F/4] (an fp8 _x4 type: 4 values an element) = a [P, F] (bf16/fp16)
//                   in groups of 8 partitions × 4 elements: each group's scale is the largest
//                   fp32 exponent field in it minus the format's largest exponent (uint8,
//                   wrapping), written to dst2 (uint8) at partition 32·(g/4) + g%4 of group row
//                   g, column = the group's column; values are divided by 2^(scale − 127),
//                   clipped to the format's largest value and rounded to nearest even.
//   kMatmulMx       dst [M, N] (PSUM, fp32 or bf16) (+)= Σ over K partitions and the 4 values
//                   of each _x4 element of a [K, M] · b [K, N], each value times 2^(scale − 127)
//                   of its group (scales c for a, src[3] for b, laid out as kQuantizeMx writes
//                   them). a and b are fp8/fp4 _x4 types; accumulation in fp32.
//   Launch
//   kCoreBarrier    no operands, no work: the cores of a launch wait for one another here.
//                   Simulator::run executes a program in segments that end at each barrier, so
//                   a launcher can interleave the programs of one launch on shared HBM.
//   DMA
//   kDmaCopy        dst = a, any shapes with equal element counts, walking both in row-major
//                   order; casts between dtypes; HBM and SBUF only (never PSUM).
//                   A run-time offset (Instruction::indirect) moves one HBM operand by values
//                   read from SBUF as the instruction runs. Scalar: one integer v of `index`
//                   ([1,1]) adds v·stride to the operand's offset. Vector: integer v[i] of row i
//                   of `index` ([P,1], P = the operand's first dimension) replaces that dimension:
//                   row i starts at offset + v[i]·stride, and moves the elements of row i (in
//                   row-major order) of the other operand, whose first dimension has size P too.
//                   Every value must lie in [0, bound): otherwise out-of-bounds, or under
//                   skip_out_of_bounds the transfer (scalar) or the row (vector) is left out.
//   kDmaCompute     dst = a·imm0 + b·imm1 + c·imm2 (the sources given, at least one), in fp32,
//                   walking every operand in row-major order (equal element counts), rounded
//                   once to dst's dtype; HBM and SBUF only.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/dtype.h"

namespace openneuron::sim {

enum class Memory : uint8_t { kHbm, kSbuf, kPsum };
enum class Engine : uint8_t { kTensor, kVector, kScalar, kGpSimd, kDma, kCount };

// GpSimd's eight cores each reach 16 contiguous partitions.
constexpr int64_t kPartitionsPerGpSimdCore = 16;

enum class Opcode : uint8_t {
  kMatmul,
  kTranspose,
  kTensorTensor,
  kTensorScalar,
  kTensorReduce,
  kTensorCopy,
  kMemset,
  kSelect,
  kTensorTensorScan,
  kBnStats,
  kBnAggr,
  kActivation,
  kIota,
  kAffineSelect,
  kPartitionReduce,
  kDmaCopy,
  kMax8,
  kFindIndex8,
  kStreamShuffle,
  kNonzeroWithCount,
  kMatchReplace8,
  kRangeSelect,
  kCoreBarrier,
  kDmaCompute,
  kNGather,
  kTensorCopyPredicated,
  kQuantizeMx,
  kMatmulMx,
  kCount
};

// Two-input ALU operations (comparisons give 1.0 or 0.0).
enum class AluOp : uint8_t {
  kBypass,  // returns the first operand
  kAdd,
  kSubtract,
  kMultiply,
  kDivide,
  kMax,
  kMin,
  kPow,
  kMod,
  kAbsMax,  // max(|x|, |y|)
  kIsEqual,
  kNotEqual,
  kIsGe,
  kIsGt,
  kIsLe,
  kIsLt,
  kLogicalAnd,
  kLogicalOr,
  kLogicalXor,
  kBitwiseAnd,  // on the operands truncated to int32
  kBitwiseOr,
  kBitwiseXor,
  kCount
};

// The Scalar engine's function table.
enum class ActivationFunction : uint8_t {
  kCopy,
  kExp,
  kLog,
  kTanh,
  kSigmoid,
  kRelu,
  kGelu,      // exact, with erf
  kGeluTanh,  // the tanh approximation
  kSilu,
  kSqrt,
  kRsqrt,
  kReciprocal,
  kSquare,
  kAbs,
  kSin,
  kCos,
  kSoftplus,
  kErf,
  kSign,
  kNegate,
  kMish,
  kArctan,
  kGeluSigmoid,    // x · sigmoid(1.702 x)
  kGeluSigmoidDx,  // its derivative
  kSiluDx,         // d/dx of x · sigmoid(x)
  kCount
};

const char* memory_name(Memory memory);
const char* engine_name(Engine engine);
const char* opcode_name(Opcode opcode);
const char* alu_op_name(AluOp op);
const char* activation_name(ActivationFunction function);

constexpr int kMaxDims = 5;  // the partition dimension and up to four free dimensions

struct Dim {
  int64_t size = 1;
  int64_t stride = 0;
};

struct AccessPattern {
  int32_t buffer = -1;  // index into Program::buffers; -1: the slot is unused
  DType dtype = DType::kFloat32;
  int32_t start_partition = 0;  // on-chip only: the first partition, relative to the buffer's
  int64_t offset = 0;           // elements: within each partition (on-chip) or flat (HBM)
  int32_t rank = 0;
  Dim dims[kMaxDims];

  bool valid() const { return buffer >= 0; }
  int64_t partitions() const { return rank > 0 ? dims[0].size : 1; }
  // Elements per partition: the product of the free dimensions.
  int64_t free_size() const;
  int64_t elements() const { return partitions() * free_size(); }
  // The lowest and highest element offsets the pattern reaches, walking dims from `first_dim`
  // (1 on-chip, where dim 0 walks partitions; 0 in HBM).
  std::pair<int64_t, int64_t> offset_span(int first_dim) const;
};

// A run-time offset on one HBM operand of kDmaCopy (see kDmaCopy above).
enum class IndirectKind : uint8_t { kNone, kScalar, kVector };

struct IndirectOffset {
  IndirectKind kind = IndirectKind::kNone;
  bool on_dst = false;              // the operand it moves: dst, else src[0]
  bool skip_out_of_bounds = false;  // leave out-of-range transfers out instead of failing
  int64_t stride = 0;               // elements per unit of an index value
  int64_t bound = 0;                // index values lie in [0, bound)
  AccessPattern index;              // SBUF, integer dtype: [1,1] (scalar) or [P,1] (vector)

  bool active() const { return kind != IndirectKind::kNone; }
};

struct Instruction {
  Opcode opcode = Opcode::kTensorCopy;
  Engine engine = Engine::kVector;
  AccessPattern dst;
  AccessPattern dst2;    // kActivation's and kTensorScalar's reduce result
  AccessPattern src[4];  // src[3]: kMatmulMx's moving scale only
  AluOp alu0 = AluOp::kBypass;
  AluOp alu1 = AluOp::kBypass;
  ActivationFunction function = ActivationFunction::kCopy;
  bool accumulate = false;
  bool reverse0 = false;
  bool reverse1 = false;
  bool negate = false;
  // kDmaCopy: never-written source bytes arrive never written instead of failing the read (a
  // core-to-core move, which carries whatever the tile holds).
  bool carries_unwritten = false;
  // kDmaCopy of a dma_transpose, whose DMA engines reorder the elements themselves (the cost
  // model counts descriptors on the contiguous side, in memory order).
  bool dma_transpose = false;
  // kDmaCopy: one of several DMAs issued as one transfer (spread over every DMA engine), and
  // whether it continues the previous instruction's transfer (it does not wait on it: the
  // pieces touch disjoint elements though their extents interleave).
  bool transfer_piece = false;
  bool continues_transfer = false;
  int32_t reduce_dims = 1;
  float imm0 = 0.0f;
  float imm1 = 0.0f;
  float imm2 = 0.0f;
  int64_t pattern[kMaxDims - 1] = {0, 0, 0, 0};  // kIota / kAffineSelect steps per free dim
  IndirectOffset indirect;                       // kDmaCopy only
  int32_t line = 0;                              // the kernel's source line that issued it
};

struct Buffer {
  std::string name;
  Memory memory = Memory::kSbuf;
  DType dtype = DType::kFloat32;
  int64_t partitions = 1;           // on-chip: partitions spanned; HBM: 1
  int64_t bytes_per_partition = 0;  // on-chip: bytes in each partition; HBM: total bytes
  int32_t line = 0;                 // where the kernel created it
  bool initialized = false;         // HBM inputs: written before the kernel starts
};

struct Program {
  std::string source;  // the kernel's file, for error messages
  std::vector<Buffer> buffers;
  std::vector<Instruction> instructions;
};

// The engine an opcode runs on when the kernel does not choose (kTensorCopy may be moved).
Engine default_engine(Opcode opcode);

// kStreamShuffle: the partition of src[0] (from its start) that dst partition `d` copies, or -1
// when its mask byte is 255.
int stream_shuffle_source(const Instruction& instruction, int64_t d);

}  // namespace openneuron::sim
