// Microscaled (OCP MX) matrix products: MXFP8 and MXFP4 operands, one power-of-two E8M0 scale
// per 32 consecutive elements along K, multiplied with fp32 accumulation as the trn3 Tensor
// engine does (torch._scaled_mm with float8_e8m0fnu block scales).
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// The element formats of an MX operand.
enum class MxElement : uint8_t {
  kFloat8E4M3,  // one byte per element
  kFloat8E5M2,
  kFloat4E2M1,  // two elements per byte, the first in the low nibble
};

// Elements per E8M0 scale along K.
constexpr int64_t kMxBlock = 32;

// How an operand's scales are laid out.
enum class MxScaleLayout : uint8_t {
  kRowMajor,  // [rows, ceil(k / 32)], contiguous
  // cuBLAS's block-scaling layout ("32_4_4"): the [rows, k blocks] matrix padded to multiples of
  // 128 x 4 and stored as 128 x 4 tiles, each tile as 32 rows of 16 bytes: row r of a tile is
  // at (r % 32) * 16 + (r / 32) * 4.
  kSwizzled,
};

// One operand of an MX product: `rows` rows of `k` elements, K contiguous (row r's bytes start
// at data + r * row_stride_bytes; for fp4, k is even and a row holds k / 2 bytes).
struct MxOperand {
  const void* data = nullptr;
  MxElement element = MxElement::kFloat8E4M3;
  int64_t rows = 0;
  int64_t k = 0;
  int64_t row_stride_bytes = 0;
  const uint8_t* scales = nullptr;  // E8M0 bytes: 2^(byte - 127), 255 is NaN
  MxScaleLayout scale_layout = MxScaleLayout::kSwizzled;
};

// The byte offset of the scale of (row, k block) in an operand with `rows` rows and `k_blocks`
// blocks per row, in `layout`.
int64_t mx_scale_offset(MxScaleLayout layout, int64_t rows, int64_t k_blocks, int64_t row,
                        int64_t block);

// out [M, N] = a [M, K] @ b^T where b holds the N columns of the right operand as rows [N, K]:
//   out[i, j] = round(sum_k (a[i, k] * sa[i, k / 32]) * (b[j, k] * sb[j, k / 32]) + bias[j]),
// each scaled element exact in fp32 (down to fp32's subnormals), the sum accumulated in fp32
// and rounded once to out's dtype (fp32, bf16 or fp16; any strides). bias is null or 1-D of N
// floating values. K == 0 gives zeros (no bias, as CUDA). Throws std::invalid_argument on shapes
// or formats outside this contract (a and b must agree on K and be both fp4 or both fp8).
void mx_scaled_gemm(const TensorView& out, const MxOperand& a, const MxOperand& b,
                    const TensorView* bias);

}  // namespace openneuron::kernels
