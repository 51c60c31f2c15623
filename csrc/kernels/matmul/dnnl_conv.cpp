// oneDNN convolution: the caller's plain (NCHW, any strides) tensors are reordered into the
// blocked layouts oneDNN's JIT kernels want, per batch piece, on parallel_for threads.
#include "kernels/matmul/dnnl_conv.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <dnnl.hpp>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/core/dense_float.h"
#include "kernels/pointwise/cast.h"
#include "kernels/runtime/dnnl_runtime.h"
#include "kernels/runtime/library_calls.h"
#include "kernels/runtime/parallel_views.h"

namespace openneuron::kernels {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

// Below this many multiply-adds a convolution runs whole on the calling thread: handing a
// piece to another thread costs more than it saves.
constexpr int64_t kMinParallelMacs = int64_t{1} << 21;

using Slot = DnnlBuffer;

memory::data_type dnnl_type(DType dtype) {
  return dtype == DType::BFloat16 ? memory::data_type::bf16 : memory::data_type::f32;
}

// A plain strided layout; a size-1 dim's stride is arbitrary in PyTorch, while oneDNN wants
// it to span the dims inside it.
memory::desc plain_desc(memory::dims dims, memory::dims strides, memory::data_type type) {
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    if (dims[d] != 1) continue;
    memory::dim span = 1;
    for (size_t inner = d + 1; inner < dims.size(); ++inner) {
      span = std::max(span, dims[inner] * strides[inner]);
    }
    strides[d] = span;
  }
  return memory::desc(dims, type, strides);
}

memory::desc activation_desc(const TensorView& view) {
  return plain_desc(memory::dims(view.sizes, view.sizes + 4),
                    memory::dims(view.strides, view.strides + 4), dnnl_type(view.dtype));
}

// oneDNN's grouped weights are [G, O/G, C/G, KH, KW]: the same memory as PyTorch's [O, C/G, KH,
// KW].
memory::dims weights_dims(const TensorView& weight, int64_t groups) {
  const memory::dims plain(weight.sizes, weight.sizes + 4);
  if (groups == 1) return plain;
  return {groups, plain[0] / groups, plain[1], plain[2], plain[3]};
}

memory::desc weights_desc(const TensorView& weight, int64_t groups, memory::data_type type) {
  if (groups == 1) {
    return plain_desc(memory::dims(weight.sizes, weight.sizes + 4),
                      memory::dims(weight.strides, weight.strides + 4), type);
  }
  const int64_t* s = weight.strides;
  return plain_desc(weights_dims(weight, groups),
                    {s[0] * (weight.sizes[0] / groups), s[0], s[1], s[2], s[3]}, type);
}

memory::desc any_desc(const memory::dims& dims, memory::data_type type) {
  return memory::desc(dims, type, Tag::any);
}

// Strides, dilations and paddings in oneDNN's terms (dilation 0 = dense; the right padding
// is what makes the output size exact, which PyTorch's floor division leaves implicit).
struct Geometry {
  memory::dims src, weights, dst, bias;
  memory::dims strides, dilates, pad_left, pad_right;
};

Geometry geometry(const TensorView& input, const TensorView& weight, const TensorView& out,
                  const Conv2dParams& p) {
  Geometry g;
  g.src.assign(input.sizes, input.sizes + 4);
  g.weights = weights_dims(weight, p.groups);
  g.dst.assign(out.sizes, out.sizes + 4);
  g.bias = {out.sizes[1]};
  for (int d = 0; d < 2; ++d) {
    const int64_t extent = (weight.sizes[2 + d] - 1) * p.dilation[d] + 1;
    g.strides.push_back(p.stride[d]);
    g.dilates.push_back(p.dilation[d] - 1);
    g.pad_left.push_back(p.padding[d]);
    g.pad_right.push_back((out.sizes[2 + d] - 1) * p.stride[d] + extent - input.sizes[2 + d] -
                          p.padding[d]);
  }
  return g;
}

// Only oneDNN's JIT convolution kernels count. Reference kernels are far slower than im2col,
// and the gemm-based ones fail to execute ("unimplemented") inside a PyTorch process: torch's
// bundled oneDNN exports a same-named one-time initialiser of the gemm kernels, which the
// dynamic linker binds in place of this library's, leaving its gemm kernel table empty.
bool optimised(const dnnl::primitive_desc_base& pd, memory::data_type type) {
  const std::string impl = pd.impl_info_str();
  if (impl.find("ref") != std::string::npos || impl.find("gemm") != std::string::npos) return false;
  return type != memory::data_type::bf16 || impl.find("bf16") != std::string::npos;
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// One argument of a primitive: the caller's layout, the primitive's, and the reorder between
// them (user -> inner for inputs, inner -> user for outputs) when they differ.
struct Operand {
  memory::desc user, inner;
  dnnl::reorder reorder;
  bool reordered = false;
};

Operand input_operand(const memory::desc& user, const memory::desc& inner) {
  Operand op{user, inner, dnnl::reorder(), user != inner};
  if (op.reordered)
    op.reorder =
        dnnl::reorder(dnnl::reorder::primitive_desc(dnnl_engine(), user, dnnl_engine(), inner));
  return op;
}

Operand output_operand(const memory::desc& user, const memory::desc& inner) {
  Operand op{user, inner, dnnl::reorder(), user != inner};
  if (op.reordered)
    op.reorder =
        dnnl::reorder(dnnl::reorder::primitive_desc(dnnl_engine(), inner, dnnl_engine(), user));
  return op;
}

// The primitive-side memory of an input: the caller's buffer, or its reordered copy in `slot`.
memory bind_input(const Operand& op, void* data, Slot slot) {
  memory user(op.user, dnnl_engine(), data);
  if (!op.reordered) return user;
  memory inner(op.inner, dnnl_engine(), dnnl_thread_buffer(slot, op.inner.get_size()));
  op.reorder.execute(dnnl_thread_stream(), user, inner);
  return inner;
}

memory bind_output(const Operand& op, void* data, Slot slot) {
  if (!op.reordered) return memory(op.user, dnnl_engine(), data);
  return memory(op.inner, dnnl_engine(), dnnl_thread_buffer(slot, op.inner.get_size()));
}

void finish_output(const Operand& op, memory inner, void* data) {
  if (!op.reordered) return;
  memory user(op.user, dnnl_engine(), data);
  op.reorder.execute(dnnl_thread_stream(), inner, user);
}

memory scratchpad(const memory::desc& desc) {
  return memory(desc, dnnl_engine(), dnnl_thread_buffer(Slot::kConvScratchpad, desc.get_size()));
}

// ---------------------------------------------------------------- plan cache

// A problem's identity: kind, piece index (pieces run concurrently, and one primitive's
// executions serialise), every view's dtype/sizes/strides and the parameters.
using Key = std::vector<int64_t>;

struct KeyHash {
  size_t operator()(const Key& key) const {
    uint64_t hash = 1469598103934665603ULL;  // FNV-1a over the words
    for (int64_t word : key) hash = (hash ^ static_cast<uint64_t>(word)) * 1099511628211ULL;
    return static_cast<size_t>(hash);
  }
};

void append(Key& key, const TensorView* view) {
  if (view == nullptr) {
    key.push_back(-1);
    return;
  }
  key.push_back(static_cast<int64_t>(view->dtype) << 8 | view->ndim);
  for (int d = 0; d < view->ndim; ++d) {
    key.push_back(view->sizes[d]);
    key.push_back(view->strides[d]);
  }
}

void append(Key& key, const Conv2dParams& p) {
  key.insert(key.end(), {p.stride[0], p.stride[1], p.padding[0], p.padding[1], p.dilation[0],
                         p.dilation[1], p.groups});
}

// Plans (primitives and reorders) by problem; nullptr records a problem oneDNN declines.
template <class Plan>
class PlanCache {
 public:
  template <class Create>
  std::shared_ptr<const Plan> get(const Key& key, const Create& create) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = plans_.find(key);
    if (found != plans_.end()) return found->second;
    if (plans_.size() > 256) plans_.clear();  // shapes churn (e.g. dynamic batch): start over
    std::shared_ptr<const Plan> plan;
    try {
      plan = create();
    } catch (const dnnl::error&) {
      plan = nullptr;
    }
    plans_.emplace(key, plan);
    return plan;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<Key, std::shared_ptr<const Plan>, KeyHash> plans_;
};

// ---------------------------------------------------------------- batch pieces

TensorView batch_slice(const TensorView& view, int64_t begin, int64_t length) {
  return slice_view(view, 0, begin, begin + length);
}

struct Pieces {
  int64_t count, chunk, batch;
  int64_t begin(int64_t piece) const { return piece * chunk; }
  int64_t length(int64_t piece) const { return std::min(chunk, batch - piece * chunk); }
};

// One piece per thread when the work is worth splitting, each a contiguous range of samples.
Pieces split_batch(const TensorView& input, const TensorView& weight, const TensorView& out) {
  const int64_t batch = input.sizes[0];
  const int64_t macs = out.numel() * weight.sizes[1] * weight.sizes[2] * weight.sizes[3];
  const int64_t wanted =
      macs < kMinParallelMacs ? 1 : std::min<int64_t>(kernel_thread_count(), batch);
  const int64_t chunk = (batch + wanted - 1) / wanted;
  return {(batch + chunk - 1) / chunk, chunk, batch};
}

// Dense fp32 copy of a [O] bias (or the view itself when already so).
class BiasFloats {
 public:
  explicit BiasFloats(const TensorView* bias) {
    if (bias == nullptr) return;
    if (bias->dtype == DType::Float32 && bias->is_contiguous()) {
      data_ = static_cast<float*>(bias->data);
      return;
    }
    data_ = buffer_.acquire(static_cast<size_t>(bias->numel()), /*zero=*/false);
    copy(dense_view_like(data_, DType::Float32, *bias), *bias);
  }
  float* data() const { return data_; }

 private:
  ScratchFloats buffer_;
  float* data_ = nullptr;
};

// ---------------------------------------------------------------- forward

struct ForwardPlan {
  dnnl::convolution_forward conv;
  Operand src, weights, dst;
  memory::desc bias;  // fp32 [O], or empty when the convolution has none
  memory::desc scratchpad;
};

PlanCache<ForwardPlan>& forward_plans() {
  static auto* cache = new PlanCache<ForwardPlan>();
  return *cache;
}

std::shared_ptr<const ForwardPlan> create_forward_plan(const TensorView& out,
                                                       const TensorView& input,
                                                       const TensorView& weight, bool has_bias,
                                                       const Conv2dParams& p) {
  const Geometry g = geometry(input, weight, out, p);
  const memory::data_type type = dnnl_type(out.dtype);
  auto plan = std::make_shared<ForwardPlan>();
  plan->bias = has_bias ? memory::desc(g.bias, memory::data_type::f32, Tag::x) : memory::desc();
  const dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, any_desc(g.src, type),
      any_desc(g.weights, type), plan->bias, any_desc(g.dst, type), g.strides, g.dilates,
      g.pad_left, g.pad_right);
  const dnnl::convolution_forward::primitive_desc pd(desc, user_scratchpad(), dnnl_engine());
  if (!optimised(pd, type)) return nullptr;
  plan->conv = dnnl::convolution_forward(pd);
  plan->src = input_operand(activation_desc(input), pd.src_desc());
  plan->weights = input_operand(weights_desc(weight, p.groups, type), pd.weights_desc());
  plan->dst = output_operand(activation_desc(out), pd.dst_desc());
  plan->scratchpad = pd.scratchpad_desc();
  return plan;
}

void run_forward(const ForwardPlan& plan, const TensorView& out, const TensorView& input,
                 const TensorView& weight, float* bias) {
  const memory src = bind_input(plan.src, input.data, Slot::kConvSrc);
  const memory weights = bind_input(plan.weights, weight.data, Slot::kConvWeights);
  const memory dst = bind_output(plan.dst, out.data, Slot::kConvDst);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src},
                                       {DNNL_ARG_WEIGHTS, weights},
                                       {DNNL_ARG_DST, dst},
                                       {DNNL_ARG_SCRATCHPAD, scratchpad(plan.scratchpad)}};
  if (bias != nullptr) args.emplace(DNNL_ARG_BIAS, memory(plan.bias, dnnl_engine(), bias));
  plan.conv.execute(dnnl_thread_stream(), args);
  finish_output(plan.dst, dst, out.data);
  dnnl_thread_stream().wait();
}

// Views are fp32 or bf16 alike, with positive strides.
bool forward_native(const TensorView& out, const TensorView& input, const TensorView& weight,
                    const TensorView* bias, const Conv2dParams& params) {
  const OneOpenMPThread one_openmp_thread;
  const Pieces pieces = split_batch(input, weight, out);
  std::vector<std::shared_ptr<const ForwardPlan>> plans;
  for (int64_t piece = 0; piece < pieces.count; ++piece) {
    const TensorView out_part = batch_slice(out, pieces.begin(piece), pieces.length(piece));
    const TensorView in_part = batch_slice(input, pieces.begin(piece), pieces.length(piece));
    Key key{0, piece, bias != nullptr};
    append(key, &out_part);
    append(key, &in_part);
    append(key, &weight);
    append(key, params);
    plans.push_back(forward_plans().get(key, [&] {
      return create_forward_plan(out_part, in_part, weight, bias != nullptr, params);
    }));
    if (!plans.back()) return false;
  }
  const BiasFloats bias_floats(bias);
  std::atomic<bool> failed{false};
  parallel_for(0, pieces.count, 1, [&](int64_t first, int64_t last) {
    const OneOpenMPThread one_openmp_thread;
    for (int64_t piece = first; piece < last; ++piece) {
      try {
        run_forward(*plans[piece], batch_slice(out, pieces.begin(piece), pieces.length(piece)),
                    batch_slice(input, pieces.begin(piece), pieces.length(piece)), weight,
                    bias_floats.data());
      } catch (const dnnl::error&) {
        failed = true;
      }
    }
  });
  return !failed;
}

// ---------------------------------------------------------------- backward

struct BackwardPlan {
  bool data = false, weights = false, bias = false;
  // grad_input = backward-data(grad_out, weight)
  dnnl::convolution_backward_data data_conv;
  Operand data_diff_dst, data_weights, diff_src;
  memory::desc data_scratchpad;
  // grad_weight, grad_bias = backward-weights(input, grad_out), fp32 in the primitive's layout
  dnnl::convolution_backward_weights weights_conv;
  Operand weights_diff_dst, weights_src;
  bool share_diff_dst = false;  // both primitives read grad_out in one layout: reorder it once
  memory::desc diff_weights, diff_bias, user_grad_weight;
  dnnl::reorder diff_weights_to_user;
  memory::desc weights_scratchpad;
};

PlanCache<BackwardPlan>& backward_plans() {
  static auto* cache = new PlanCache<BackwardPlan>();
  return *cache;
}

struct BackwardViews {
  const TensorView* grad_input;   // nullptr when not wanted
  const TensorView* grad_weight;  // nullptr when not wanted (grad_bias may still be)
  bool grad_bias;
  TensorView grad_out, input, weight;
};

std::shared_ptr<const BackwardPlan> create_backward_plan(const BackwardViews& v,
                                                         const Conv2dParams& p) {
  const Geometry g = geometry(v.input, v.weight, v.grad_out, p);
  const memory::data_type type = dnnl_type(v.grad_out.dtype);
  const memory::data_type f32 = memory::data_type::f32;
  auto plan = std::make_shared<BackwardPlan>();
  plan->data = v.grad_input != nullptr;
  plan->weights = v.grad_weight != nullptr || v.grad_bias;
  plan->bias = v.grad_bias;
  const memory::desc bias = plan->bias ? memory::desc(g.bias, f32, Tag::x) : memory::desc();
  const memory::desc src_any = any_desc(g.src, type), dst_any = any_desc(g.dst, type);
  const dnnl::convolution_forward::primitive_desc hint(
      dnnl::convolution_forward::desc(
          dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, src_any,
          any_desc(g.weights, type), bias, dst_any, g.strides, g.dilates, g.pad_left, g.pad_right),
      user_scratchpad(), dnnl_engine());
  const memory::desc grad_out_user = activation_desc(v.grad_out);
  if (plan->data) {
    const dnnl::convolution_backward_data::primitive_desc pd(
        dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, src_any,
                                              any_desc(g.weights, type), dst_any, g.strides,
                                              g.dilates, g.pad_left, g.pad_right),
        user_scratchpad(), dnnl_engine(), hint);
    if (!optimised(pd, type)) return nullptr;
    plan->data_conv = dnnl::convolution_backward_data(pd);
    plan->data_diff_dst = input_operand(grad_out_user, pd.diff_dst_desc());
    plan->data_weights = input_operand(weights_desc(v.weight, p.groups, type), pd.weights_desc());
    plan->diff_src = output_operand(activation_desc(*v.grad_input), pd.diff_src_desc());
    plan->data_scratchpad = pd.scratchpad_desc();
  }
  if (plan->weights) {
    const memory::desc diff_weights_any = any_desc(g.weights, f32);
    const auto desc = plan->bias
                          ? dnnl::convolution_backward_weights::desc(
                                dnnl::algorithm::convolution_direct, src_any, diff_weights_any,
                                bias, dst_any, g.strides, g.dilates, g.pad_left, g.pad_right)
                          : dnnl::convolution_backward_weights::desc(
                                dnnl::algorithm::convolution_direct, src_any, diff_weights_any,
                                dst_any, g.strides, g.dilates, g.pad_left, g.pad_right);
    const dnnl::convolution_backward_weights::primitive_desc pd(desc, user_scratchpad(),
                                                                dnnl_engine(), hint);
    if (!optimised(pd, type)) return nullptr;
    plan->weights_conv = dnnl::convolution_backward_weights(pd);
    plan->weights_diff_dst = input_operand(grad_out_user, pd.diff_dst_desc());
    plan->weights_src = input_operand(activation_desc(v.input), pd.src_desc());
    plan->share_diff_dst = plan->data && plan->data_diff_dst.inner == plan->weights_diff_dst.inner;
    plan->diff_weights = pd.diff_weights_desc();
    plan->diff_bias = bias;
    plan->weights_scratchpad = pd.scratchpad_desc();
    if (v.grad_weight != nullptr) {
      plan->user_grad_weight =
          weights_desc(*v.grad_weight, p.groups, dnnl_type(v.grad_weight->dtype));
      plan->diff_weights_to_user = dnnl::reorder(dnnl::reorder::primitive_desc(
          dnnl_engine(), plan->diff_weights, dnnl_engine(), plan->user_grad_weight));
    }
  }
  return plan;
}

// One batch piece: grad_input's rows directly; this piece's weight (and bias) gradient into
// fp32 partial buffers in the primitive's layout.
void run_backward(const BackwardPlan& plan, const BackwardViews& v, float* diff_weights,
                  float* diff_bias) {
  memory grad_out_for_data;
  if (plan.data) {
    grad_out_for_data = bind_input(plan.data_diff_dst, v.grad_out.data, Slot::kConvDiffDst);
    const memory weights = bind_input(plan.data_weights, v.weight.data, Slot::kConvWeights);
    const memory diff_src = bind_output(plan.diff_src, v.grad_input->data, Slot::kConvDst);
    plan.data_conv.execute(dnnl_thread_stream(),
                           {{DNNL_ARG_DIFF_DST, grad_out_for_data},
                            {DNNL_ARG_WEIGHTS, weights},
                            {DNNL_ARG_DIFF_SRC, diff_src},
                            {DNNL_ARG_SCRATCHPAD, scratchpad(plan.data_scratchpad)}});
    finish_output(plan.diff_src, diff_src, v.grad_input->data);
  }
  if (plan.weights) {
    const memory grad_out = plan.share_diff_dst ? grad_out_for_data
                                                : bind_input(plan.weights_diff_dst, v.grad_out.data,
                                                             Slot::kConvDiffDstForWeights);
    const memory src = bind_input(plan.weights_src, v.input.data, Slot::kConvSrc);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src},
        {DNNL_ARG_DIFF_DST, grad_out},
        {DNNL_ARG_DIFF_WEIGHTS, memory(plan.diff_weights, dnnl_engine(), diff_weights)},
        {DNNL_ARG_SCRATCHPAD, scratchpad(plan.weights_scratchpad)}};
    if (plan.bias)
      args.emplace(DNNL_ARG_DIFF_BIAS, memory(plan.diff_bias, dnnl_engine(), diff_bias));
    plan.weights_conv.execute(dnnl_thread_stream(), args);
  }
  dnnl_thread_stream().wait();
}

BackwardViews piece_views(const BackwardViews& v, const Pieces& pieces, int64_t piece,
                          TensorView* grad_input_part) {
  const int64_t begin = pieces.begin(piece), length = pieces.length(piece);
  BackwardViews part = v;
  part.grad_out = batch_slice(v.grad_out, begin, length);
  part.input = batch_slice(v.input, begin, length);
  if (v.grad_input != nullptr) {
    *grad_input_part = batch_slice(*v.grad_input, begin, length);
    part.grad_input = grad_input_part;
  }
  return part;
}

// Views are fp32 or bf16 alike, with positive strides; at least one gradient is wanted.
bool backward_native(const BackwardViews& v, const TensorView* grad_bias,
                     const Conv2dParams& params) {
  const OneOpenMPThread one_openmp_thread;
  const Pieces pieces = split_batch(v.input, v.weight, v.grad_out);
  std::vector<std::shared_ptr<const BackwardPlan>> plans;
  for (int64_t piece = 0; piece < pieces.count; ++piece) {
    TensorView grad_input_part;
    const BackwardViews part = piece_views(v, pieces, piece, &grad_input_part);
    Key key{1, piece, part.grad_bias};
    for (const TensorView* view :
         {part.grad_input, part.grad_weight, &part.grad_out, &part.input, &part.weight}) {
      append(key, view);
    }
    append(key, params);
    plans.push_back(backward_plans().get(key, [&] { return create_backward_plan(part, params); }));
    if (!plans.back()) return false;
  }
  const BackwardPlan& first = *plans.front();
  // Per-piece fp32 partial weight and bias gradients, summed below.
  const size_t weight_floats = first.weights ? first.diff_weights.get_size() / sizeof(float) : 0;
  const size_t bias_floats = first.bias ? static_cast<size_t>(v.grad_out.sizes[1]) : 0;
  const size_t piece_floats = weight_floats + bias_floats;
  ScratchFloats partials;
  float* partial = partials.acquire(piece_floats * static_cast<size_t>(pieces.count), false);
  std::atomic<bool> failed{false};
  parallel_for(0, pieces.count, 1, [&](int64_t begin, int64_t end) {
    const OneOpenMPThread one_openmp_thread;
    for (int64_t piece = begin; piece < end; ++piece) {
      TensorView grad_input_part;
      float* own = partial + piece_floats * static_cast<size_t>(piece);
      try {
        run_backward(*plans[piece], piece_views(v, pieces, piece, &grad_input_part), own,
                     own + weight_floats);
      } catch (const dnnl::error&) {
        failed = true;
      }
    }
  });
  if (failed) return false;
  for (int64_t piece = 1; piece < pieces.count; ++piece) {
    const float* other = partial + piece_floats * static_cast<size_t>(piece);
    for (size_t i = 0; i < piece_floats; ++i) partial[i] += other[i];
  }
  if (v.grad_weight != nullptr) {
    memory sum(first.diff_weights, dnnl_engine(), partial);
    memory user(first.user_grad_weight, dnnl_engine(), v.grad_weight->data);
    first.diff_weights_to_user.execute(dnnl_thread_stream(), sum, user);
    dnnl_thread_stream().wait();
  }
  if (grad_bias != nullptr) {
    TensorView sums;
    sums.data = partial + weight_floats;
    sums.dtype = DType::Float32;
    sums.ndim = 1;
    sums.sizes[0] = static_cast<int64_t>(bias_floats);
    sums.strides[0] = 1;
    copy(*grad_bias, sums);
  }
  return true;
}

// ---------------------------------------------------------------- entry checks

bool native_dtype(DType dtype) { return dtype == DType::Float32 || dtype == DType::BFloat16; }

bool describable(const TensorView* view) {
  if (view == nullptr) return true;
  for (int d = 0; d < view->ndim; ++d) {
    if (view->sizes[d] > 1 && view->strides[d] <= 0) return false;
  }
  return true;
}

bool has_zero_size(std::initializer_list<const TensorView*> views) {
  for (const TensorView* view : views) {
    if (view != nullptr && view->numel() == 0) return true;
  }
  return false;
}

void check_4d(std::initializer_list<const TensorView*> views) {
  for (const TensorView* view : views) {
    if (view != nullptr && view->ndim != 4) {
      throw std::invalid_argument("openneuron kernels: conv2d: views must be 4-D");
    }
  }
}

TensorView dense_float_view(const float* data, const TensorView& shape_of) {
  return dense_view_like(const_cast<float*>(data), DType::Float32, shape_of);
}

}  // namespace

bool dnnl_conv2d_forward(const TensorView& out, const TensorView& input, const TensorView& weight,
                         const TensorView* bias, const Conv2dParams& params) {
  check_4d({&out, &input, &weight});
  if (has_zero_size({&out, &input, &weight})) return false;
  const DType dtype = out.dtype;
  if (native_dtype(dtype) && input.dtype == dtype && weight.dtype == dtype && describable(&out) &&
      describable(&input) && describable(&weight) &&
      forward_native(out, input, weight, bias, params)) {
    count_library_call(LibraryCall::kOneDnnConvolution);
    return true;
  }
  // float16 (no oneDNN kernel on this class of CPU), odd layouts and bf16 problems without a
  // native bf16 kernel: dense fp32 copies, rounded once on commit.
  const DenseFloatInput dense_input(input), dense_weight(weight);
  DenseFloatOutput result(out);
  if (!forward_native(dense_float_view(result.data(), out),
                      dense_float_view(dense_input.data(), input),
                      dense_float_view(dense_weight.data(), weight), bias, params)) {
    return false;
  }
  result.commit();
  count_library_call(LibraryCall::kOneDnnConvolution);
  return true;
}

bool dnnl_conv2d_backward(const TensorView* grad_input, const TensorView* grad_weight,
                          const TensorView* grad_bias, const TensorView& grad_out,
                          const TensorView& input, const TensorView& weight,
                          const Conv2dParams& params) {
  check_4d({grad_input, grad_weight, &grad_out, &input, &weight});
  if (grad_input != nullptr && grad_input->numel() == 0) grad_input = nullptr;
  if (grad_weight != nullptr && grad_weight->numel() == 0) grad_weight = nullptr;
  if (grad_bias != nullptr && grad_bias->numel() == 0) grad_bias = nullptr;
  if (grad_input == nullptr && grad_weight == nullptr && grad_bias == nullptr) return true;
  if (has_zero_size({&grad_out, &input, &weight})) return false;
  const DType dtype = grad_out.dtype;
  bool direct = native_dtype(dtype);
  for (const TensorView* view : {grad_input, grad_weight, &grad_out, &input, &weight}) {
    if (view != nullptr) direct = direct && view->dtype == dtype && describable(view);
  }
  if (direct &&
      backward_native({grad_input, grad_weight, grad_bias != nullptr, grad_out, input, weight},
                      grad_bias, params)) {
    count_library_call(LibraryCall::kOneDnnConvolution);
    return true;
  }
  // float16, odd layouts and bf16 problems without a native bf16 kernel: dense fp32 copies in,
  // fp32 results rounded once on commit.
  const DenseFloatInput dense_grad_out(grad_out), dense_input(input), dense_weight(weight);
  std::unique_ptr<DenseFloatOutput> input_result, weight_result;
  TensorView grad_input_view, grad_weight_view;
  if (grad_input != nullptr) {
    input_result = std::make_unique<DenseFloatOutput>(*grad_input);
    grad_input_view = dense_float_view(input_result->data(), *grad_input);
  }
  if (grad_weight != nullptr) {
    weight_result = std::make_unique<DenseFloatOutput>(*grad_weight);
    grad_weight_view = dense_float_view(weight_result->data(), *grad_weight);
  }
  const BackwardViews views{grad_input != nullptr ? &grad_input_view : nullptr,
                            grad_weight != nullptr ? &grad_weight_view : nullptr,
                            grad_bias != nullptr,
                            dense_float_view(dense_grad_out.data(), grad_out),
                            dense_float_view(dense_input.data(), input),
                            dense_float_view(dense_weight.data(), weight)};
  if (!backward_native(views, grad_bias, params)) return false;
  if (input_result) input_result->commit();
  if (weight_result) weight_result->commit();
  count_library_call(LibraryCall::kOneDnnConvolution);
  return true;
}

}  // namespace openneuron::kernels
