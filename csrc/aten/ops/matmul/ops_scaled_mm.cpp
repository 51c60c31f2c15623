// torch._scaled_mm and torch._scaled_grouped_mm on the device: float8 products with fp32
// accumulation and tensor-wise or row-wise fp32 scales, validated as CUDA validates them.
#include <ATen/BlasBackend.h>
#include <ATen/native/GroupedMMUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/ops/matmul/ops_scaled_mm_v2.h"
#include "aten/ops/ops.h"
#include "kernels/matmul/mx_scaled_gemm.h"
#include "kernels/matmul/scaled_gemm.h"

namespace openneuron::bridge {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool is_tensorwise_scale(const at::Tensor& mat, const at::Tensor& scale) {
  return at::isFloat8Type(mat.scalar_type()) && scale.scalar_type() == at::kFloat &&
         scale.numel() == 1;
}

// One scale per row of `mat`: fp32 [rows, 1], contiguous.
bool is_rowwise_scale(const at::Tensor& mat, const at::Tensor& scale) {
  return at::isFloat8Type(mat.scalar_type()) && scale.scalar_type() == at::kFloat &&
         scale.dim() == 2 && scale.size(0) == mat.size(0) && scale.size(1) == 1 &&
         scale.is_contiguous();
}

int64_t round_up(int64_t value, int64_t multiple) { return ceil_div(value, multiple) * multiple; }

// K of an operand whose rows run along K: packed fp4 holds two elements per byte.
int64_t elements_along(const at::Tensor& mat, int64_t dim) {
  return mat.scalar_type() == at::kFloat4_e2m1fn_x2 ? 2 * mat.size(dim) : mat.size(dim);
}

// MX: float8 or packed fp4 data with one float8_e8m0fnu scale per 32 elements of a row, the
// scales in cuBLAS's swizzled block layout (padded to 128 rows x 4 blocks), as CUDA checks it.
bool is_blockwise_1x32_scale(const at::Tensor& mat, const at::Tensor& scale) {
  const bool mx_data =
      at::isFloat8Type(mat.scalar_type()) || mat.scalar_type() == at::kFloat4_e2m1fn_x2;
  return mx_data && scale.scalar_type() == at::kFloat8_e8m0fnu &&
         scale.numel() ==
             round_up(mat.size(0), 128) * round_up(ceil_div(elements_along(mat, 1), 32), 4) &&
         scale.is_contiguous();
}

// The other scalings CUDA accepts, which this device does not run: NVFP4 (fp4 with e4m3 block
// scales) and the DeepSeek-style 1x128 / 128x128 fp32 block scales (CUDA runs those on SM90).
bool is_unsupported_blockwise_scale(const at::Tensor& mat, const at::Tensor& scale) {
  const at::ScalarType type = scale.scalar_type();
  if (type == at::kFloat8_e4m3fn) return true;  // MX's e8m0 scales of a wrong size fit nothing
  if (type != at::kFloat || scale.dim() != 2) return false;
  const int64_t outer_blocks = ceil_div(mat.size(0), 128);
  const int64_t inner_blocks = ceil_div(mat.size(1), 128);
  return scale.size(1) == inner_blocks &&
         (scale.size(0) == mat.size(0) || scale.size(0) == outer_blocks);
}

enum class Scaling { kTensorwise, kRowwise, kBlockwise1x32 };

// CUDA's choice between its scalings (the right operand's scale seen transposed, as a
// per-row scale of mat2^T, except MX's swizzled scales, which belong to mat2^T as they are),
// with its error for a combination that fits none.
Scaling choose_scaling(const at::Tensor& mat1, const at::Tensor& mat2, const at::Tensor& scale_a,
                       const at::Tensor& scale_b) {
  if (is_tensorwise_scale(mat1, scale_a) && is_tensorwise_scale(mat2.t(), scale_b)) {
    return Scaling::kTensorwise;
  }
  if (is_rowwise_scale(mat1, scale_a) && is_rowwise_scale(mat2.t(), scale_b.t())) {
    return Scaling::kRowwise;
  }
  if (is_blockwise_1x32_scale(mat1, scale_a) && is_blockwise_1x32_scale(mat2.t(), scale_b)) {
    return Scaling::kBlockwise1x32;
  }
  const auto low_precision = [](const at::Tensor& mat) {
    return at::isFloat8Type(mat.scalar_type()) || mat.scalar_type() == at::kFloat4_e2m1fn_x2;
  };
  const at::Tensor scale_b_t = scale_b.dim() <= 2 ? scale_b.t() : scale_b;
  TORCH_CHECK_NOT_IMPLEMENTED(
      !(low_precision(mat1) && low_precision(mat2) &&
        is_unsupported_blockwise_scale(mat1, scale_a) &&
        is_unsupported_blockwise_scale(mat2.t(), scale_b_t)),
      "torch._scaled_mm on neuron supports tensor-wise, row-wise and MX (1x32 float8_e8m0fnu) "
      "scales; block-wise NVFP4 (1x16 float8_e4m3fn) and 1x128/128x128 scaling is not "
      "implemented. "
      "Got scale_a ",
      scale_a.scalar_type(), " ", scale_a.sizes(), " and scale_b ", scale_b.scalar_type(), " ",
      scale_b.sizes());
  // ValueError, as the CPU's _scaled_mm raises it.
  TORCH_CHECK_VALUE(
      false,
      "Invalid scaling configuration.\n"
      "- For TensorWise scaling, a and b should be float8, scales should be float and "
      "singletons.\n"
      "- For RowWise scaling, a and b should be float8, scales should be float, scale_a "
      "should be (",
      mat1.size(0), ", 1) and scale_b should be (1, ", mat2.size(1),
      "), and both should be contiguous.\n"
      "- For Blockwise 1x32 scaling, a and b should be float8, scales should be "
      "float8_e8m0fnu, scale_a should have ",
      round_up(mat1.size(0), 128) * round_up(ceil_div(elements_along(mat1, 1), 32), 4),
      " elements and scale_b should have ",
      round_up(mat2.size(1), 128) * round_up(ceil_div(elements_along(mat2, 0), 32), 4),
      " elements, and both should be contiguous.\n"
      "Got a.dtype()=",
      mat1.scalar_type(), ", scale_a.dtype()=", scale_a.scalar_type(),
      ", scale_a.size()=", scale_a.sizes(), ", scale_a.stride()=", scale_a.strides(),
      ", b.dtype()=", mat2.scalar_type(), ", scale_b.dtype()=", scale_b.scalar_type(),
      ", scale_b.size()=", scale_b.sizes(), " and scale_b.stride()=", scale_b.strides());
}

// CUDA's all-on-one-device rule: unlike elementwise ops, a 0-dim CPU scale is refused too.
c10::Device check_all_on_device(
    const char* op, std::initializer_list<std::pair<const at::Tensor*, const char*>> tensors) {
  const c10::Device device = tensors.begin()->first->device();
  for (const auto& [tensor, name] : tensors) {
    if (!tensor->defined()) continue;
    TORCH_CHECK(tensor->device() == device,
                "Expected all tensors to be on the same device, but found at least two devices, ",
                device, " and ", tensor->device(), "! (when checking argument ", name,
                " in method ", op, ")");
  }
  return device;
}

// Float8 formats the NeuronCore stores (the fnuz variants are AMD's), and packed fp4 for MX.
void check_neuron_float8(const at::Tensor& mat, const char* name, Scaling scaling) {
  const bool fp4 = mat.scalar_type() == at::kFloat4_e2m1fn_x2;
  TORCH_CHECK(at::isFloat8Type(mat.scalar_type()) || fp4, "Expected ", name,
              " to be Float8 or Float4_x2 matrix got ", mat.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(
      mat.scalar_type() == at::kFloat8_e4m3fn || mat.scalar_type() == at::kFloat8_e5m2 ||
          (fp4 && scaling == Scaling::kBlockwise1x32),
      "torch._scaled_mm on neuron: ", name, " is ", mat.scalar_type(),
      "; the device's float8 formats are float8_e4m3fn and float8_e5m2 (and float4_e2m1fn_x2 "
      "with MX scales)");
}

// CUDA's checks of _scaled_mm, in its order, with its exception types.
Scaling check_scaled_mm(const at::Tensor& mat1, const at::Tensor& mat2, const at::Tensor& scale_a,
                        const at::Tensor& scale_b, const std::optional<at::Tensor>& bias,
                        const std::optional<at::Tensor>& scale_result, at::ScalarType out_dtype,
                        bool use_fast_accum) {
  TORCH_CHECK(mat1.dim() == 2, "mat1 must be a matrix");
  TORCH_CHECK(mat2.dim() == 2, "mat2 must be a matrix");
  TORCH_CHECK(mat1.size(1) == mat2.size(0), "mat1 and mat2 shapes cannot be multiplied (",
              mat1.size(0), "x", mat1.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
  const Scaling scaling = choose_scaling(mat1, mat2, scale_a, scale_b);
  TORCH_CHECK(
      !scale_result || (scale_result->numel() == 1 && scale_result->scalar_type() == at::kFloat),
      "scale_result must be a float scalar");
  TORCH_CHECK(!bias || bias->numel() == mat2.size(1), "Bias must be size ", mat2.size(1),
              " but got ", bias->numel());
  TORCH_CHECK(mat1.size(1) % 16 == 0,
              "Expected trailing dimension of mat1 to be divisible by 16 but got mat1 shape: (",
              mat1.size(0), "x", mat1.size(1), ").");
  TORCH_CHECK(mat2.size(0) % 16 == 0 && mat2.size(1) % 16 == 0, "mat2 shape (", mat2.size(0), "x",
              mat2.size(1), ") must be divisible by 16");
  // The layouts of CUDA's float8 GEMM (and of its meta kernel): row-major x column-major.
  const bool mat1_empty = mat1.size(0) == 0 || mat1.size(1) == 0;
  const bool mat2_empty = mat2.size(0) == 0 || mat2.size(1) == 0;
  TORCH_CHECK(mat1_empty || (mat1.stride(0) > mat1.stride(1) && mat1.stride(1) == 1),
              "self must be row_major, got stride ", mat1.strides());
  TORCH_CHECK(mat2_empty || (mat2.stride(0) == 1 && mat2.stride(1) > 1),
              "mat2 must be col_major, got stride ", mat2.strides());
  check_neuron_float8(mat1, "mat1", scaling);
  check_neuron_float8(mat2, "mat2", scaling);
  TORCH_CHECK_VALUE(
      mat1.scalar_type() != at::kFloat8_e5m2 || mat2.scalar_type() != at::kFloat8_e5m2,
      "Multiplication of two Float8_e5m2 matrices is not supported");
  const bool fp4_1 = mat1.scalar_type() == at::kFloat4_e2m1fn_x2;
  const bool fp4_2 = mat2.scalar_type() == at::kFloat4_e2m1fn_x2;
  TORCH_CHECK(!use_fast_accum || (!fp4_1 && !fp4_2),
              "`use_fast_accum` is not supported when `mat1` or `mat2` tensors have the "
              "`Float4_e2m1fn_x2` dtype.");
  TORCH_CHECK_NOT_IMPLEMENTED(fp4_1 == fp4_2,
                              "torch._scaled_mm on neuron: an MX product of a float4 and a "
                              "float8 operand is not supported (got ",
                              mat1.scalar_type(), " and ", mat2.scalar_type(), ")");
  if (bias) {
    TORCH_CHECK(out_dtype != at::kFloat, "Bias is not supported when out_dtype is set to Float32");
    TORCH_CHECK(bias->scalar_type() == at::kBFloat16 || bias->scalar_type() == at::kHalf,
                "Bias must be BFloat16 or Half, but got ", bias->scalar_type());
    TORCH_CHECK(out_dtype != at::kBFloat16 || bias->scalar_type() == at::kBFloat16,
                "Bias must be BFloat16 to compute ", out_dtype, " output, but got ",
                bias->scalar_type());
    TORCH_CHECK(out_dtype != at::kHalf || bias->scalar_type() == at::kHalf,
                "Bias must be Float16 to compute ", out_dtype, " output, but got ",
                bias->scalar_type());
  }
  const bool supported_out = out_dtype == at::kFloat || out_dtype == at::kBFloat16 ||
                             out_dtype == at::kHalf || out_dtype == at::kFloat8_e4m3fn ||
                             out_dtype == at::kFloat8_e5m2;
  TORCH_CHECK_VALUE(supported_out,
                    "torch._scaled_mm: out_dtype must be float32, bfloat16, "
                    "float16 or a float8 type, got ",
                    out_dtype);
  if (scaling == Scaling::kBlockwise1x32) {
    TORCH_CHECK_NOT_IMPLEMENTED(
        out_dtype == at::kBFloat16 || out_dtype == at::kHalf || out_dtype == at::kFloat,
        "torch._scaled_mm on neuron: MX products give bf16, fp16 or fp32, got ", out_dtype);
  }
  if (scaling == Scaling::kRowwise) {
    TORCH_CHECK_VALUE(
        out_dtype == at::kBFloat16 || out_dtype == at::kHalf || out_dtype == at::kFloat,
        "Only bf16, fp16, and fp32 high precision output types are supported for row-wise "
        "scaling.");
  }
  return scaling;
}

// A scale as the kernels take it: 1-D, one element or one per row/column (contiguous, as the
// checks above and CUDA's require).
kernels::TensorView scale_vector(const at::Tensor& scale) {
  kernels::TensorView view = view_of(scale);
  view.ndim = 1;
  view.sizes[0] = scale.numel();
  view.strides[0] = 1;
  return view;
}

kernels::MxElement mx_element(at::ScalarType type) {
  switch (type) {
    case at::kFloat8_e4m3fn:
      return kernels::MxElement::kFloat8E4M3;
    case at::kFloat8_e5m2:
      return kernels::MxElement::kFloat8E5M2;
    default:
      return kernels::MxElement::kFloat4E2M1;
  }
}

// One MX operand whose rows run along K with unit stride: mat1 itself, or mat2 (column-major
// [K, N]) read as its N columns; the scales in CUDA's swizzled layout.
kernels::MxOperand mx_operand(const at::Tensor& mat, bool columns, const at::Tensor& scale) {
  kernels::MxOperand operand;
  operand.data = mat.const_data_ptr();
  operand.element = mx_element(mat.scalar_type());
  const int row_dim = columns ? 1 : 0;
  operand.rows = mat.size(row_dim);
  operand.k = elements_along(mat, 1 - row_dim);
  operand.row_stride_bytes = mat.stride(row_dim) * static_cast<int64_t>(mat.element_size());
  operand.scales = static_cast<const uint8_t*>(scale.const_data_ptr());
  operand.scale_layout = kernels::MxScaleLayout::kSwizzled;
  return operand;
}

// Queues out = MX product; out already has its final shape and dtype.
void enqueue_mx_scaled_mm(const at::Tensor& out, const at::Tensor& mat1, const at::Tensor& mat2,
                          const at::Tensor& scale_a, const at::Tensor& scale_b,
                          const std::optional<at::Tensor>& bias) {
  if (out.numel() == 0) return;
  const kernels::TensorView out_view = view_of(out);
  const kernels::MxOperand a = mx_operand(mat1, false, scale_a);
  const kernels::MxOperand b = mx_operand(mat2, true, scale_b);
  const bool has_bias = bias.has_value();
  const at::Tensor bias_row = has_bias ? bias->reshape({mat2.size(1)}) : at::Tensor();
  const kernels::TensorView bias_view = has_bias ? view_of(bias_row) : kernels::TensorView();
  stream_for(out).enqueue("aten::_scaled_mm", [=] {
    kernels::mx_scaled_gemm(out_view, a, b, has_bias ? &bias_view : nullptr);
  });
}

// Queues out = scaled product; out already has its final shape and dtype.
void enqueue_scaled_mm(const at::Tensor& out, const at::Tensor& mat1, const at::Tensor& mat2,
                       const at::Tensor& scale_a, const at::Tensor& scale_b,
                       const std::optional<at::Tensor>& bias,
                       const std::optional<at::Tensor>& scale_result) {
  if (out.numel() == 0) return;
  if (mat1.size(1) == 0) {  // as CUDA: zeros, the bias not added
    out.zero_();
    return;
  }
  const kernels::TensorView out_view = view_of(out);
  const kernels::TensorView a_view = view_of(mat1);
  const kernels::TensorView b_view = view_of(mat2);
  const kernels::TensorView scale_a_view = scale_vector(scale_a);
  const kernels::TensorView scale_b_view = scale_vector(scale_b);
  const bool has_bias = bias.has_value();
  const at::Tensor bias_row = has_bias ? bias->reshape({mat2.size(1)}) : at::Tensor();
  const kernels::TensorView bias_view = has_bias ? view_of(bias_row) : kernels::TensorView();
  const bool has_scale_result = scale_result.has_value();
  const kernels::TensorView result_view =
      has_scale_result ? scale_vector(*scale_result) : kernels::TensorView();
  stream_for(out).enqueue("aten::_scaled_mm", [=] {
    kernels::scaled_gemm(
        out_view, a_view, b_view,
        kernels::ProductScales{scale_a_view, scale_b_view, has_bias ? &bias_view : nullptr,
                               has_scale_result ? &result_view : nullptr});
  });
}

void check_scaled_mm_devices(const at::Tensor& out, const at::Tensor& mat1, const at::Tensor& mat2,
                             const at::Tensor& scale_a, const at::Tensor& scale_b,
                             const std::optional<at::Tensor>& bias,
                             const std::optional<at::Tensor>& scale_result) {
  const at::Tensor none;
  check_all_on_device("_scaled_mm", {{&mat1, "mat1"},
                                     {&out, "out"},
                                     {&mat2, "mat2"},
                                     {bias ? &*bias : &none, "bias"},
                                     {&scale_a, "scale_a"},
                                     {&scale_b, "scale_b"},
                                     {scale_result ? &*scale_result : &none, "scale_result"}});
}

}  // namespace

at::Tensor scaled_mm(const at::Tensor& mat1, const at::Tensor& mat2, const at::Tensor& scale_a,
                     const at::Tensor& scale_b, const std::optional<at::Tensor>& bias,
                     const std::optional<at::Tensor>& scale_result,
                     std::optional<at::ScalarType> out_dtype, bool use_fast_accum) {
  OPENNEURON_NATIVE_OP("aten::_scaled_mm");
  const at::ScalarType result_dtype = out_dtype.value_or(mat1.scalar_type());
  const Scaling scaling = check_scaled_mm(mat1, mat2, scale_a, scale_b, bias, scale_result,
                                          result_dtype, use_fast_accum);
  check_scaled_mm_devices(mat1, mat1, mat2, scale_a, scale_b, bias, scale_result);
  const c10::DeviceGuard guard(mat1.device());
  at::Tensor out = at::empty({mat1.size(0), mat2.size(1)}, mat1.options().dtype(result_dtype));
  if (scaling == Scaling::kBlockwise1x32) {
    enqueue_mx_scaled_mm(out, mat1, mat2, scale_a, scale_b, bias);
  } else {
    enqueue_scaled_mm(out, mat1, mat2, scale_a, scale_b, bias, scale_result);
  }
  return out;
}

at::Tensor& scaled_mm_out(const at::Tensor& mat1, const at::Tensor& mat2, const at::Tensor& scale_a,
                          const at::Tensor& scale_b, const std::optional<at::Tensor>& bias,
                          const std::optional<at::Tensor>& scale_result,
                          std::optional<at::ScalarType> out_dtype, bool use_fast_accum,
                          at::Tensor& out) {
  OPENNEURON_NATIVE_OP("aten::_scaled_mm.out");
  const Scaling scaling = check_scaled_mm(mat1, mat2, scale_a, scale_b, bias, scale_result,
                                          out.scalar_type(), use_fast_accum);
  TORCH_CHECK_VALUE(!out_dtype || *out_dtype == out.scalar_type(),
                    "out_dtype must match output matrix type");
  check_scaled_mm_devices(out, mat1, mat2, scale_a, scale_b, bias, scale_result);
  const c10::DeviceGuard guard(mat1.device());
  at::native::resize_output(out, {mat1.size(0), mat2.size(1)});
  if (scaling == Scaling::kBlockwise1x32) {
    enqueue_mx_scaled_mm(out, mat1, mat2, scale_a, scale_b, bias);
  } else {
    enqueue_scaled_mm(out, mat1, mat2, scale_a, scale_b, bias, scale_result);
  }
  return out;
}

at::Tensor scaled_mm_v2(const at::Tensor& mat1, const at::Tensor& mat2, at::TensorList scale_a,
                        at::IntArrayRef recipe_a, at::IntArrayRef swizzle_a, at::TensorList scale_b,
                        at::IntArrayRef recipe_b, at::IntArrayRef swizzle_b,
                        const std::optional<at::Tensor>& bias,
                        std::optional<at::ScalarType> out_dtype, at::IntArrayRef contraction_dim,
                        bool use_fast_accum) {
  OPENNEURON_NATIVE_OP("aten::_scaled_mm_v2");
  using at::blas::ScalingType;
  using at::blas::SwizzleType;
  TORCH_CHECK_VALUE(scale_a.size() == recipe_a.size() && scale_b.size() == recipe_b.size(),
                    "_scaled_mm_v2: each scale needs one recipe");
  TORCH_CHECK_NOT_IMPLEMENTED(
      contraction_dim.empty() ||
          (contraction_dim.size() == 2 && contraction_dim[0] == 1 && contraction_dim[1] == 0),
      "torch._scaled_mm_v2 on neuron contracts mat1's dim 1 with mat2's "
      "dim 0 only, got contraction_dim ",
      contraction_dim);
  const auto single = [](at::IntArrayRef recipes, ScalingType type) {
    return recipes.size() == 1 && recipes[0] == static_cast<int64_t>(type);
  };
  const bool tensorwise =
      single(recipe_a, ScalingType::TensorWise) && single(recipe_b, ScalingType::TensorWise);
  const bool rowwise =
      single(recipe_a, ScalingType::RowWise) && single(recipe_b, ScalingType::RowWise);
  if (tensorwise || rowwise) {  // the scales as _scaled_mm takes them
    return scaled_mm(mat1, mat2, scale_a[0], scale_b[0], bias, std::nullopt, out_dtype,
                     use_fast_accum);
  }
  const bool mx =
      single(recipe_a, ScalingType::BlockWise1x32) && single(recipe_b, ScalingType::BlockWise1x32);
  TORCH_CHECK_NOT_IMPLEMENTED(mx,
                              "torch._scaled_mm_v2 on neuron supports tensor-wise, row-wise and "
                              "MX (BlockWise1x32) recipes; got recipes ",
                              recipe_a, " and ", recipe_b);
  const auto swizzled = [](at::IntArrayRef swizzle) {
    return swizzle.size() == 1 && swizzle[0] == static_cast<int64_t>(SwizzleType::SWIZZLE_32_4_4);
  };
  TORCH_CHECK_NOT_IMPLEMENTED(swizzled(swizzle_a) && swizzled(swizzle_b),
                              "torch._scaled_mm_v2 on neuron takes MX scales in the SWIZZLE_32_4_4 "
                              "layout (as CUDA's cuBLAS does); got swizzles ",
                              swizzle_a, " and ", swizzle_b);
  const bool fp8 =
      mat1.scalar_type() == at::kFloat8_e4m3fn && mat2.scalar_type() == at::kFloat8_e4m3fn;
  const bool fp4 =
      mat1.scalar_type() == at::kFloat4_e2m1fn_x2 && mat2.scalar_type() == at::kFloat4_e2m1fn_x2;
  TORCH_CHECK_VALUE(fp8 || fp4,
                    "MX products need float8_e4m3fn or float4_e2m1fn_x2 operands of one kind, got ",
                    mat1.scalar_type(), " and ", mat2.scalar_type());
  TORCH_CHECK_VALUE(
      is_blockwise_1x32_scale(mat1, scale_a[0]) && is_blockwise_1x32_scale(mat2.t(), scale_b[0]),
      "MX scales must be float8_e8m0fnu, contiguous, with ",
      round_up(mat1.size(0), 128) * round_up(ceil_div(elements_along(mat1, 1), 32), 4),
      " elements for mat1 and ",
      round_up(mat2.size(1), 128) * round_up(ceil_div(elements_along(mat2, 0), 32), 4),
      " for mat2; got ", scale_a[0].scalar_type(), " ", scale_a[0].sizes(), " and ",
      scale_b[0].scalar_type(), " ", scale_b[0].sizes());
  const at::ScalarType result_dtype = out_dtype.value_or(at::kBFloat16);
  check_scaled_mm(mat1, mat2, scale_a[0], scale_b[0], bias, std::nullopt, result_dtype,
                  use_fast_accum);
  check_scaled_mm_devices(mat1, mat1, mat2, scale_a[0], scale_b[0], bias, std::nullopt);
  const c10::DeviceGuard guard(mat1.device());
  at::Tensor out = at::empty({mat1.size(0), mat2.size(1)}, mat1.options().dtype(result_dtype));
  enqueue_mx_scaled_mm(out, mat1, mat2, scale_a[0], scale_b[0], bias);
  return out;
}

namespace {

// CUDA's check of one grouped operand's row-wise scales (`dim`: 0 for rows of a, 1 for
// columns of b; the 2-D x 2-D form holds one set per group, `per_group` of them).
void check_grouped_scale(const at::Tensor& mat, const at::Tensor& scale, int dim, int arg,
                         int64_t per_group) {
  if (mat.dim() == 2) {
    TORCH_CHECK(scale.dim() == 1, "scale must be a 1D tensor, but got ", scale.dim(), "D, arg ",
                arg);
    TORCH_CHECK(scale.is_contiguous(), "scale must be contiguous for arg ", arg);
    TORCH_CHECK(scale.size(0) == mat.size(dim) * per_group,
                "scale must have the same length as mat for arg ", arg);
  } else {
    TORCH_CHECK(scale.dim() == 2, "scale must be a 2D tensor, but got ", scale.dim(), "D for arg ",
                arg);
    TORCH_CHECK(scale.stride(1) == 1, "scale must be contiguous in the last dimension for arg ",
                arg);
    TORCH_CHECK(scale.size(0) == mat.size(0),
                "scale must have the same batch dimension as mat for arg ", arg);
    TORCH_CHECK(scale.size(1) == mat.size(1 + dim),
                "scale must have the same first dimension as mat for arg ", arg);
  }
}

}  // namespace

at::Tensor scaled_grouped_mm(const at::Tensor& mat_a, const at::Tensor& mat_b,
                             const at::Tensor& scale_a, const at::Tensor& scale_b,
                             const std::optional<at::Tensor>& offs,
                             const std::optional<at::Tensor>& bias,
                             const std::optional<at::Tensor>& scale_result,
                             std::optional<at::ScalarType> out_dtype, bool /*use_fast_accum*/) {
  OPENNEURON_NATIVE_OP("aten::_scaled_grouped_mm");
  TORCH_CHECK_VALUE(mat_a.dim() == 2 || mat_a.dim() == 3, "mat_a has to be 2 or 3d");
  TORCH_CHECK_VALUE(mat_b.dim() == 2 || mat_b.dim() == 3, "mat_b has to be 2 or 3d");
  TORCH_CHECK_VALUE(!at::native::check_valid_strides_and_return_transposed(mat_a),
                    "Expected mat1 to not be transposed");
  TORCH_CHECK_VALUE(at::native::check_valid_strides_and_return_transposed(mat_b),
                    "Expected mat2 to be transposed");
  const bool a_is_2d = mat_a.dim() == 2;
  const bool b_is_2d = mat_b.dim() == 2;
  if (!a_is_2d || !b_is_2d) {
    TORCH_CHECK_VALUE(mat_a.size(-1) == mat_b.size(-2),
                      "contraction dimension of mat_a and mat_b must match");
  }
  TORCH_CHECK_VALUE(mat_a.size(-1) % 16 == 0,
                    "Expected trailing dimension of mat_a to be divisible by 16 but got mat1 "
                    "shape: (",
                    mat_a.sizes(), ").");
  TORCH_CHECK_VALUE(mat_b.size(-2) % 16 == 0 && mat_b.size(-1) % 16 == 0,
                    "Expected mat_b shape to be divisible by 16 but got mat_b shape: (",
                    mat_b.sizes(), ").");
  TORCH_CHECK_VALUE(!bias.has_value(), "Bias not supported yet");
  TORCH_CHECK_VALUE(!scale_result.has_value(), "Scale result not supported yet");
  TORCH_CHECK_VALUE(offs.has_value() == (a_is_2d || b_is_2d),
                    "Have to provide offsets if there is a 2d matrix");
  if (offs.has_value()) {
    TORCH_CHECK_VALUE(offs->dim() == 1, "offs has to be 1D");
    TORCH_CHECK_VALUE(offs->scalar_type() == at::kInt, "Offsets have to be int32");
  }
  TORCH_CHECK_NOT_IMPLEMENTED(
      scale_a.scalar_type() != at::kFloat8_e8m0fnu && scale_b.scalar_type() != at::kFloat8_e8m0fnu,
      "torch._scaled_grouped_mm on neuron supports row-wise fp32 scales; MXFP8 "
      "(float8_e8m0fnu) block scales are not implemented");
  TORCH_CHECK_VALUE(scale_a.scalar_type() == at::kFloat && scale_b.scalar_type() == at::kFloat,
                    "For FP8 tensorwise and rowwise, both scales must both be float32 tensors. "
                    "For MXFP8, scales must both be float8_e8m0fnu tensors.");
  const int64_t per_group = (a_is_2d && b_is_2d) ? offs->size(0) : 1;
  check_grouped_scale(mat_a, scale_a, 0, 0, per_group);
  check_grouped_scale(mat_b, scale_b, 1, 1, per_group);
  const at::ScalarType result_dtype = out_dtype.value_or(at::kBFloat16);
  TORCH_CHECK_VALUE(result_dtype == at::kBFloat16,
                    "Only bf16 high precision output types are supported for grouped gemm");
  TORCH_CHECK_VALUE(mat_a.scalar_type() == at::kFloat8_e4m3fn,
                    "Expected mat_a to be Float8_e4m3 matrix got ", mat_a.scalar_type());
  TORCH_CHECK_VALUE(mat_b.scalar_type() == at::kFloat8_e4m3fn,
                    "Expected mat_b to be Float8_e4m3 matrix got ", mat_b.scalar_type());
  const at::Tensor offsets = offs.value_or(at::Tensor());
  const at::Tensor none;
  const c10::Device device =
      check_all_on_device("_scaled_grouped_mm", {{&mat_a, "mat_a"},
                                                 {&mat_b, "mat_b"},
                                                 {&scale_a, "scale_a"},
                                                 {&scale_b, "scale_b"},
                                                 {offs ? &offsets : &none, "offs"}});
  const c10::DeviceGuard guard(device);
  // Laid out as CUDA lays it out (rows padded to 16 bytes), so strides match its meta kernel.
  at::Tensor out = at::native::create_grouped_gemm_output_tensor(mat_a, mat_b, offs, result_dtype);
  if (out.numel() == 0) return out;
  const kernels::TensorView out_view = view_of(out);
  const kernels::TensorView a_view = view_of(mat_a);
  const kernels::TensorView b_view = view_of(mat_b);
  const kernels::TensorView scale_a_view = view_of(scale_a);
  const kernels::TensorView scale_b_view = view_of(scale_b);
  const bool has_offsets = offsets.defined();
  const kernels::TensorView offsets_view = has_offsets ? view_of(offsets) : kernels::TensorView();
  stream_for(out).enqueue("aten::_scaled_grouped_mm", [=] {
    kernels::scaled_grouped_gemm(out_view, a_view, b_view, scale_a_view, scale_b_view,
                                 has_offsets ? &offsets_view : nullptr);
  });
  return out;
}

}  // namespace openneuron::bridge
