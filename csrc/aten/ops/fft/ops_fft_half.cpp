// The torch.fft functions at float16 and complex32, which CUDA accepts. Their front ends
// (CompositeImplicitAutograd) refuse 16-bit inputs on every device but CUDA, XPU and meta
// before any kernel runs, so neuron registers them (and their out= forms) itself: a 16-bit input is
// widened on the device, transformed at float32 (complex64), and the result rounded once to float16
// or complex32, as the conformance reference computes it; the widening and narrowing are ordinary
// casts, so autograd sees through them. Every other dtype runs PyTorch's own front end.
// Registered for PrivateUse1 and AutogradPrivateUse1: a backend kernel hides the composite
// one from the Autograd key too, and inference mode skips the Autograd key.
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/fft_fft.h>
#include <ATen/ops/fft_fft2.h>
#include <ATen/ops/fft_fft2_native.h>
#include <ATen/ops/fft_fft_native.h>
#include <ATen/ops/fft_fftn.h>
#include <ATen/ops/fft_fftn_native.h>
#include <ATen/ops/fft_hfft.h>
#include <ATen/ops/fft_hfft2.h>
#include <ATen/ops/fft_hfft2_native.h>
#include <ATen/ops/fft_hfft_native.h>
#include <ATen/ops/fft_hfftn.h>
#include <ATen/ops/fft_hfftn_native.h>
#include <ATen/ops/fft_ifft.h>
#include <ATen/ops/fft_ifft2.h>
#include <ATen/ops/fft_ifft2_native.h>
#include <ATen/ops/fft_ifft_native.h>
#include <ATen/ops/fft_ifftn.h>
#include <ATen/ops/fft_ifftn_native.h>
#include <ATen/ops/fft_ihfft.h>
#include <ATen/ops/fft_ihfft2.h>
#include <ATen/ops/fft_ihfft2_native.h>
#include <ATen/ops/fft_ihfft_native.h>
#include <ATen/ops/fft_ihfftn.h>
#include <ATen/ops/fft_ihfftn_native.h>
#include <ATen/ops/fft_irfft.h>
#include <ATen/ops/fft_irfft2.h>
#include <ATen/ops/fft_irfft2_native.h>
#include <ATen/ops/fft_irfft_native.h>
#include <ATen/ops/fft_irfftn.h>
#include <ATen/ops/fft_irfftn_native.h>
#include <ATen/ops/fft_rfft.h>
#include <ATen/ops/fft_rfft2.h>
#include <ATen/ops/fft_rfft2_native.h>
#include <ATen/ops/fft_rfft_native.h>
#include <ATen/ops/fft_rfftn.h>
#include <ATen/ops/fft_rfftn_native.h>
#include <torch/library.h>

namespace openneuron::bridge {
namespace {

at::ScalarType widened(at::ScalarType dtype) {
  return dtype == at::kHalf ? at::kFloat : at::kComplexFloat;
}

at::ScalarType narrowed(at::ScalarType dtype) {
  return dtype == at::kComplexFloat ? at::kComplexHalf : at::kHalf;
}

// One torch.fft function: `composite` is PyTorch's front end, `dispatching` the same function
// through the dispatcher (the widened call comes back here and takes the composite).
// `real_input`: the transform takes real input only (a complex32 one gets the front end's own
// error, naming complex32).
template <typename Signature, Signature* composite, Signature* dispatching, bool real_input>
struct HalfFft;

template <typename... Args, at::Tensor (*composite)(const at::Tensor&, Args...),
          at::Tensor (*dispatching)(const at::Tensor&, Args...), bool real_input>
struct HalfFft<at::Tensor(const at::Tensor&, Args...), composite, dispatching, real_input> {
  static at::Tensor call(const at::Tensor& self, Args... args) {
    const at::ScalarType dtype = self.scalar_type();
    const bool widen = dtype == at::kHalf || (dtype == at::kComplexHalf && !real_input);
    if (!widen) return composite(self, args...);
    const at::Tensor result = dispatching(self.to(widened(dtype)), args...);
    return result.to(narrowed(result.scalar_type()));
  }
};

// The out= form: the composite runs on widened operands into a widened stand-in for `out` (so
// its own checks of the input and of out's kind apply; a wrong kind is named by the stand-in's
// dtype), then out takes the result rounded to 16 bits.
template <typename Signature, Signature* composite_out, bool real_input>
struct HalfFftOut;

template <typename A, typename B, typename C,
          at::Tensor& (*composite_out)(const at::Tensor&, A, B, C, at::Tensor&), bool real_input>
struct HalfFftOut<at::Tensor&(const at::Tensor&, A, B, C, at::Tensor&), composite_out, real_input> {
  static at::Tensor& call(const at::Tensor& self, A a, B b, C c, at::Tensor& out) {
    const at::ScalarType dtype = self.scalar_type();
    const bool widen = dtype == at::kHalf || (dtype == at::kComplexHalf && !real_input);
    if (!widen) return composite_out(self, a, b, c, out);
    // CUDA computes the 16-bit result (complex32 or float16, by out's kind) and casts it into
    // out; so does this, from a float32 (complex64) stand-in.
    const bool complex_out = at::isComplexType(out.scalar_type());
    at::Tensor stand_in =
        at::empty({0}, out.options().dtype(complex_out ? at::kComplexFloat : at::kFloat));
    composite_out(self.to(widened(dtype)), a, b, c, stand_in);
    at::native::resize_output(out, stand_in.sizes());
    out.copy_(stand_in.to(narrowed(stand_in.scalar_type())));
    return out;
  }
};

#define OPENNEURON_HALF_FFT_OUT(name, real_input)                                              \
  TORCH_FN((HalfFftOut<decltype(at::native::name##_symint_out), at::native::name##_symint_out, \
                       real_input>::call))

#define OPENNEURON_HALF_FFT(name, real_input)                                       \
  TORCH_FN((HalfFft<decltype(at::native::name##_symint), at::native::name##_symint, \
                    at::name##_symint, real_input>::call))

void register_half_ffts(torch::Library& m) {
  m.impl("fft_fft", OPENNEURON_HALF_FFT(fft_fft, false));
  m.impl("fft_ifft", OPENNEURON_HALF_FFT(fft_ifft, false));
  m.impl("fft_rfft", OPENNEURON_HALF_FFT(fft_rfft, true));
  m.impl("fft_irfft", OPENNEURON_HALF_FFT(fft_irfft, false));
  m.impl("fft_hfft", OPENNEURON_HALF_FFT(fft_hfft, false));
  m.impl("fft_ihfft", OPENNEURON_HALF_FFT(fft_ihfft, true));
  m.impl("fft_fft2", OPENNEURON_HALF_FFT(fft_fft2, false));
  m.impl("fft_ifft2", OPENNEURON_HALF_FFT(fft_ifft2, false));
  m.impl("fft_rfft2", OPENNEURON_HALF_FFT(fft_rfft2, true));
  m.impl("fft_irfft2", OPENNEURON_HALF_FFT(fft_irfft2, false));
  m.impl("fft_hfft2", OPENNEURON_HALF_FFT(fft_hfft2, false));
  m.impl("fft_ihfft2", OPENNEURON_HALF_FFT(fft_ihfft2, true));
  m.impl("fft_fftn", OPENNEURON_HALF_FFT(fft_fftn, false));
  m.impl("fft_ifftn", OPENNEURON_HALF_FFT(fft_ifftn, false));
  m.impl("fft_rfftn", OPENNEURON_HALF_FFT(fft_rfftn, true));
  m.impl("fft_irfftn", OPENNEURON_HALF_FFT(fft_irfftn, false));
  m.impl("fft_hfftn", OPENNEURON_HALF_FFT(fft_hfftn, false));
  m.impl("fft_ihfftn", OPENNEURON_HALF_FFT(fft_ihfftn, true));
  m.impl("fft_fft.out", OPENNEURON_HALF_FFT_OUT(fft_fft, false));
  m.impl("fft_ifft.out", OPENNEURON_HALF_FFT_OUT(fft_ifft, false));
  m.impl("fft_rfft.out", OPENNEURON_HALF_FFT_OUT(fft_rfft, true));
  m.impl("fft_irfft.out", OPENNEURON_HALF_FFT_OUT(fft_irfft, false));
  m.impl("fft_hfft.out", OPENNEURON_HALF_FFT_OUT(fft_hfft, false));
  m.impl("fft_ihfft.out", OPENNEURON_HALF_FFT_OUT(fft_ihfft, true));
  m.impl("fft_fft2.out", OPENNEURON_HALF_FFT_OUT(fft_fft2, false));
  m.impl("fft_ifft2.out", OPENNEURON_HALF_FFT_OUT(fft_ifft2, false));
  m.impl("fft_rfft2.out", OPENNEURON_HALF_FFT_OUT(fft_rfft2, true));
  m.impl("fft_irfft2.out", OPENNEURON_HALF_FFT_OUT(fft_irfft2, false));
  m.impl("fft_hfft2.out", OPENNEURON_HALF_FFT_OUT(fft_hfft2, false));
  m.impl("fft_ihfft2.out", OPENNEURON_HALF_FFT_OUT(fft_ihfft2, true));
  m.impl("fft_fftn.out", OPENNEURON_HALF_FFT_OUT(fft_fftn, false));
  m.impl("fft_ifftn.out", OPENNEURON_HALF_FFT_OUT(fft_ifftn, false));
  m.impl("fft_rfftn.out", OPENNEURON_HALF_FFT_OUT(fft_rfftn, true));
  m.impl("fft_irfftn.out", OPENNEURON_HALF_FFT_OUT(fft_irfftn, false));
  m.impl("fft_hfftn.out", OPENNEURON_HALF_FFT_OUT(fft_hfftn, false));
  m.impl("fft_ihfftn.out", OPENNEURON_HALF_FFT_OUT(fft_ihfftn, true));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { register_half_ffts(m); }
TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) { register_half_ffts(m); }

}  // namespace openneuron::bridge
