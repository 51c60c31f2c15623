// The operations of the graph IR and what each means. The reference interpreter executes the
// tensor ops below; `extern` ops name an ATen operator that the runtime's program runner calls.
//
//   pointwise[fn=F, compute=D, p0..p3=...](x[, y[, z]])
//       out = F(x, y, z) elementwise, as kernels::pointwise with PointwiseOp F computing in
//       the compute class of D; inputs broadcast to out's shape; params p0..p3 (absent: unset).
//   cast(x)              out = x converted to out's dtype (kernels::copy's rounding rules).
//   scalar[value=v]      a host scalar of out's dtype, broadcast as a 0-dim tensor.
//   reduce[fn="sum"|"mean"|"amax", dims=[d, ...], keepdim=0|1](x)
//       out = x reduced over `dims` (ascending, at least one) as kernels::reduce (sum, mean) or
//       kernels::reduce_general (Max) compute it; out has x's floating dtype; with keepdim=1 the
//       reduced dims stay as size 1, else they are dropped.
//   fused(inputs...) {body}
//       the body's pointwise/cast/scalar nodes evaluated elementwise over the shape of its
//       outputs (all outputs have one shape); every input broadcasts to it. A body may end with
//       one reduce node: the iteration shape is then the reduce's input shape, which every
//       output but the reduce's has.
//   gemm_epilogue[gemm="mm"|"addmm"|"bmm", alpha=a, beta=b](x, y[, bias], inputs...) {body}
//   gemm_epilogue[gemm="conv", bias=0|1, stride=[s, s], padding=[p, p], dilation=[d, d],
//                 groups=g](x, w[, bias], inputs...) {body}
//       P = alpha * (x @ y) (+ beta * bias for addmm), as kernels::gemm computes it (bmm: a
//       batch of [M, K] @ [K, N]; P may be fp32 for bf16/fp16 operands: the widened product,
//       never rounded to 16 bits), or P = the 2-D convolution of x [N, C, H, W] by w (+ bias
//       when bias=1), as kernels::conv2d_forward computes it, NCHW; then the body evaluated like
//       a fused body, with body input 0 bound to P read at the body's output shape (P's
//       elements in row-major order; a product read directly has P's own shape) and body
//       inputs 1.. bound to `inputs`.
//   extern[target="aten::name", overload="o", args=[...], impure=0|1, view=0|1](inputs...)
//       calls the ATen operator with `args` (Ref attrs point at inputs); impure ops (random,
//       in-place on graph inputs) are never removed, merged or reordered; view=1 marks an op
//       whose result may alias an input (a view, or an in-place op returning its argument);
//       without it the result is a new buffer. cached=1: the runner may return its previous
//       result while every tensor argument is the same tensor with the same data and version
//       (weights concatenated once for merge_sibling_gemms); merged=n counts merged GEMMs.
//   sym[fn="size", dim=d](x) | sym[fn="add"|"sub"|"mul"|"floordiv"|"mod"](a, b) | sym[fn="neg"](a)
//   | sym[fn="const", value=v]
//       host integer arithmetic on sizes (dynamic shapes).
#pragma once

#include <string>

namespace openneuron::compiler::ops {

inline const std::string kPointwise = "pointwise";
inline const std::string kCast = "cast";
inline const std::string kScalar = "scalar";
inline const std::string kFused = "fused";
inline const std::string kGemmEpilogue = "gemm_epilogue";
inline const std::string kExtern = "extern";
inline const std::string kSym = "sym";
inline const std::string kReduce = "reduce";

// True for the elementwise ops (a fused body holds these, and at most one final reduce).
inline bool is_elementwise(const std::string& op) {
  return op == kPointwise || op == kCast || op == kScalar;
}

}  // namespace openneuron::compiler::ops
