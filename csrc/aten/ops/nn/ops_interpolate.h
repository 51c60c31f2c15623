// Native interpolation kernels of the neuron device (ops_interpolate.cpp): the upsample_*
// ops and their backward, functional and out= forms, registered in register_nn.cpp.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace openneuron::bridge {

using Scale = std::optional<double>;

at::Tensor upsample_nearest1d(const at::Tensor& self, at::IntArrayRef output_size, Scale scales);
at::Tensor& upsample_nearest1d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                   Scale scales, at::Tensor& out);
at::Tensor upsample_nearest1d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                       at::IntArrayRef input_size, Scale scales);
at::Tensor& upsample_nearest1d_backward_out(const at::Tensor& grad_output,
                                            at::IntArrayRef output_size, at::IntArrayRef input_size,
                                            Scale scales, at::Tensor& grad_input);
at::Tensor upsample_nearest2d(const at::Tensor& self, at::IntArrayRef output_size, Scale scales_h,
                              Scale scales_w);
at::Tensor& upsample_nearest2d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                   Scale scales_h, Scale scales_w, at::Tensor& out);
at::Tensor upsample_nearest2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                       at::IntArrayRef input_size, Scale scales_h, Scale scales_w);
at::Tensor& upsample_nearest2d_backward_out(const at::Tensor& grad_output,
                                            at::IntArrayRef output_size, at::IntArrayRef input_size,
                                            Scale scales_h, Scale scales_w, at::Tensor& grad_input);
at::Tensor upsample_nearest3d(const at::Tensor& self, at::IntArrayRef output_size, Scale scales_d,
                              Scale scales_h, Scale scales_w);
at::Tensor& upsample_nearest3d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                   Scale scales_d, Scale scales_h, Scale scales_w, at::Tensor& out);
at::Tensor upsample_nearest3d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                       at::IntArrayRef input_size, Scale scales_d, Scale scales_h,
                                       Scale scales_w);
at::Tensor& upsample_nearest3d_backward_out(const at::Tensor& grad_output,
                                            at::IntArrayRef output_size, at::IntArrayRef input_size,
                                            Scale scales_d, Scale scales_h, Scale scales_w,
                                            at::Tensor& grad_input);
at::Tensor upsample_nearest_exact1d(const at::Tensor& self, at::IntArrayRef output_size,
                                    Scale scales);
at::Tensor& upsample_nearest_exact1d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                         Scale scales, at::Tensor& out);
at::Tensor upsample_nearest_exact1d_backward(const at::Tensor& grad_output,
                                             at::IntArrayRef output_size,
                                             at::IntArrayRef input_size, Scale scales);
at::Tensor& upsample_nearest_exact1d_backward_out(const at::Tensor& grad_output,
                                                  at::IntArrayRef output_size,
                                                  at::IntArrayRef input_size, Scale scales,
                                                  at::Tensor& grad_input);
at::Tensor upsample_nearest_exact2d(const at::Tensor& self, at::IntArrayRef output_size,
                                    Scale scales_h, Scale scales_w);
at::Tensor& upsample_nearest_exact2d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                         Scale scales_h, Scale scales_w, at::Tensor& out);
at::Tensor upsample_nearest_exact2d_backward(const at::Tensor& grad_output,
                                             at::IntArrayRef output_size,
                                             at::IntArrayRef input_size, Scale scales_h,
                                             Scale scales_w);
at::Tensor& upsample_nearest_exact2d_backward_out(const at::Tensor& grad_output,
                                                  at::IntArrayRef output_size,
                                                  at::IntArrayRef input_size, Scale scales_h,
                                                  Scale scales_w, at::Tensor& grad_input);
at::Tensor upsample_nearest_exact3d(const at::Tensor& self, at::IntArrayRef output_size,
                                    Scale scales_d, Scale scales_h, Scale scales_w);
at::Tensor& upsample_nearest_exact3d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                         Scale scales_d, Scale scales_h, Scale scales_w,
                                         at::Tensor& out);
at::Tensor upsample_nearest_exact3d_backward(const at::Tensor& grad_output,
                                             at::IntArrayRef output_size,
                                             at::IntArrayRef input_size, Scale scales_d,
                                             Scale scales_h, Scale scales_w);
at::Tensor& upsample_nearest_exact3d_backward_out(const at::Tensor& grad_output,
                                                  at::IntArrayRef output_size,
                                                  at::IntArrayRef input_size, Scale scales_d,
                                                  Scale scales_h, Scale scales_w,
                                                  at::Tensor& grad_input);
at::Tensor upsample_linear1d(const at::Tensor& self, at::IntArrayRef output_size,
                             bool align_corners, Scale scales);
at::Tensor& upsample_linear1d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                  bool align_corners, Scale scales, at::Tensor& out);
at::Tensor upsample_linear1d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                      at::IntArrayRef input_size, bool align_corners, Scale scales);
at::Tensor& upsample_linear1d_backward_out(const at::Tensor& grad_output,
                                           at::IntArrayRef output_size, at::IntArrayRef input_size,
                                           bool align_corners, Scale scales,
                                           at::Tensor& grad_input);
at::Tensor upsample_bilinear2d(const at::Tensor& self, at::IntArrayRef output_size,
                               bool align_corners, Scale scales_h, Scale scales_w);
at::Tensor& upsample_bilinear2d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                    bool align_corners, Scale scales_h, Scale scales_w,
                                    at::Tensor& out);
at::Tensor upsample_bilinear2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                        at::IntArrayRef input_size, bool align_corners,
                                        Scale scales_h, Scale scales_w);
at::Tensor& upsample_bilinear2d_backward_out(const at::Tensor& grad_output,
                                             at::IntArrayRef output_size,
                                             at::IntArrayRef input_size, bool align_corners,
                                             Scale scales_h, Scale scales_w,
                                             at::Tensor& grad_input);
at::Tensor upsample_trilinear3d(const at::Tensor& self, at::IntArrayRef output_size,
                                bool align_corners, Scale scales_d, Scale scales_h, Scale scales_w);
at::Tensor& upsample_trilinear3d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                     bool align_corners, Scale scales_d, Scale scales_h,
                                     Scale scales_w, at::Tensor& out);
at::Tensor upsample_trilinear3d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                         at::IntArrayRef input_size, bool align_corners,
                                         Scale scales_d, Scale scales_h, Scale scales_w);
at::Tensor& upsample_trilinear3d_backward_out(const at::Tensor& grad_output,
                                              at::IntArrayRef output_size,
                                              at::IntArrayRef input_size, bool align_corners,
                                              Scale scales_d, Scale scales_h, Scale scales_w,
                                              at::Tensor& grad_input);
at::Tensor upsample_bicubic2d(const at::Tensor& self, at::IntArrayRef output_size,
                              bool align_corners, Scale scales_h, Scale scales_w);
at::Tensor& upsample_bicubic2d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                   bool align_corners, Scale scales_h, Scale scales_w,
                                   at::Tensor& out);
at::Tensor upsample_bicubic2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                       at::IntArrayRef input_size, bool align_corners,
                                       Scale scales_h, Scale scales_w);
at::Tensor& upsample_bicubic2d_backward_out(const at::Tensor& grad_output,
                                            at::IntArrayRef output_size, at::IntArrayRef input_size,
                                            bool align_corners, Scale scales_h, Scale scales_w,
                                            at::Tensor& grad_input);

}  // namespace openneuron::bridge
