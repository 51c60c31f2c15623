// Steps of a compiled program and the loop that runs them.
#include "aten/compile/compiled_program.h"

#include <ATen/ExpandUtils.h>
#include <ATen/ScalarOps.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/DeviceGuard.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <sstream>

#include "aten/core/op_helpers.h"  // wrapped_number: a number where the schema takes a Tensor
#include "aten/core/tensor_views.h"
#include "compiler/fused_kernel.h"
#include "compiler/fused_reduction.h"
#include "compiler/gemm_epilogue.h"
#include "compiler/ops.h"

namespace openneuron::bridge {

using compiler::Attr;
using compiler::Graph;
using compiler::Node;

struct ProgramStep {
  std::string label;      // "graph node 3 (aten::mm) at model.py:12"
  std::vector<int> free;  // slots released after the step
  virtual ~ProgramStep() = default;
  virtual void run(std::vector<c10::IValue>& slots) const = 0;
};

namespace {

at::ScalarType scalar_type_of(kernels::DType dtype) {
  switch (dtype) {
    case kernels::DType::Bool:
      return at::kBool;
    case kernels::DType::UInt8:
      return at::kByte;
    case kernels::DType::Int8:
      return at::kChar;
    case kernels::DType::Int16:
      return at::kShort;
    case kernels::DType::Int32:
      return at::kInt;
    case kernels::DType::Int64:
      return at::kLong;
    case kernels::DType::Float16:
      return at::kHalf;
    case kernels::DType::BFloat16:
      return at::kBFloat16;
    case kernels::DType::Float32:
      return at::kFloat;
    case kernels::DType::Float64:
      return at::kDouble;
    case kernels::DType::Float8E4M3:
      return at::kFloat8_e4m3fn;
    case kernels::DType::Float8E5M2:
      return at::kFloat8_e5m2;
  }
  return at::kFloat;
}

// ---- ATen calls ----

// One argument of an ATen call: a constant, a slot, or a list mixing both.
struct ArgBuilder {
  enum class Kind { Const, Slot, TensorList, OptionalTensorList, IntList, FloatList } kind;
  c10::IValue constant;
  int slot = -1;
  bool tensor = false;  // a (non-optional) Tensor argument: None passes as an undefined tensor
  std::vector<std::pair<int, int64_t>> items;  // (slot or -1, constant int)

  c10::IValue build(const std::vector<c10::IValue>& slots) const {
    switch (kind) {
      case Kind::Const:
        return constant;
      case Kind::Slot:
        if (tensor && slots[slot].isNone()) return at::Tensor();
        if (tensor && (slots[slot].isInt() || slots[slot].isDouble() || slots[slot].isBool())) {
          return wrapped_number(slots[slot].toScalar());
        }
        return slots[slot];
      case Kind::TensorList: {
        c10::List<at::Tensor> list;
        for (const auto& item : items) list.push_back(slots[item.first].toTensor());
        return list;
      }
      case Kind::OptionalTensorList: {
        c10::List<std::optional<at::Tensor>> list;
        for (const auto& item : items) {
          if (item.first < 0 || slots[item.first].isNone()) {
            list.push_back(std::nullopt);
          } else {
            list.push_back(slots[item.first].toTensor());
          }
        }
        return list;
      }
      case Kind::IntList: {
        c10::List<int64_t> list;
        for (const auto& item : items) {
          list.push_back(item.first < 0 ? item.second : slots[item.first].toInt());
        }
        return list;
      }
      case Kind::FloatList: {
        c10::List<double> list;
        for (const auto& item : items) list.push_back(slots[item.first].toDouble());
        return list;
      }
    }
    return {};
  }
};

bool has_ref(const Attr& a) {
  if (a.kind == Attr::Kind::Ref) return true;
  for (const Attr& item : a.list) {
    if (has_ref(item)) return true;
  }
  return false;
}

c10::MemoryFormat memory_format_named(const std::string& name) {
  if (name == "contiguous_format") return c10::MemoryFormat::Contiguous;
  if (name == "channels_last") return c10::MemoryFormat::ChannelsLast;
  if (name == "channels_last_3d") return c10::MemoryFormat::ChannelsLast3d;
  if (name == "preserve_format") return c10::MemoryFormat::Preserve;
  TORCH_CHECK(false, "unknown memory format '", name, "'");
}

// A constant attribute as the IValue that an argument of `type` takes.
c10::IValue constant_for(const Attr& a, const c10::TypePtr& type) {
  using Kind = Attr::Kind;
  if (a.kind == Kind::None) {
    // None for a required Tensor is how FX spells an undefined tensor.
    return type->kind() == c10::TypeKind::TensorType ? c10::IValue(at::Tensor()) : c10::IValue();
  }
  c10::TypePtr t = type;
  if (auto optional = t->cast<c10::OptionalType>()) t = optional->getElementType();
  if (a.kind == Kind::String) {
    const std::string& s = a.s;
    const auto colon = s.find(':');
    const std::string tag = colon == std::string::npos ? "" : s.substr(0, colon);
    const std::string rest = colon == std::string::npos ? s : s.substr(colon + 1);
    if (tag == "dtype") {
      for (int k = 0; k < static_cast<int>(at::ScalarType::NumOptions); ++k) {
        const auto st = static_cast<at::ScalarType>(k);
        if (rest == c10::toString(st)) return st;
      }
      TORCH_CHECK(false, "unknown dtype '", rest, "'");
    }
    if (tag == "layout") return rest == "sparse_coo" ? at::kSparse : at::kStrided;
    if (tag == "device") return c10::Device(rest);
    if (tag == "memory_format") return memory_format_named(rest);
    if (tag == "str") return rest;
    return s;
  }
  if (a.kind == Kind::List) {
    c10::TypePtr element = c10::AnyType::get();
    if (auto list = t->cast<c10::ListType>()) element = list->getElementType();
    if (element->kind() == c10::TypeKind::IntType || element->kind() == c10::TypeKind::SymIntType) {
      c10::List<int64_t> out;
      for (const Attr& item : a.list) out.push_back(item.i);
      return out;
    }
    if (element->kind() == c10::TypeKind::FloatType) {
      c10::List<double> out;
      for (const Attr& item : a.list) out.push_back(item.kind == Kind::Float ? item.f : item.i);
      return out;
    }
    if (element->kind() == c10::TypeKind::BoolType) {
      c10::List<bool> out;
      for (const Attr& item : a.list) out.push_back(item.i != 0);
      return out;
    }
    if (auto optional = element->cast<c10::OptionalType>()) {
      if (optional->getElementType()->kind() == c10::TypeKind::TensorType) {
        c10::List<std::optional<at::Tensor>> out;
        for (size_t k = 0; k < a.list.size(); ++k) out.push_back(std::nullopt);
        return out;
      }
    }
    if (element->kind() == c10::TypeKind::TensorType) return c10::List<at::Tensor>();
    TORCH_CHECK(false, "unsupported list argument of type ", type->str());
  }
  switch (t->kind()) {
    case c10::TypeKind::FloatType:
      return a.kind == Kind::Float ? a.f : static_cast<double>(a.i);
    case c10::TypeKind::BoolType:
      return a.i != 0;
    case c10::TypeKind::NumberType:
      if (a.kind == Kind::Bool) return c10::Scalar(a.i != 0);
      if (a.kind == Kind::Float) return c10::Scalar(a.f);
      return c10::Scalar(a.i);
    case c10::TypeKind::TensorType:
      if (a.kind == Kind::Float) return wrapped_number(a.f);
      if (a.kind == Kind::Bool) return wrapped_number(a.i != 0);
      return wrapped_number(a.i);
    default:
      break;
  }
  if (a.kind == Kind::Float) return a.f;
  if (a.kind == Kind::Bool) return a.i != 0;
  return a.i;
}

ArgBuilder builder_for(const Attr& a, const c10::TypePtr& type) {
  ArgBuilder b{ArgBuilder::Kind::Const, {}, -1, {}};
  if (!has_ref(a)) {
    b.constant = constant_for(a, type);
    return b;
  }
  if (a.kind == Attr::Kind::Ref) {
    b.kind = ArgBuilder::Kind::Slot;
    b.slot = static_cast<int>(a.i);
    b.tensor = type->kind() == c10::TypeKind::TensorType;
    return b;
  }
  c10::TypePtr t = type;
  if (auto optional = t->cast<c10::OptionalType>()) t = optional->getElementType();
  auto list = t->cast<c10::ListType>();
  TORCH_CHECK(list, "a value reference inside a non-list argument of type ", type->str());
  const c10::TypePtr element = list->getElementType();
  if (element->kind() == c10::TypeKind::TensorType) {
    b.kind = ArgBuilder::Kind::TensorList;
  } else if (element->cast<c10::OptionalType>()) {
    b.kind = ArgBuilder::Kind::OptionalTensorList;
  } else if (element->kind() == c10::TypeKind::FloatType) {
    b.kind = ArgBuilder::Kind::FloatList;
  } else {
    b.kind = ArgBuilder::Kind::IntList;
  }
  for (const Attr& item : a.list) {
    if (item.kind == Attr::Kind::Ref) {
      b.items.emplace_back(static_cast<int>(item.i), 0);
    } else {
      b.items.emplace_back(-1, item.i);
    }
  }
  return b;
}

std::atomic<int64_t> layout_repairs{0};

std::vector<int> identity_order(size_t rank) {
  std::vector<int> order(rank);
  for (size_t d = 0; d < rank; ++d) order[d] = static_cast<int>(d);
  return order;
}

// Strides of a dense tensor of `shape` whose dims lie in memory in `order`, outermost first.
at::DimVector dense_strides_in(at::IntArrayRef shape, const std::vector<int>& order) {
  at::DimVector strides(shape.size(), 1);
  int64_t stride = 1;
  for (size_t k = order.size(); k-- > 0;) {
    strides[order[k]] = stride;
    stride *= std::max<int64_t>(shape[order[k]], 1);
  }
  return strides;
}

// A non-view result laid out otherwise than the graph's meta kernel promised, copied into that
// layout: later views in the graph were traced against the promised strides. The check is a
// few integer comparisons on the stack per result (no allocation), so it stays on every run:
// a result's layout can depend on the run's sizes under dynamic shapes.
at::Tensor in_promised_layout(at::Tensor t, const std::vector<int>& order) {
  if (order.size() != static_cast<size_t>(t.dim()) || t.numel() <= 1) return t;
  bool same = true;
  int64_t stride = 1;
  for (size_t k = order.size(); k-- > 0 && same;) {
    const int64_t d = order[k];
    same = t.size(d) == 1 || t.stride(d) == stride;
    stride *= std::max<int64_t>(t.size(d), 1);
  }
  if (same) return t;
  at::Tensor repaired =
      at::empty_strided(t.sizes(), dense_strides_in(t.sizes(), order), t.options());
  repaired.copy_(t);
  ++layout_repairs;
  return repaired;
}

// The tensors an extern was called with, as a cached=1 extern remembers them: its result stands
// while every one is the same tensor (a weak reference keeps its address from being reused) with
// the same data and version counter. Inference tensors have no version counter: never cached.
class CallIdentity {
 public:
  // False when some tensor argument cannot be tracked.
  bool capture(const torch::jit::Stack& stack) {
    tensors_.clear();
    bool trackable = true;
    auto add = [&](const at::Tensor& t) {
      if (!t.defined() || t.is_inference()) {
        trackable = false;
        return;
      }
      tensors_.push_back(
          {c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(t.getIntrusivePtr()),
           t.data_ptr(), t._version()});
    };
    for (const c10::IValue& v : stack) {
      if (v.isTensor()) add(v.toTensor());
      if (v.isTensorList()) {
        for (const at::Tensor& t : v.toTensorList().vec()) add(t);
      }
    }
    return trackable;
  }
  bool operator==(const CallIdentity& other) const {
    if (tensors_.size() != other.tensors_.size()) return false;
    for (size_t k = 0; k < tensors_.size(); ++k) {
      const Tracked& a = tensors_[k];
      const Tracked& b = other.tensors_[k];
      if (a.impl.expired() || a.impl._unsafe_get_target() != b.impl._unsafe_get_target() ||
          a.data != b.data || a.version != b.version) {
        return false;
      }
    }
    return true;
  }

 private:
  struct Tracked {
    c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> impl;
    const void* data;
    int64_t version;
  };
  std::vector<Tracked> tensors_;
};

struct ExternStep final : ProgramStep {
  c10::OperatorHandle op;
  std::vector<ArgBuilder> args;
  std::vector<int> outputs;
  std::vector<std::vector<int>> layouts;  // per output: promised dim order, empty = unchecked
  bool returns_list = false;
  // cached=1 (a concatenation of weights): the last result, kept while its arguments stand.
  bool cached = false;
  mutable std::mutex cache_mutex;
  mutable CallIdentity cached_call;
  mutable c10::IValue cached_result;

  ExternStep(c10::OperatorHandle handle) : op(std::move(handle)) {}

  void run(std::vector<c10::IValue>& slots) const override {
    torch::jit::Stack stack;
    stack.reserve(args.size());
    for (const ArgBuilder& arg : args) stack.push_back(arg.build(slots));
    if (cached && outputs.size() == 1) {
      CallIdentity call;
      const bool trackable = call.capture(stack);
      const std::lock_guard<std::mutex> lock(cache_mutex);
      if (trackable && !cached_result.isNone() && call == cached_call) {
        slots[outputs[0]] = cached_result;
        return;
      }
      op.callBoxed(stack);
      TORCH_CHECK(stack.size() == 1, op.schema().name(), " returned ", stack.size(), " values");
      cached_result = trackable ? stack[0] : c10::IValue();
      cached_call = std::move(call);
      slots[outputs[0]] = std::move(stack[0]);
      return;
    }
    op.callBoxed(stack);
    if (returns_list) {
      const auto list = stack.at(0).toList();
      TORCH_CHECK(list.size() == outputs.size(), op.schema().name(), " returned ", list.size(),
                  " tensors where the graph expects ", outputs.size());
      for (size_t k = 0; k < outputs.size(); ++k) slots[outputs[k]] = list.get(k);
      return;
    }
    if (stack.empty() && outputs.size() == 1) {  // an op that returns nothing: one none value
      slots[outputs[0]] = c10::IValue();
      return;
    }
    TORCH_CHECK(stack.size() == outputs.size(), op.schema().name(), " returned ", stack.size(),
                " values where the graph expects ", outputs.size());
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (!layouts[k].empty() && stack[k].isTensor()) {
        slots[outputs[k]] = in_promised_layout(std::move(stack[k]).toTensor(), layouts[k]);
      } else {
        slots[outputs[k]] = std::move(stack[k]);
      }
    }
  }
};

std::unique_ptr<ProgramStep> extern_step(const Graph& graph, const Node& node) {
  std::string overload = node.string_attr("overload");
  if (overload == "default") overload.clear();
  const std::string target = node.string_attr("target");
  const auto handle = c10::Dispatcher::singleton().findSchema({target, overload});
  TORCH_CHECK(handle.has_value(), "no ATen operator ", target, ".", overload);
  auto step = std::make_unique<ExternStep>(*handle);
  const auto& schema = handle->schema();
  const Attr* args = node.attr("args");
  const size_t given = args ? args->list.size() : 0;
  TORCH_CHECK(given == schema.arguments().size(), target, " takes ", schema.arguments().size(),
              " arguments; the graph gives ", given);
  for (size_t k = 0; k < given; ++k) {
    step->args.push_back(builder_for(args->list[k], schema.arguments()[k].type()));
  }
  step->outputs = node.outputs;
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    const compiler::Value& v = graph.values[node.outputs[k]];
    const bool is_view = k < schema.returns().size() && schema.returns()[k].alias_info();
    const bool tensor = v.kind == compiler::ValueKind::Tensor;
    step->layouts.push_back(tensor && !is_view ? v.dim_order : std::vector<int>{});
  }
  step->returns_list =
      schema.returns().size() == 1 && schema.returns()[0].type()->kind() == c10::TypeKind::ListType;
  step->cached = node.int_attr("cached", 0) != 0 && !step->returns_list;
  return step;
}

// ---- fused kernels ----

struct FusedStep final : ProgramStep {
  std::shared_ptr<const compiler::FusedKernel> kernel;
  std::shared_ptr<const std::string> name;  // outlives queued work that may report it
  std::vector<int> inputs;
  std::vector<int> outputs;
  std::vector<at::ScalarType> output_dtypes;
  std::vector<std::vector<int>> dim_orders;
  std::vector<int64_t> static_shape;  // used when no input fixes the shape
  size_t rank = 0;
  std::vector<std::pair<int, int>> reuse;  // (output, input) the plan allows

  void run(std::vector<c10::IValue>& slots) const override {
    std::vector<at::Tensor> in;
    in.reserve(inputs.size());
    at::DimVector shape(static_shape.begin(), static_shape.end());
    if (!inputs.empty()) shape.assign(rank, 1);
    for (int slot : inputs) {
      in.push_back(slots[slot].toTensor());
      const at::Tensor& t = in.back();
      TORCH_CHECK(t.dim() <= static_cast<int64_t>(rank), "a fused kernel input of rank ", t.dim(),
                  " exceeds the kernel's rank ", rank);
      const size_t lead = rank - t.dim();
      for (int64_t d = 0; d < t.dim(); ++d) {
        const int64_t s = t.size(d);
        TORCH_CHECK(s == 1 || shape[lead + d] == 1 || shape[lead + d] == s,
                    "fused kernel inputs do not broadcast: ", t.sizes(), " against ",
                    c10::IntArrayRef(shape));
        if (s != 1) shape[lead + d] = s;
      }
    }
    TORCH_CHECK(!in.empty(), "a fused kernel without tensor inputs");
    const c10::Device device = in.front().device();
    const c10::DeviceGuard guard(device);
    std::vector<at::Tensor> out(outputs.size());
    for (const auto& [o, i] : reuse) {
      at::Tensor& candidate = in[i];
      const auto strides = dense_strides_in(shape, dim_orders[o]);
      // Only when nothing else can see the buffer: our slot and `in` hold the tensor's refs.
      if (candidate.scalar_type() == output_dtypes[o] && candidate.sizes().equals(shape) &&
          candidate.strides().equals(strides) && candidate.use_count() <= 2 &&
          candidate.storage().use_count() == 1) {
        out[o] = candidate;
      }
    }
    int64_t numel = 1;
    for (int64_t s : shape) numel *= s;
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (!out[k].defined()) {
        out[k] = at::empty_strided(shape, dense_strides_in(shape, dim_orders[k]),
                                   at::TensorOptions().dtype(output_dtypes[k]).device(device));
      }
    }
    if (numel > 0) {
      std::vector<kernels::TensorView> views;
      views.reserve(out.size() + in.size());
      for (const at::Tensor& t : out) views.push_back(view_of(t));
      for (const at::Tensor& t : in) views.push_back(broadcast_view(t, shape));
      auto work = [kernel = kernel, name = name, views = std::move(views), n = out.size()]() {
        compiler::run_fused_kernel(*kernel, views.data(), views.data() + n);
      };
      enqueue_sized(stream_for(out.front()), name->c_str(), numel, std::move(work));
    }
    for (size_t k = 0; k < outputs.size(); ++k) slots[outputs[k]] = std::move(out[k]);
  }
};

// ---- fused reductions ----

struct FusedReductionStep final : ProgramStep {
  std::shared_ptr<const compiler::FusedReduction> kernel;
  std::shared_ptr<const std::string> name;
  std::vector<int> inputs;
  std::vector<int> outputs;
  std::vector<at::ScalarType> output_dtypes;
  std::vector<std::vector<int>> dim_orders;
  size_t rank = 0;       // of the iteration shape
  bool keepdim = false;  // of the reduce's result

  void run(std::vector<c10::IValue>& slots) const override {
    std::vector<at::Tensor> in;
    at::DimVector shape(rank, 1);
    for (int slot : inputs) {
      in.push_back(slots[slot].toTensor());
      const at::Tensor& t = in.back();
      TORCH_CHECK(t.dim() <= static_cast<int64_t>(rank), "a fused reduction input of rank ",
                  t.dim(), " exceeds the iteration rank ", rank);
      const size_t lead = rank - t.dim();
      for (int64_t d = 0; d < t.dim(); ++d) {
        const int64_t s = t.size(d);
        TORCH_CHECK(s == 1 || shape[lead + d] == 1 || shape[lead + d] == s,
                    "fused reduction inputs do not broadcast: ", t.sizes(), " against ",
                    c10::IntArrayRef(shape));
        if (s != 1) shape[lead + d] = s;
      }
    }
    TORCH_CHECK(!in.empty(), "a fused reduction without tensor inputs");
    const uint32_t mask = kernel->mask;
    if (kernel->fn == compiler::ReduceFn::Amax) {
      for (size_t d = 0; d < rank; ++d) {
        TORCH_CHECK(!((mask >> d) & 1u) || shape[d] != 0, "amax(): Expected reduction dim ", d,
                    " to have non-zero size.");
      }
    }
    at::DimVector reduced;
    for (size_t d = 0; d < rank; ++d) {
      if (!((mask >> d) & 1u)) {
        reduced.push_back(shape[d]);
      } else if (keepdim) {
        reduced.push_back(1);
      }
    }
    const c10::Device device = in.front().device();
    const c10::DeviceGuard guard(device);
    std::vector<at::Tensor> out(outputs.size());
    std::vector<kernels::TensorView> views;
    views.reserve(out.size() + in.size());
    for (size_t k = 0; k < outputs.size(); ++k) {
      const bool result = static_cast<int>(k) == kernel->result;
      const at::DimVector& sizes = result ? reduced : shape;
      const std::vector<int>& order = dim_orders[k];
      out[k] = at::empty_strided(sizes,
                                 order.size() == sizes.size()
                                     ? dense_strides_in(sizes, order)
                                     : dense_strides_in(sizes, identity_order(sizes.size())),
                                 at::TensorOptions().dtype(output_dtypes[k]).device(device));
      at::Tensor kernel_view = out[k];
      if (result && !keepdim) {  // the kernel writes the result in keepdim layout
        for (size_t d = 0; d < rank; ++d) {
          if ((mask >> d) & 1u) kernel_view = kernel_view.unsqueeze(static_cast<int64_t>(d));
        }
      }
      views.push_back(view_of(kernel_view));
    }
    for (const at::Tensor& t : in) views.push_back(broadcast_view(t, shape));
    int64_t numel = 1;
    for (int64_t s : shape) numel *= s;
    auto work = [kernel = kernel, views = std::move(views), n = out.size(),
                 sizes = std::vector<int64_t>(shape.begin(), shape.end())]() {
      compiler::run_fused_reduction(*kernel, static_cast<int>(sizes.size()), sizes.data(),
                                    views.data(), views.data() + n);
    };
    enqueue_sized(stream_for(out.front()), name->c_str(), numel, std::move(work));
    for (size_t k = 0; k < outputs.size(); ++k) slots[outputs[k]] = std::move(out[k]);
  }
};

// ---- GEMMs, batched GEMMs and convolutions with a fused epilogue ----

struct GemmEpilogueStep final : ProgramStep {
  enum class Kind { Gemm, Bmm, Conv };
  std::shared_ptr<const compiler::FusedKernel> kernel;
  std::shared_ptr<const std::string> name;
  Kind kind = Kind::Gemm;
  std::vector<int> inputs;  // a, b[, bias], then the body's other inputs
  size_t operands = 2;
  double alpha = 1.0;
  double beta = 0.0;
  kernels::Conv2dParams conv;
  std::vector<int> outputs;
  std::vector<at::ScalarType> output_dtypes;
  std::vector<std::vector<int>> dim_orders;
  std::vector<int64_t> static_shape;  // the iteration shape; empty: the product's shape
  int product_into = -1;              // the output that holds the product, or -1: a buffer
  bool widened = false;               // the product of 16-bit operands stays fp32 (unrounded)

  // The product's shape, as eager's mm/bmm/convolution computes it, with eager's checks.
  at::DimVector product_shape(const at::Tensor& a, const at::Tensor& b) const {
    if (kind == Kind::Conv) {
      TORCH_CHECK(a.dim() == 4 && b.dim() == 4 && a.size(1) == b.size(1) * conv.groups &&
                      b.size(0) % conv.groups == 0,
                  "a fused convolution of input ", a.sizes(), " by weight ", b.sizes(),
                  " with groups=", conv.groups, " does not fit");
      at::DimVector shape = {a.size(0), b.size(0)};
      for (int d = 0; d < 2; ++d) {
        const int64_t extent = conv.dilation[d] * (b.size(d + 2) - 1) + 1;
        const int64_t size = (a.size(d + 2) + 2 * conv.padding[d] - extent) / conv.stride[d] + 1;
        TORCH_CHECK(size > 0, "Calculated output size is too small (input ", a.sizes(), ", kernel ",
                    b.sizes(), ")");
        shape.push_back(size);
      }
      return shape;
    }
    const int64_t rank = kind == Kind::Bmm ? 3 : 2;
    TORCH_CHECK(a.dim() == rank && b.dim() == rank && a.size(-1) == b.size(-2) &&
                    (rank == 2 || a.size(0) == b.size(0)),
                "mat1 and mat2 shapes cannot be multiplied (", a.sizes(), " and ", b.sizes(), ")");
    if (rank == 3) return {a.size(0), a.size(1), b.size(2)};
    return {a.size(0), b.size(1)};
  }

  void run(std::vector<c10::IValue>& slots) const override {
    const at::Tensor a = slots[inputs[0]].toTensor();
    const at::Tensor b = slots[inputs[1]].toTensor();
    // beta == 0 ignores bias, as addmm does; a convolution's bias is always added.
    const bool has_bias = operands == 3 && (kind == Kind::Conv || beta != 0.0);
    const at::ScalarType dtype = a.scalar_type();
    TORCH_CHECK(b.scalar_type() == dtype &&
                    (dtype == at::kFloat || dtype == at::kBFloat16 || dtype == at::kHalf),
                "a fused product needs two float32, bfloat16 or float16 operands of one dtype, "
                "got ",
                a.scalar_type(), " and ", b.scalar_type());
    const at::DimVector product_sizes = product_shape(a, b);
    const int64_t numel = c10::multiply_integers(product_sizes);
    at::Tensor bias;
    if (has_bias) {
      bias = slots[inputs[2]].toTensor();
      TORCH_CHECK(bias.scalar_type() == dtype, "a bias of dtype ", bias.scalar_type(),
                  " against operands of dtype ", dtype);
      if (kind == Kind::Conv) {
        TORCH_CHECK(bias.dim() == 1 && bias.size(0) == b.size(0), "a convolution bias of shape ",
                    bias.sizes(), " for ", b.size(0), " output channels");
      } else {
        TORCH_CHECK(at::is_expandable_to(bias.sizes(), product_sizes), "addmm: bias of shape ",
                    bias.sizes(), " does not broadcast to ", c10::IntArrayRef(product_sizes));
      }
    }
    at::DimVector shape(static_shape.begin(), static_shape.end());
    if (shape.empty()) shape = product_sizes;
    TORCH_CHECK(c10::multiply_integers(shape) == numel && shape.back() == product_sizes.back() &&
                    (kind != Kind::Conv || shape == product_sizes),
                "a fused product of shape ", c10::IntArrayRef(product_sizes),
                " does not reshape to ", c10::IntArrayRef(shape));
    std::vector<at::Tensor> in;
    for (size_t k = operands; k < inputs.size(); ++k) {
      in.push_back(slots[inputs[k]].toTensor());
      TORCH_CHECK(at::is_expandable_to(in.back().sizes(), shape), "an epilogue input of shape ",
                  in.back().sizes(), " does not broadcast to ", c10::IntArrayRef(shape));
    }
    const c10::Device device = a.device();
    const c10::DeviceGuard guard(device);
    std::vector<at::Tensor> out(outputs.size());
    for (size_t k = 0; k < outputs.size(); ++k) {
      out[k] = at::empty_strided(shape, dense_strides_in(shape, dim_orders[k]),
                                 at::TensorOptions().dtype(output_dtypes[k]).device(device));
    }
    if (numel > 0) {
      // The product is written into an output the plan allows (the body then runs in place),
      // else into a device buffer. Queued work holds views only, never tensors: a tensor freed
      // on the stream's thread may need the GIL that a synchronizing caller holds. The buffer
      // is released here on the host, after the work in stream order (the allocator is).
      const at::ScalarType product_dtype = widened ? at::kFloat : dtype;
      const bool into_output = product_into >= 0 &&
                               out[product_into].scalar_type() == product_dtype &&
                               out[product_into].is_contiguous();
      const at::Tensor buffer =
          into_output ? at::Tensor() : at::empty(product_sizes, a.options().dtype(product_dtype));
      kernels::TensorView product = view_of(into_output ? out[product_into] : buffer);
      product.ndim = static_cast<int>(product_sizes.size());
      int64_t stride = 1;
      for (int d = product.ndim - 1; d >= 0; --d) {
        product.sizes[d] = product_sizes[d];
        product.strides[d] = stride;
        stride *= product_sizes[d];
      }
      std::vector<kernels::TensorView> views;  // outputs, inputs, then a, b, product[, bias]
      views.reserve(out.size() + in.size() + 4);
      for (const at::Tensor& t : out) views.push_back(view_of(t));
      for (const at::Tensor& t : in) views.push_back(broadcast_view(t, shape));
      views.push_back(view_of(a));
      views.push_back(view_of(b));
      views.push_back(product);
      if (has_bias) {
        views.push_back(kind == Kind::Conv ? view_of(bias) : broadcast_view(bias, product_sizes));
      }
      auto work = [kernel = kernel, views = std::move(views), outs = out.size(), ins = in.size(),
                   has_bias, conv_kind = kind == Kind::Conv, conv = conv, alpha = alpha,
                   beta = beta]() {
        const kernels::TensorView* operand = views.data() + outs + ins;
        const kernels::TensorView* bias_view = has_bias ? &operand[3] : nullptr;
        if (conv_kind) {
          compiler::run_conv_epilogue(*kernel, operand[0], operand[1], bias_view, conv, operand[2],
                                      views.data(), views.data() + outs);
        } else {
          compiler::run_gemm_epilogue(*kernel, operand[0], operand[1], bias_view, alpha, beta,
                                      operand[2], views.data(), views.data() + outs);
        }
      };
      const int64_t depth = kind == Kind::Conv ? b.numel() / b.size(0) : a.size(-1);
      enqueue_sized(stream_for(out.front()), name->c_str(), numel * depth, std::move(work));
    }
    for (size_t k = 0; k < outputs.size(); ++k) slots[outputs[k]] = std::move(out[k]);
  }
};

// ---- size arithmetic ----

struct SymStep final : ProgramStep {
  std::string fn;
  std::vector<int> inputs;
  int output = -1;
  int64_t value = 0;  // const: the value; size: the dim

  void run(std::vector<c10::IValue>& slots) const override {
    auto arg = [&](size_t k) { return slots[inputs[k]].toInt(); };
    int64_t result = 0;
    if (fn == "const") {
      result = value;
    } else if (fn == "size") {
      const at::Tensor& t = slots[inputs[0]].toTensor();
      result = t.size(value);
    } else if (fn == "neg") {
      result = -arg(0);
    } else if (fn == "add") {
      result = arg(0) + arg(1);
    } else if (fn == "sub") {
      result = arg(0) - arg(1);
    } else if (fn == "mul") {
      result = arg(0) * arg(1);
    } else if (fn == "floordiv" || fn == "mod") {
      const int64_t a = arg(0), b = arg(1);
      TORCH_CHECK(b != 0, "integer division by zero in a size expression");
      int64_t q = a / b;
      if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
      result = fn == "floordiv" ? q : a - q * b;
    } else {
      TORCH_CHECK(false, "unknown size arithmetic '", fn, "'");
    }
    slots[output] = result;
  }
};

// Each output's dim order (row-major when the IR leaves it unset) and, into `dtypes`, its dtype.
std::vector<std::vector<int>> dim_orders_of(const Graph& graph, const Node& node,
                                            std::vector<at::ScalarType>* dtypes) {
  std::vector<std::vector<int>> orders;
  for (int output : node.outputs) {
    const compiler::Value& v = graph.values[output];
    dtypes->push_back(scalar_type_of(v.dtype));
    std::vector<int> order = v.dim_order;
    if (order.size() != v.shape.size()) {
      order.clear();
      for (size_t d = 0; d < v.shape.size(); ++d) order.push_back(static_cast<int>(d));
    }
    orders.push_back(std::move(order));
  }
  return orders;
}

std::vector<int> refs_of(const Node& node, const char* name) {
  std::vector<int> out;
  if (const Attr* a = node.attr(name)) {
    for (const Attr& item : a->list) out.push_back(static_cast<int>(item.i));
  }
  return out;
}

}  // namespace

CompiledProgram::CompiledProgram(const Graph& graph) {
  const char* submission = std::getenv("OPENNEURON_GRAPH_SUBMISSION");
  gather_ = submission == nullptr || std::string(submission) != "per_kernel";
  num_slots_ = graph.values.size();
  input_slots_ = graph.inputs;
  output_slots_ = graph.outputs;
  for (size_t index = 0; index < graph.nodes.size(); ++index) {
    const Node& node = graph.nodes[index];
    std::string label = "graph node " + std::to_string(index) + " (" +
                        (node.op == compiler::ops::kExtern ? node.string_attr("target") : node.op) +
                        ")";
    const std::string source = node.string_attr("src");
    if (!source.empty()) label += " at " + source;
    std::unique_ptr<ProgramStep> step;
    try {
      if (node.op == compiler::ops::kExtern) {
        step = extern_step(graph, node);
        ++extern_calls_;
        sibling_gemms_ += static_cast<int>(node.int_attr("merged", 0));
      } else if (node.op == compiler::ops::kFused && compiler::ends_in_reduce(*node.body)) {
        auto fused = std::make_unique<FusedReductionStep>();
        fused->kernel = std::make_shared<const compiler::FusedReduction>(
            compiler::build_fused_reduction(*node.body));
        fused->name = std::make_shared<const std::string>(label);
        fused->inputs = node.inputs;
        fused->outputs = node.outputs;
        fused->dim_orders = dim_orders_of(graph, node, &fused->output_dtypes);
        const Node& reduce = node.body->nodes.back();
        fused->rank = node.body->values[reduce.inputs[0]].shape.size();
        fused->keepdim = reduce.int_attr("keepdim", 0) != 0;
        fused_ops_ += static_cast<int>(fused->kernel->elementwise.instrs.size()) + 1;
        ++fused_kernels_;
        ++fused_reductions_;
        step = std::move(fused);
      } else if (node.op == compiler::ops::kFused) {
        auto fused = std::make_unique<FusedStep>();
        fused->kernel =
            std::make_shared<const compiler::FusedKernel>(compiler::build_fused_kernel(*node.body));
        fused->name = std::make_shared<const std::string>(label);
        fused->inputs = node.inputs;
        fused->outputs = node.outputs;
        fused->dim_orders = dim_orders_of(graph, node, &fused->output_dtypes);
        const compiler::Value& first = graph.values[node.outputs[0]];
        fused->rank = first.shape.size();
        for (const compiler::Dim& d : first.shape) fused->static_shape.push_back(d.size);
        const std::vector<int> reuse = refs_of(node, "reuse");
        for (size_t k = 0; k + 1 < reuse.size(); k += 2) {
          fused->reuse.emplace_back(reuse[k], reuse[k + 1]);
        }
        fused_ops_ += static_cast<int>(fused->kernel->instrs.size());
        ++fused_kernels_;
        step = std::move(fused);
      } else if (node.op == compiler::ops::kGemmEpilogue) {
        auto gemm = std::make_unique<GemmEpilogueStep>();
        gemm->kernel =
            std::make_shared<const compiler::FusedKernel>(compiler::build_fused_kernel(*node.body));
        gemm->name = std::make_shared<const std::string>(label);
        gemm->inputs = node.inputs;
        const std::string kind = node.string_attr("gemm");
        gemm->kind = kind == "conv"  ? GemmEpilogueStep::Kind::Conv
                     : kind == "bmm" ? GemmEpilogueStep::Kind::Bmm
                                     : GemmEpilogueStep::Kind::Gemm;
        gemm->operands = compiler::epilogue_operands(node);
        if (gemm->kind == GemmEpilogueStep::Kind::Conv) gemm->conv = compiler::conv_params_of(node);
        const Attr* alpha = node.attr("alpha");
        const Attr* beta = node.attr("beta");
        gemm->alpha = alpha ? alpha->f : 1.0;
        gemm->beta = beta ? beta->f : 0.0;
        gemm->outputs = node.outputs;
        gemm->dim_orders = dim_orders_of(graph, node, &gemm->output_dtypes);
        gemm->product_into = static_cast<int>(node.int_attr("product_into", -1));
        const compiler::Value& product = node.body->values[node.body->inputs[0]];
        const compiler::Value& left = graph.values[node.inputs[0]];
        gemm->widened = product.dtype != left.dtype;
        widened_epilogues_ += gemm->widened;
        bool known = true;
        for (const compiler::Dim& d : product.shape) known &= !d.is_symbolic();
        if (known) {
          for (const compiler::Dim& d : product.shape) gemm->static_shape.push_back(d.size);
        }
        fused_ops_ += static_cast<int>(gemm->kernel->instrs.size());
        ++fused_kernels_;
        ++gemm_epilogues_;
        bmm_epilogues_ += gemm->kind == GemmEpilogueStep::Kind::Bmm;
        conv_epilogues_ += gemm->kind == GemmEpilogueStep::Kind::Conv;
        step = std::move(gemm);
      } else if (node.op == compiler::ops::kSym) {
        auto sym = std::make_unique<SymStep>();
        sym->fn = node.string_attr("fn");
        sym->inputs = node.inputs;
        sym->output = node.outputs.at(0);
        sym->value = node.int_attr(sym->fn == "size" ? "dim" : "value", 0);
        step = std::move(sym);
      } else {
        TORCH_CHECK(false, "the program runner does not execute '", node.op, "' nodes");
      }
    } catch (c10::Error& e) {
      e.add_context("while building " + label);
      throw;
    }
    step->label = std::move(label);
    step->free = refs_of(node, "free");
    steps_.push_back(std::move(step));
  }
}

CompiledProgram::~CompiledProgram() = default;

namespace {

// The current stream of the device of the first neuron tensor among the inputs, if any.
runtime::Stream* first_device_stream(const std::vector<c10::IValue>& slots,
                                     const std::vector<int>& input_slots) {
  for (int slot : input_slots) {
    if (slots[slot].isTensor() && slots[slot].toTensor().is_privateuseone()) {
      return &stream_for(slots[slot].toTensor());
    }
  }
  return nullptr;
}

// The program's kernels on one stream reach it as one submission (runtime::Stream gathering);
// whatever the program reads on the host submits what it has gathered so far first.
class GatheredSubmission {
 public:
  explicit GatheredSubmission(runtime::Stream* stream)
      : stream_(stream != nullptr && stream->begin_gather() ? stream : nullptr) {}
  ~GatheredSubmission() {
    if (stream_ != nullptr) stream_->end_gather();
  }
  GatheredSubmission(const GatheredSubmission&) = delete;
  GatheredSubmission& operator=(const GatheredSubmission&) = delete;

 private:
  runtime::Stream* stream_;
};

}  // namespace

std::vector<c10::IValue> CompiledProgram::run(std::vector<c10::IValue> inputs) const {
  TORCH_CHECK(inputs.size() == input_slots_.size(), "the compiled graph takes ",
              input_slots_.size(), " inputs, got ", inputs.size());
  std::vector<c10::IValue> slots(num_slots_);
  for (size_t k = 0; k < inputs.size(); ++k) slots[input_slots_[k]] = std::move(inputs[k]);
  inputs.clear();
  GatheredSubmission submission(gather_ ? first_device_stream(slots, input_slots_) : nullptr);
  for (const auto& step : steps_) {
    try {
      step->run(slots);
    } catch (c10::Error& e) {
      last_failure_ = step->label;
      e.add_context("in " + step->label);
      throw;
    } catch (...) {  // e.g. a Python error from a dispatch mode: the caller adds the node
      last_failure_ = step->label;
      throw;
    }
    for (int slot : step->free) slots[slot] = c10::IValue();
  }
  std::vector<c10::IValue> results;
  results.reserve(output_slots_.size());
  for (int slot : output_slots_) results.push_back(slot < 0 ? c10::IValue() : slots[slot]);
  return results;
}

int64_t CompiledProgram::layout_repairs() { return bridge::layout_repairs.load(); }

std::string CompiledProgram::kernel_listing() const {
  std::ostringstream out;
  for (const auto& step : steps_) {
    if (const auto* fused = dynamic_cast<const FusedStep*>(step.get())) {
      out << "# " << step->label << "\n" << fused->kernel->listing() << "\n";
    } else if (const auto* reduction = dynamic_cast<const FusedReductionStep*>(step.get())) {
      static const char* const kNames[] = {"sum", "mean", "amax"};
      out << "# " << step->label << ": then " << kNames[static_cast<int>(reduction->kernel->fn)]
          << " over dims mask 0x" << std::hex << reduction->kernel->mask << std::dec << "\n"
          << (reduction->kernel->has_elementwise ? reduction->kernel->elementwise.listing() : "")
          << "\n";
    } else if (const auto* gemm = dynamic_cast<const GemmEpilogueStep*>(step.get())) {
      using Kind = GemmEpilogueStep::Kind;
      const char* product = gemm->kind == Kind::Conv
                                ? (gemm->operands == 3 ? "conv2d+bias" : "conv2d")
                            : gemm->kind == Kind::Bmm ? "bmm"
                            : gemm->operands == 3     ? "addmm"
                                                      : "mm";
      out << "# " << step->label << ": %0 = " << product << " (alpha " << gemm->alpha << ", beta "
          << gemm->beta << ") into "
          << (gemm->product_into >= 0 ? "output " + std::to_string(gemm->product_into)
                                      : std::string("a buffer"))
          << ", then\n"
          << gemm->kernel->listing() << "\n";
    }
  }
  return out.str();
}

}  // namespace openneuron::bridge
