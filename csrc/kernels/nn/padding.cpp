// Padding as a gather (forward) and a scatter-add (backward) through one source index per
// output index and dim. Planes (the leading dims) are split across threads; each backward
// plane accumulates in its own fp32 buffer, so no two threads write one element.
#include "kernels/nn/padding.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "kernels/core/element_types.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {
namespace {

// A view as [planes0, planes1, D, H, W]: unit dims stand in for absent leading or spatial dims.
struct Shape5 {
  int64_t sizes[5];
  int64_t strides[5];
};

Shape5 as_5d(const TensorView& view, int spatial_dims) {
  Shape5 s{{1, 1, 1, 1, 1}, {0, 0, 0, 0, 0}};
  const int lead = view.ndim - spatial_dims;
  for (int d = 0; d < lead; ++d) {
    s.sizes[2 - lead + d] = view.sizes[d];
    s.strides[2 - lead + d] = view.strides[d];
  }
  for (int d = 0; d < spatial_dims; ++d) {
    s.sizes[5 - spatial_dims + d] = view.sizes[lead + d];
    s.strides[5 - spatial_dims + d] = view.strides[lead + d];
  }
  return s;
}

// source[o] = the input index output index o copies, for one dim.
std::vector<int64_t> source_indices(PadMode mode, int64_t in_size, int64_t out_size,
                                    int64_t before) {
  std::vector<int64_t> source(static_cast<size_t>(out_size));
  for (int64_t o = 0; o < out_size; ++o) {
    int64_t i = o - before;
    if (mode == PadMode::Replicate) {
      i = std::clamp<int64_t>(i, 0, in_size - 1);
    } else if (i < 0) {
      i = -i;
    } else if (i >= in_size) {
      i = 2 * (in_size - 1) - i;
    }
    source[static_cast<size_t>(o)] = i;
  }
  return source;
}

struct Plan {
  Shape5 small, large;             // the unpadded and the padded view
  std::vector<int64_t> source[3];  // per spatial dim D, H, W (size 1 maps to 0)
};

Plan make_plan(PadMode mode, const TensorView& large, const TensorView& small,
               const PadAmounts& a) {
  const int spatial = a.spatial_dims;
  if (spatial < 1 || spatial > 3 || large.ndim != small.ndim || large.ndim < spatial ||
      large.ndim > spatial + 2 || large.dtype != small.dtype) {
    throw std::invalid_argument(
        "openneuron kernels: pad: views must share dtype and ndim (1-3 padded dims, at most 2 "
        "leading)");
  }
  const int lead = large.ndim - spatial;
  for (int d = 0; d < lead; ++d) {
    if (large.sizes[d] != small.sizes[d]) {
      throw std::invalid_argument("openneuron kernels: pad: leading sizes differ");
    }
  }
  for (int k = 0; k < spatial; ++k) {
    const int64_t in = small.sizes[lead + k];
    const bool fits = large.sizes[lead + k] == in + a.before[k] + a.after[k] &&
                      large.sizes[lead + k] >= 0 && (large.sizes[lead + k] == 0 || in > 0) &&
                      (mode == PadMode::Replicate || (a.before[k] < in && a.after[k] < in));
    if (!fits) {
      throw std::invalid_argument("openneuron kernels: pad: sizes do not match the amounts");
    }
  }
  Plan plan;
  plan.small = as_5d(small, spatial);
  plan.large = as_5d(large, spatial);
  for (int k = 0; k < 3; ++k) {
    const int dim = 2 + k;
    const int spatial_index = k - (3 - spatial);
    const int64_t before = spatial_index >= 0 ? a.before[spatial_index] : 0;
    plan.source[k] = source_indices(mode, plan.small.sizes[dim], plan.large.sizes[dim], before);
  }
  return plan;
}

int64_t plane_count(const Shape5& s) { return s.sizes[0] * s.sizes[1]; }

int64_t plane_offset(const Shape5& s, int64_t plane) {
  return (plane / s.sizes[1]) * s.strides[0] + (plane % s.sizes[1]) * s.strides[1];
}

template <typename T>
void gather(const Plan& p, T* out, const T* in) {
  const Shape5 &o = p.large, &i = p.small;
  const int64_t plane_elements = o.sizes[2] * o.sizes[3] * o.sizes[4];
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, plane_elements));
  parallel_for(0, plane_count(o), grain, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      T* out_plane = out + plane_offset(o, plane);
      const T* in_plane = in + plane_offset(i, plane);
      for (int64_t d = 0; d < o.sizes[2]; ++d) {
        for (int64_t h = 0; h < o.sizes[3]; ++h) {
          T* dst = out_plane + d * o.strides[2] + h * o.strides[3];
          const T* src = in_plane + p.source[0][d] * i.strides[2] + p.source[1][h] * i.strides[3];
          const int64_t* w_source = p.source[2].data();
          const int64_t os = o.strides[4], is = i.strides[4];
          for (int64_t w = 0; w < o.sizes[4]; ++w) dst[w * os] = src[w_source[w] * is];
        }
      }
    }
  });
}

template <typename T, typename Acc>
void scatter_add(const Plan& p, T* grad_in, const T* grad_out) {
  const Shape5 &o = p.large, &i = p.small;
  const int64_t in_elements = i.sizes[2] * i.sizes[3] * i.sizes[4];
  const int64_t out_elements = o.sizes[2] * o.sizes[3] * o.sizes[4];
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, out_elements));
  parallel_for(0, plane_count(o), grain, [&](int64_t begin, int64_t end) {
    std::vector<Acc> sums(static_cast<size_t>(in_elements));
    for (int64_t plane = begin; plane < end; ++plane) {
      std::fill(sums.begin(), sums.end(), Acc(0));
      const T* go_plane = grad_out + plane_offset(o, plane);
      for (int64_t d = 0; d < o.sizes[2]; ++d) {
        for (int64_t h = 0; h < o.sizes[3]; ++h) {
          const T* src = go_plane + d * o.strides[2] + h * o.strides[3];
          Acc* dst = sums.data() + (p.source[0][d] * i.sizes[3] + p.source[1][h]) * i.sizes[4];
          const int64_t* w_source = p.source[2].data();
          const int64_t os = o.strides[4];
          for (int64_t w = 0; w < o.sizes[4]; ++w) {
            dst[w_source[w]] += cast_value<Acc>(src[w * os]);
          }
        }
      }
      T* gi_plane = grad_in + plane_offset(i, plane);
      const Acc* sum = sums.data();
      for (int64_t d = 0; d < i.sizes[2]; ++d) {
        for (int64_t h = 0; h < i.sizes[3]; ++h) {
          T* dst = gi_plane + d * i.strides[2] + h * i.strides[3];
          for (int64_t w = 0; w < i.sizes[4]; ++w) dst[w * i.strides[4]] = cast_value<T>(*sum++);
        }
      }
    }
  });
}

}  // namespace

void pad_forward(PadMode mode, const TensorView& out, const TensorView& input,
                 const PadAmounts& amounts) {
  const Plan plan = make_plan(mode, out, input, amounts);
  if (out.numel() == 0) return;
  // A copy moves bits: dispatch on the element size only.
  switch (element_size(out.dtype)) {
    case 1:
      gather(plan, static_cast<uint8_t*>(out.data), static_cast<const uint8_t*>(input.data));
      return;
    case 2:
      gather(plan, static_cast<uint16_t*>(out.data), static_cast<const uint16_t*>(input.data));
      return;
    case 4:
      gather(plan, static_cast<uint32_t*>(out.data), static_cast<const uint32_t*>(input.data));
      return;
    case 8:
      gather(plan, static_cast<uint64_t*>(out.data), static_cast<const uint64_t*>(input.data));
      return;
    default:
      throw std::invalid_argument("openneuron kernels: pad: unsupported element size");
  }
}

void pad_backward(PadMode mode, const TensorView& grad_input, const TensorView& grad_out,
                  const PadAmounts& amounts) {
  const Plan plan = make_plan(mode, grad_out, grad_input, amounts);
  if (grad_input.numel() == 0) return;
  visit_floating_dtype(grad_input.dtype, "pad_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
    scatter_add<T, Acc>(plan, static_cast<T*>(grad_input.data),
                        static_cast<const T*>(grad_out.data));
  });
}

}  // namespace openneuron::kernels
