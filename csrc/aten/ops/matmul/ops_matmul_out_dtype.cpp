// The `.dtype` overloads of mm, bmm, addmm and baddbmm, as CUDA defines them: the product of
// two same-dtype operands written at out_dtype (fp32 for fp16/bf16 operands keeps the fp32
// accumulator unrounded). Libraries that take CUDA's path call them; the CPU has no kernel.
#include "aten/ops/matmul/ops_matmul_out_dtype.h"

#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/baddbmm.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm.h>
#include <c10/core/DeviceGuard.h>

#include <vector>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/ops/matmul/gemm_launch.h"

namespace openneuron::bridge {

namespace {

void check_out_dtype(at::ScalarType operands, at::ScalarType out_dtype) {
  TORCH_CHECK(out_dtype == operands ||
                  (out_dtype == at::kFloat && (operands == at::kHalf || operands == at::kBFloat16)),
              "out_dtype must be the same as input dtype or fp32 for fp16/bf16 inputs");
}

// fp32 and 16-bit floats go to the fp32-accumulating GEMM here; any other dtype (then equal to
// out_dtype) is the plain product, run as the op without out_dtype runs it (integers natively,
// float64 on the host, and dtypes no kernel takes refused at the call).
bool is_float_gemm_dtype(at::ScalarType type) {
  return type == at::kFloat || type == at::kBFloat16 || type == at::kHalf;
}

void check_given_out(const at::Tensor& out, at::ScalarType out_dtype) {
  TORCH_CHECK(out_dtype == out.scalar_type(),
              "out_dtype must be the same as the dtype of the provided out tensor");
}

void check_matrices(const at::Tensor& a, const at::Tensor& b, const char* first) {
  TORCH_CHECK(a.dim() == 2, first, " must be a matrix, got ", a.dim(), "-D tensor");
  TORCH_CHECK(b.dim() == 2, "mat2 must be a matrix, got ", b.dim(), "-D tensor");
  TORCH_CHECK(a.size(1) == b.size(0), "mat1 and mat2 shapes cannot be multiplied (", a.size(0), "x",
              a.size(1), " and ", b.size(0), "x", b.size(1), ")");
}

// CUDA's checks of bmm/baddbmm with out_dtype; `self` is baddbmm's added term, or null.
void check_batches(const at::Tensor& batch1, const at::Tensor& batch2, at::ScalarType out_dtype,
                   const at::Tensor* self) {
  TORCH_CHECK(batch1.dim() == 3, "batch1 must be a 3D tensor");
  TORCH_CHECK(batch2.dim() == 3, "batch2 must be a 3D tensor");
  const int64_t batches = batch1.size(0);
  const int64_t depth = batch1.size(2);
  TORCH_CHECK(batch2.size(0) == batches && batch2.size(1) == depth,
              "Expected size for first two dimensions of batch2 tensor to be: [", batches, ", ",
              depth, "] but got: [", batch2.size(0), ", ", batch2.size(1), "].");
  TORCH_CHECK(batch1.scalar_type() == batch2.scalar_type(),
              "batch1 and batch2 must have the same dtype");
  check_out_dtype(batch1.scalar_type(), out_dtype);
  if (self != nullptr) {
    TORCH_CHECK(self->dim() == 3, "self must be a 3D tensor");
    TORCH_CHECK(self->sizes() == c10::IntArrayRef({batches, batch1.size(1), batch2.size(2)}),
                "self must have the same shape as the output");
  }
}

}  // namespace

at::Tensor& mm_out_dtype_out(const at::Tensor& self, const at::Tensor& mat2,
                             at::ScalarType out_dtype, at::Tensor& out) {
  const c10::Device device = check_same_device("aten::mm", {&self, &mat2, &out});
  check_matrices(self, mat2, "self");
  check_given_out(out, out_dtype);
  TORCH_CHECK(self.scalar_type() == mat2.scalar_type(), "input dtypes must be the same");
  check_out_dtype(self.scalar_type(), out_dtype);
  if (!is_float_gemm_dtype(self.scalar_type())) return at::mm_out(out, self, mat2);
  OPENNEURON_NATIVE_OP("aten::mm.dtype_out");
  const c10::DeviceGuard guard(device);
  at::native::resize_output(out, {self.size(0), mat2.size(1)});
  launch_gemm("aten::mm.dtype", out, self, mat2, at::Tensor(), 0, 1);
  return out;
}

at::Tensor mm_out_dtype(const at::Tensor& self, const at::Tensor& mat2, at::ScalarType out_dtype) {
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = at::empty({0}, self.options().dtype(out_dtype));
  return mm_out_dtype_out(self, mat2, out_dtype, out);
}

at::Tensor& bmm_out_dtype_out(const at::Tensor& self, const at::Tensor& mat2,
                              at::ScalarType out_dtype, at::Tensor& out) {
  const c10::Device device = check_same_device("aten::bmm", {&self, &mat2, &out});
  check_batches(self, mat2, out_dtype, nullptr);
  check_given_out(out, out_dtype);
  if (!is_float_gemm_dtype(self.scalar_type())) return at::bmm_out(out, self, mat2);
  OPENNEURON_NATIVE_OP("aten::bmm.dtype_out");
  const c10::DeviceGuard guard(device);
  at::native::resize_output(out, {self.size(0), self.size(1), mat2.size(2)});
  launch_gemm("aten::bmm.dtype", out, self, mat2, at::Tensor(), 0, 1);
  return out;
}

at::Tensor bmm_out_dtype(const at::Tensor& self, const at::Tensor& mat2, at::ScalarType out_dtype) {
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = at::empty({0}, self.options().dtype(out_dtype));
  return bmm_out_dtype_out(self, mat2, out_dtype, out);
}

at::Tensor& addmm_out_dtype_out(const at::Tensor& self, const at::Tensor& mat1,
                                const at::Tensor& mat2, at::ScalarType out_dtype,
                                const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  const c10::Device device = check_same_device("aten::addmm", {&self, &mat1, &mat2, &out});
  TORCH_CHECK(self.scalar_type() == mat2.scalar_type(),
              "self and mat2 must have the same dtype, but got ", self.scalar_type(), " and ",
              mat2.scalar_type());
  TORCH_CHECK(mat1.scalar_type() == mat2.scalar_type(),
              "mat1 and mat2 must have the same dtype, but got ", mat1.scalar_type(), " and ",
              mat2.scalar_type());
  check_matrices(mat1, mat2, "mat1");
  check_given_out(out, out_dtype);
  check_out_dtype(self.scalar_type(), out_dtype);
  const std::vector<int64_t> shape = {mat1.size(0), mat2.size(1)};
  TORCH_CHECK(at::is_expandable_to(self.sizes(), shape), "addmm: self of shape ", self.sizes(),
              " cannot be broadcast to ", c10::IntArrayRef(shape));
  if (!is_float_gemm_dtype(mat1.scalar_type())) {
    return at::addmm_out(out, self, mat1, mat2, beta, alpha);
  }
  OPENNEURON_NATIVE_OP("aten::addmm.dtype_out");
  const c10::DeviceGuard guard(device);
  at::native::resize_output(out, shape);
  launch_gemm("aten::addmm.dtype", out, mat1, mat2, self, beta, alpha);
  return out;
}

at::Tensor addmm_out_dtype(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                           at::ScalarType out_dtype, const at::Scalar& beta,
                           const at::Scalar& alpha) {
  const c10::DeviceGuard guard(mat1.device());
  at::Tensor out = at::empty({0}, mat1.options().dtype(out_dtype));
  return addmm_out_dtype_out(self, mat1, mat2, out_dtype, beta, alpha, out);
}

at::Tensor& baddbmm_out_dtype_out(const at::Tensor& self, const at::Tensor& batch1,
                                  const at::Tensor& batch2, at::ScalarType out_dtype,
                                  const at::Scalar& beta, const at::Scalar& alpha,
                                  at::Tensor& out) {
  const c10::Device device = check_same_device("aten::baddbmm", {&self, &batch1, &batch2, &out});
  check_batches(batch1, batch2, out_dtype, &self);
  check_given_out(out, out_dtype);
  if (!is_float_gemm_dtype(batch1.scalar_type())) {
    return at::baddbmm_out(out, self, batch1, batch2, beta, alpha);
  }
  OPENNEURON_NATIVE_OP("aten::baddbmm.dtype_out");
  const c10::DeviceGuard guard(device);
  at::native::resize_output(out, self.sizes());
  // The added term is read at out_dtype, as CUDA converts it before the product.
  const at::Tensor added =
      self.scalar_type() == out_dtype || self.scalar_type() == batch1.scalar_type()
          ? self
          : self.to(out_dtype);
  launch_gemm("aten::baddbmm.dtype", out, batch1, batch2, added, beta, alpha);
  return out;
}

at::Tensor baddbmm_out_dtype(const at::Tensor& self, const at::Tensor& batch1,
                             const at::Tensor& batch2, at::ScalarType out_dtype,
                             const at::Scalar& beta, const at::Scalar& alpha) {
  const c10::DeviceGuard guard(batch1.device());
  at::Tensor out = at::empty({0}, batch1.options().dtype(out_dtype));
  return baddbmm_out_dtype_out(self, batch1, batch2, out_dtype, beta, alpha, out);
}

}  // namespace openneuron::bridge
