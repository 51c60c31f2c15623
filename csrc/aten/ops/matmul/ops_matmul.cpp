// Matrix products on the device: mm, addmm, bmm, baddbmm, addbmm, addmv, dot, vdot, addr.
// Floating dtypes run through the fp32-accumulating GEMM; integer dtypes through the
// integer GEMM, which wraps around exactly as the CPU's kernels do.
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/addbmm.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/addmv.h>
#include <ATen/ops/addr_native.h>
#include <ATen/ops/baddbmm.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/dot.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/outer.h>
#include <ATen/ops/vdot.h>
#include <c10/core/DeviceGuard.h>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/matmul/gemm_launch.h"
#include "aten/ops/matmul/ops_matmul_vector.h"
#include "aten/ops/ops.h"
#include "kernels/matmul/integer_gemm.h"
#include "kernels/matmul/matmul.h"

namespace openneuron::bridge {

namespace {

bool is_matmul_dtype(at::ScalarType type) {
  return type == at::kFloat || type == at::kBFloat16 || type == at::kHalf || type == at::kByte ||
         type == at::kChar || type == at::kShort || type == at::kInt || type == at::kLong;
}

bool matmul_is_native(std::initializer_list<const at::Tensor*> tensors) {
  for (const at::Tensor* tensor : tensors) {
    if (tensor->defined() && !is_matmul_dtype(tensor->scalar_type())) return false;
  }
  return true;
}

void check_operands(const char* name, const at::Tensor& a, const at::Tensor& b, int64_t rank) {
  TORCH_CHECK(a.dim() == rank, name, ": self must be a ", rank, "D tensor, got ", a.dim(), "D");
  TORCH_CHECK(b.dim() == rank, name, ": mat2 must be a ", rank, "D tensor, got ", b.dim(), "D");
  TORCH_CHECK(a.scalar_type() == b.scalar_type(),
              "expected m1 and m2 to have the same dtype, but got: ", a.scalar_type(),
              " != ", b.scalar_type());
  TORCH_CHECK(a.size(-1) == b.size(-2), name, ": mat1 and mat2 shapes cannot be multiplied (",
              a.size(-2), "x", a.size(-1), " and ", b.size(-2), "x", b.size(-1), ")");
  if (rank == 3) {
    TORCH_CHECK(a.size(0) == b.size(0), name, ": batch sizes differ (", a.size(0), " and ",
                b.size(0), ")");
  }
}

}  // namespace

void launch_gemm(const char* name, const at::Tensor& out, const at::Tensor& a, const at::Tensor& b,
                 const at::Tensor& bias, const at::Scalar& beta_scalar,
                 const at::Scalar& alpha_scalar) {
  if (out.numel() == 0) return;
  at::Tensor product_a = a;
  at::Tensor product_b = b;
  // The kernel must not read what it writes (e.g. addmm_ where out is also an operand).
  if (out.is_alias_of(a)) product_a = a.clone();
  if (out.is_alias_of(b)) product_b = b.clone();
  const kernels::TensorView out_view = view_of(out);
  const kernels::TensorView a_view = view_of(product_a);
  const kernels::TensorView b_view = view_of(product_b);
  const bool integral = at::isIntegralType(out.scalar_type(), /*includeBool=*/false);
  const bool has_bias = bias.defined() && !(beta_scalar.equal(0));
  kernels::TensorView bias_view;
  if (has_bias) {
    bias_view = broadcast_view(bias.is_alias_of(out) ? bias.clone() : bias, out.sizes());
  }
  if (integral) {
    const int64_t alpha = alpha_scalar.toLong();
    const int64_t beta = beta_scalar.toLong();
    stream_for(out).enqueue(name, [=] {
      kernels::integer_gemm(out_view, a_view, b_view, has_bias ? &bias_view : nullptr, alpha, beta);
    });
    return;
  }
  const double alpha = alpha_scalar.toDouble();
  const double beta = beta_scalar.toDouble();
  stream_for(out).enqueue(name, [=] {
    kernels::gemm(out_view, a_view, b_view, has_bias ? &bias_view : nullptr, alpha, beta);
  });
  // Clones made above are freed on this stream, after the queued gemm in stream order.
}

at::Tensor& mm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  if (!matmul_is_native({&self, &mat2, &out})) return OPENNEURON_FALLBACK(mm_out, self, mat2, out);
  OPENNEURON_NATIVE_OP("aten::mm.out");
  const c10::Device device = check_same_device("aten::mm", {&self, &mat2, &out});
  check_operands("mm", self, mat2, 2);
  const c10::DeviceGuard guard(device);
  at::native::resize_output(out, {self.size(0), mat2.size(1)});
  launch_gemm("aten::mm", out, self, mat2, at::Tensor(), 0.0, 1.0);
  return out;
}

at::Tensor mm(const at::Tensor& self, const at::Tensor& mat2) {
  if (!matmul_is_native({&self, &mat2})) return OPENNEURON_FALLBACK(mm, self, mat2);
  OPENNEURON_NATIVE_OP("aten::mm");
  const c10::Device device = check_same_device("aten::mm", {&self, &mat2});
  check_operands("mm", self, mat2, 2);
  const c10::DeviceGuard guard(device);
  at::Tensor out = at::empty({self.size(0), mat2.size(1)}, self.options());
  launch_gemm("aten::mm", out, self, mat2, at::Tensor(), 0.0, 1.0);
  return out;
}

at::Tensor& addmm_out(const at::Tensor& bias, const at::Tensor& mat1, const at::Tensor& mat2,
                      const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  if (!matmul_is_native({&bias, &mat1, &mat2, &out})) {
    return OPENNEURON_FALLBACK(addmm_out, bias, mat1, mat2, beta, alpha, out);
  }
  OPENNEURON_NATIVE_OP("aten::addmm.out");
  const c10::Device device = check_same_device("aten::addmm", {&bias, &mat1, &mat2, &out});
  check_operands("addmm", mat1, mat2, 2);
  const c10::DeviceGuard guard(device);
  const std::vector<int64_t> shape = {mat1.size(0), mat2.size(1)};
  TORCH_CHECK(at::is_expandable_to(bias.sizes(), shape), "addmm: bias of shape ", bias.sizes(),
              " cannot be broadcast to ", c10::IntArrayRef(shape));
  if (!out.is_same(bias)) at::native::resize_output(out, shape);
  launch_gemm("aten::addmm", out, mat1, mat2, bias, beta, alpha);
  return out;
}

at::Tensor addmm(const at::Tensor& bias, const at::Tensor& mat1, const at::Tensor& mat2,
                 const at::Scalar& beta, const at::Scalar& alpha) {
  if (!matmul_is_native({&bias, &mat1, &mat2})) {
    return OPENNEURON_FALLBACK(addmm, bias, mat1, mat2, beta, alpha);
  }
  const c10::DeviceGuard guard(mat1.device());
  at::Tensor out = at::empty({0}, mat1.options());
  return addmm_out(bias, mat1, mat2, beta, alpha, out);
}

at::Tensor& addmm_(at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                   const at::Scalar& beta, const at::Scalar& alpha) {
  if (!matmul_is_native({&self, &mat1, &mat2})) {
    return OPENNEURON_FALLBACK(addmm_, self, mat1, mat2, beta, alpha);
  }
  TORCH_CHECK(self.dim() == 2 && self.size(0) == mat1.size(0) && self.size(1) == mat2.size(1),
              "addmm_: self of shape ", self.sizes(), " does not match the product shape");
  return addmm_out(self, mat1, mat2, beta, alpha, self);
}

at::Tensor& bmm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  if (!matmul_is_native({&self, &mat2, &out})) return OPENNEURON_FALLBACK(bmm_out, self, mat2, out);
  OPENNEURON_NATIVE_OP("aten::bmm.out");
  const c10::Device device = check_same_device("aten::bmm", {&self, &mat2, &out});
  check_operands("bmm", self, mat2, 3);
  const c10::DeviceGuard guard(device);
  at::native::resize_output(out, {self.size(0), self.size(1), mat2.size(2)});
  launch_gemm("aten::bmm", out, self, mat2, at::Tensor(), 0.0, 1.0);
  return out;
}

at::Tensor bmm(const at::Tensor& self, const at::Tensor& mat2) {
  if (!matmul_is_native({&self, &mat2})) return OPENNEURON_FALLBACK(bmm, self, mat2);
  OPENNEURON_NATIVE_OP("aten::bmm");
  const c10::Device device = check_same_device("aten::bmm", {&self, &mat2});
  check_operands("bmm", self, mat2, 3);
  const c10::DeviceGuard guard(device);
  at::Tensor out = at::empty({self.size(0), self.size(1), mat2.size(2)}, self.options());
  launch_gemm("aten::bmm", out, self, mat2, at::Tensor(), 0.0, 1.0);
  return out;
}

at::Tensor& baddbmm_out(const at::Tensor& bias, const at::Tensor& batch1, const at::Tensor& batch2,
                        const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  if (!matmul_is_native({&bias, &batch1, &batch2, &out})) {
    return OPENNEURON_FALLBACK(baddbmm_out, bias, batch1, batch2, beta, alpha, out);
  }
  OPENNEURON_NATIVE_OP("aten::baddbmm.out");
  const c10::Device device = check_same_device("aten::baddbmm", {&bias, &batch1, &batch2, &out});
  check_operands("baddbmm", batch1, batch2, 3);
  const c10::DeviceGuard guard(device);
  const std::vector<int64_t> shape = {batch1.size(0), batch1.size(1), batch2.size(2)};
  TORCH_CHECK(at::is_expandable_to(bias.sizes(), shape), "baddbmm: self of shape ", bias.sizes(),
              " cannot be broadcast to ", c10::IntArrayRef(shape));
  if (!out.is_same(bias)) at::native::resize_output(out, shape);
  launch_gemm("aten::baddbmm", out, batch1, batch2, bias, beta, alpha);
  return out;
}

at::Tensor baddbmm(const at::Tensor& bias, const at::Tensor& batch1, const at::Tensor& batch2,
                   const at::Scalar& beta, const at::Scalar& alpha) {
  if (!matmul_is_native({&bias, &batch1, &batch2})) {
    return OPENNEURON_FALLBACK(baddbmm, bias, batch1, batch2, beta, alpha);
  }
  const c10::DeviceGuard guard(batch1.device());
  at::Tensor out = at::empty({0}, batch1.options());
  return baddbmm_out(bias, batch1, batch2, beta, alpha, out);
}

at::Tensor& baddbmm_(at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                     const at::Scalar& beta, const at::Scalar& alpha) {
  if (!matmul_is_native({&self, &batch1, &batch2})) {
    return OPENNEURON_FALLBACK(baddbmm_, self, batch1, batch2, beta, alpha);
  }
  TORCH_CHECK(self.dim() == 3 && self.size(0) == batch1.size(0) && self.size(1) == batch1.size(1) &&
                  self.size(2) == batch2.size(2),
              "baddbmm_: self of shape ", self.sizes(), " does not match the product shape");
  return baddbmm_out(self, batch1, batch2, beta, alpha, self);
}

at::Tensor& dot_out(const at::Tensor& self, const at::Tensor& tensor, at::Tensor& out) {
  if (!matmul_is_native({&self, &tensor, &out})) {
    return OPENNEURON_FALLBACK(dot_out, self, tensor, out);
  }
  OPENNEURON_NATIVE_OP("aten::dot.out");
  const c10::Device device = check_same_device("aten::dot", {&self, &tensor, &out});
  TORCH_CHECK(self.dim() == 1 && tensor.dim() == 1, "1D tensors expected, but got ", self.dim(),
              "D and ", tensor.dim(), "D tensors");
  TORCH_CHECK(self.scalar_type() == tensor.scalar_type(),
              "dot : expected both vectors to have same dtype, but found ", self.scalar_type(),
              " and ", tensor.scalar_type());
  TORCH_CHECK(self.numel() == tensor.numel(), "inconsistent tensor size, expected tensor [",
              self.numel(), "] and src [", tensor.numel(),
              "] to have the same number of elements, but got ", self.numel(), " and ",
              tensor.numel(), " elements respectively");
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "dot: expected out of dtype ",
              self.scalar_type(), " but got ", out.scalar_type());
  const c10::DeviceGuard guard(device);
  at::native::resize_output(out, {});
  if (self.numel() == 0) return out.zero_();
  // A 1 x n by n x 1 product: the GEMM accumulates in fp32 like CPU's dot (integers wrap).
  launch_gemm("aten::dot", out.view({1, 1}), self.unsqueeze(0), tensor.unsqueeze(1), at::Tensor(),
              0.0, 1.0);
  return out;
}

at::Tensor dot(const at::Tensor& self, const at::Tensor& tensor) {
  if (!matmul_is_native({&self, &tensor})) return OPENNEURON_FALLBACK(dot, self, tensor);
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = at::empty({}, self.options());
  return dot_out(self, tensor, out);
}

// ---- addmv, vdot, addbmm ---------------------------------------------------------------

at::Tensor& addmv_out(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec,
                      const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  // Mixed dtypes go to the host, whose kernel raises the CPU's error.
  if (!matmul_is_native({&self, &mat, &vec, &out}) || mat.scalar_type() != vec.scalar_type() ||
      self.scalar_type() != mat.scalar_type() || out.scalar_type() != mat.scalar_type()) {
    return OPENNEURON_FALLBACK(addmv_out, self, mat, vec, beta, alpha, out);
  }
  OPENNEURON_NATIVE_OP("aten::addmv.out");
  const c10::Device device = check_same_device("aten::addmv", {&self, &mat, &vec, &out});
  TORCH_CHECK(mat.dim() == 2 && vec.dim() == 1 && self.dim() <= 1,
              "vector + matrix @ vector expected, got ", self.dim(), ", ", mat.dim(), ", ",
              vec.dim());
  TORCH_CHECK(mat.size(1) == vec.size(0) && (mat.size(0) == self.numel() || self.numel() == 1),
              "size mismatch, got input (", self.dim() == 0 ? 1 : self.size(0), "), mat (",
              mat.size(0), "x", mat.size(1), "), vec (", vec.size(0), ")");
  const c10::DeviceGuard guard(device);
  const int64_t rows = mat.size(0);
  if (!out.is_same(self)) at::native::resize_output(out, {rows});
  // An [n, k] @ [k, 1] product whose bias is self as a column.
  const at::Tensor bias = (self.dim() == 0 ? self.reshape({1}) : self).unsqueeze(1);
  launch_gemm("aten::addmv", out.unsqueeze(1), mat, vec.unsqueeze(1), bias, beta, alpha);
  return out;
}

at::Tensor addmv(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec,
                 const at::Scalar& beta, const at::Scalar& alpha) {
  if (!matmul_is_native({&self, &mat, &vec})) {
    return OPENNEURON_FALLBACK(addmv, self, mat, vec, beta, alpha);
  }
  const c10::DeviceGuard guard(mat.device());
  at::Tensor out = at::empty({0}, mat.options());
  return addmv_out(self, mat, vec, beta, alpha, out);
}

at::Tensor& addmv_(at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec,
                   const at::Scalar& beta, const at::Scalar& alpha) {
  // A self of another shape is refused by the CPU's kernel with its own message: the host
  // raises it.
  const bool product_shaped = self.dim() == 1 && mat.dim() == 2 && self.size(0) == mat.size(0);
  if (!matmul_is_native({&self, &mat, &vec}) || !product_shaped) {
    return OPENNEURON_FALLBACK(addmv_, self, mat, vec, beta, alpha);
  }
  return addmv_out(self, mat, vec, beta, alpha, self);
}

// vdot conjugates its first operand: for real dtypes it is dot.
at::Tensor& vdot_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  if (!matmul_is_native({&self, &other, &out})) {
    return OPENNEURON_FALLBACK(vdot_out, self, other, out);
  }
  return bridge::dot_out(self, other, out);
}

at::Tensor vdot(const at::Tensor& self, const at::Tensor& other) {
  if (!matmul_is_native({&self, &other})) return OPENNEURON_FALLBACK(vdot, self, other);
  return bridge::dot(self, other);
}

at::Tensor& addbmm_out(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                       const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  if (!matmul_is_native({&self, &batch1, &batch2, &out}) ||
      batch1.scalar_type() != batch2.scalar_type() || self.scalar_type() != batch1.scalar_type() ||
      out.scalar_type() != batch1.scalar_type()) {
    return OPENNEURON_FALLBACK(addbmm_out, self, batch1, batch2, beta, alpha, out);
  }
  OPENNEURON_NATIVE_OP("aten::addbmm.out");
  const c10::Device device = check_same_device("aten::addbmm", {&self, &batch1, &batch2, &out});
  TORCH_CHECK(batch1.dim() == 3, "batch1 must be a 3D tensor");
  TORCH_CHECK(batch2.dim() == 3, "batch2 must be a 3D tensor");
  TORCH_CHECK(batch1.size(0) == batch2.size(0),
              "batch1 and batch2 must have same number of batches, got ", batch1.size(0), " and ",
              batch2.size(0));
  TORCH_CHECK(batch1.size(2) == batch2.size(1), "Incompatible matrix sizes for bmm (",
              batch1.size(1), "x", batch1.size(2), " and ", batch2.size(1), "x", batch2.size(2),
              ")");
  const c10::DeviceGuard guard(device);
  const int64_t batches = batch1.size(0);
  const int64_t rows = batch1.size(1);
  const int64_t inner = batch1.size(2);
  const int64_t cols = batch2.size(2);
  const std::vector<int64_t> shape = {rows, cols};
  TORCH_CHECK(at::is_expandable_to(self.sizes(), shape), "The expanded size of the tensor (",
              self.sizes(), ") must match the existing size at non-singleton dimension");
  if (!out.is_same(self)) at::native::resize_output(out, shape);
  // The sum over batches of [M,K] @ [K,N] is one [M, B*K] @ [B*K, N] product.
  const at::Tensor lhs = batch1.transpose(0, 1).reshape({rows, batches * inner});
  const at::Tensor rhs = batch2.reshape({batches * inner, cols});
  launch_gemm("aten::addbmm", out, lhs, rhs, self, beta, alpha);
  return out;
}

at::Tensor addbmm(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                  const at::Scalar& beta, const at::Scalar& alpha) {
  if (!matmul_is_native({&self, &batch1, &batch2})) {
    return OPENNEURON_FALLBACK(addbmm, self, batch1, batch2, beta, alpha);
  }
  const c10::DeviceGuard guard(batch1.device());
  at::Tensor out = at::empty({0}, batch1.options());
  return addbmm_out(self, batch1, batch2, beta, alpha, out);
}

at::Tensor& addbmm_(at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                    const at::Scalar& beta, const at::Scalar& alpha) {
  if (!matmul_is_native({&self, &batch1, &batch2}) || batch1.dim() != 3 || batch2.dim() != 3) {
    return OPENNEURON_FALLBACK(addbmm_, self, batch1, batch2, beta, alpha);
  }
  const bool product_shaped =
      self.dim() == 2 && self.size(0) == batch1.size(1) && self.size(1) == batch2.size(2);
  if (product_shaped) return addbmm_out(self, batch1, batch2, beta, alpha, self);
  // A self that only broadcasts to the product is resized to it by the CPU's kernel, after its
  // old values were read as the broadcast bias: the same here, computed before the resize.
  const at::Tensor result = bridge::addbmm(self, batch1, batch2, beta, alpha);
  self.resize_(result.sizes());
  self.copy_(result);
  return self;
}

// ---- addr --------------------------------------------------------------------------------

namespace {

// 16-bit addr with every operand in one dtype: the fp32 path below; anything else keeps
// PyTorch's composite (its type promotion and integer/bool rules).
bool addr_in_fp32(const at::Tensor& self, const at::Tensor& vec1, const at::Tensor& vec2) {
  const at::ScalarType dtype = self.scalar_type();
  return (dtype == at::kHalf || dtype == at::kBFloat16) && vec1.scalar_type() == dtype &&
         vec2.scalar_type() == dtype && vec1.dim() == 1 && vec2.dim() == 1;
}

}  // namespace

at::Tensor& addr_out(const at::Tensor& self, const at::Tensor& vec1, const at::Tensor& vec2,
                     const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  if (!addr_in_fp32(self, vec1, vec2) || out.scalar_type() != self.scalar_type()) {
    // PyTorch's composite (math_addr_out would dispatch back here through at::addr).
    const at::Tensor result = at::native::math_addr(self, vec1, vec2, beta, alpha);
    TORCH_CHECK(at::canCast(result.scalar_type(), out.scalar_type()), "result type ",
                result.scalar_type(), " can't be cast to the desired output type ",
                out.scalar_type());
    if (!out.is_same(self)) at::native::resize_output(out, result.sizes());
    return out.copy_(result);
  }
  OPENNEURON_NATIVE_OP("aten::addr.out");
  const c10::DeviceGuard guard(check_same_device("aten::addr", {&self, &vec1, &vec2, &out}));
  const std::vector<int64_t> shape = {vec1.size(0), vec2.size(0)};
  TORCH_CHECK(at::is_expandable_to(self.sizes(), shape), "addr: self of shape ", self.sizes(),
              " cannot be broadcast to ", c10::IntArrayRef(shape));
  // Computed in fp32 and rounded to the 16-bit dtype once (the design's rule). PyTorch's CPU
  // kernel rounds each product and sum to 16 bits; the conformance arbiter settles the ulps.
  at::Tensor wide = at::outer(vec1.to(at::kFloat), vec2.to(at::kFloat));
  if (alpha.toDouble() != 1.0) wide.mul_(alpha);
  // beta == 0 ignores self entirely (NaN and inf in self do not propagate), as on the CPU.
  if (beta.toDouble() != 0.0) {
    wide.add_(self.to(at::kFloat), beta);
  }
  if (!out.is_same(self)) at::native::resize_output(out, shape);
  out.copy_(wide);
  return out;
}

at::Tensor addr(const at::Tensor& self, const at::Tensor& vec1, const at::Tensor& vec2,
                const at::Scalar& beta, const at::Scalar& alpha) {
  if (!addr_in_fp32(self, vec1, vec2)) return at::native::math_addr(self, vec1, vec2, beta, alpha);
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = at::empty({0}, self.options());
  return addr_out(self, vec1, vec2, beta, alpha, out);
}

}  // namespace openneuron::bridge
