#include "aten/fallback/fallback_widening.h"

#include <ATen/core/ivalue.h>
#include <ATen/ops/empty_strided.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "aten/core/op_tracking.h"
#include "aten/fallback/fallback.h"

namespace openneuron::bridge {

namespace {

std::atomic<bool> g_widening{true};

using Widening = std::map<at::ScalarType, at::ScalarType>;  // original dtype -> computed at

// Ops whose CUDA kernels take integer (or bool) inputs where the CPU's do not; any other op's
// CPU error for an integer or bool dtype stands, since CUDA refuses those too.
bool has_cuda_integer_kernel(const std::string& name) {
  static const std::set<std::string> kOps = {"aten::histc", "aten::histc.out"};
  return kOps.count(name) > 0;
}
bool has_cuda_bool_kernel(const std::string& name) {
  static const std::set<std::string> kOps = {"aten::abs", "aten::abs_", "aten::abs.out",
                                             "aten::trace"};
  return kOps.count(name) > 0;
}

// Ops whose CPU kernels accept 16-bit floats but compute in them (polygamma's series overflows
// float16 to inf and loses digits), where CUDA computes at float32 and rounds once: their
// 16-bit arguments widen before the host run, as if the CPU had refused them.
bool computes_16bit_at_float32_on_cuda(const std::string& name) {
  static const std::set<std::string> kOps = {"aten::polygamma", "aten::polygamma.out",
                                             "aten::polygamma_"};
  return kOps.count(name) > 0;
}

// The dtype a CPU kernel's refusal names: AT_DISPATCH's ("\"histogram_cpu\" not implemented
// for 'Int'") and the FFT's ("Unsupported dtype Half", "MKL FFT doesn't support tensors of
// type: Half").
std::optional<at::ScalarType> dtype_named_in(const std::string& message) {
  static const std::pair<const char*, char> kMarkers[] = {
      {"not implemented for '", '\''},
      {"Unsupported dtype ", ' '},
      {"doesn't support tensors of type: ", ' '},
  };
  for (const auto& [marker, terminator] : kMarkers) {
    const size_t at = message.find(marker);
    if (at == std::string::npos) continue;
    const size_t begin = at + std::string(marker).size();
    size_t end = message.find(terminator, begin);
    if (end == std::string::npos) end = message.size();
    std::string named = message.substr(begin, end - begin);
    while (!named.empty() && (named.back() == '\n' || named.back() == '.')) named.pop_back();
    for (int i = 0; i < static_cast<int>(at::ScalarType::NumOptions); ++i) {
      const auto type = static_cast<at::ScalarType>(i);
      if (named == c10::toString(type)) return type;
    }
  }
  return std::nullopt;
}

// The next dtype up that holds every value of `type`, or none where CUDA's contract gives no
// reason to widen (integers and bool outside has_cuda_integer_kernel / has_cuda_bool_kernel).
std::optional<at::ScalarType> wider_dtype(at::ScalarType type, bool integers_too, bool bool_too) {
  switch (type) {
    case at::kBool:
      if (bool_too) return at::kLong;
      return std::nullopt;
    case at::kHalf:
    case at::kBFloat16:
    case at::kFloat8_e4m3fn:
    case at::kFloat8_e5m2:
    case at::kFloat8_e4m3fnuz:
    case at::kFloat8_e5m2fnuz:
      return at::kFloat;
    case at::kFloat:
      return at::kDouble;
    case at::kComplexHalf:
      return at::kComplexFloat;
    case at::kComplexFloat:
      return at::kComplexDouble;
    case at::kByte:
    case at::kChar:
    case at::kShort:
    case at::kInt:
    case at::kUInt16:
    case at::kUInt32:
      if (integers_too) return at::kLong;
      return std::nullopt;
    case at::kLong:
    case at::kUInt64:
      if (integers_too) return at::kDouble;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

// Extends `widening` after a run that failed on `failing`; false when nothing wider exists.
bool widen_further(Widening& widening, at::ScalarType failing, bool integers_too, bool bool_too) {
  bool changed = false;
  for (auto& [original, computed] : widening) {
    if (computed != failing) continue;
    const auto wider = wider_dtype(failing, integers_too, bool_too);
    if (!wider) return false;
    computed = *wider;
    changed = true;
  }
  if (changed) return true;
  if (widening.count(failing) > 0) return false;
  const auto wider = wider_dtype(failing, integers_too, bool_too);
  if (!wider) return false;
  widening[failing] = *wider;
  return true;
}

// A neuron argument as a meta tensor of the same sizes, strides and dtype.
c10::IValue as_meta(const c10::IValue& value) {
  auto meta_of = [](const at::Tensor& tensor) {
    if (!tensor.defined() || !tensor.is_privateuseone()) return tensor;
    return at::empty_strided(tensor.sizes(), tensor.strides(),
                             tensor.options().device(c10::DeviceType::Meta));
  };
  if (value.isTensor()) return c10::IValue(meta_of(value.toTensor()));
  if (value.isTensorList()) {
    std::vector<at::Tensor> tensors = value.toTensorVector();
    for (at::Tensor& tensor : tensors) tensor = meta_of(tensor);
    return c10::IValue(c10::List<at::Tensor>(tensors));
  }
  return value;
}

// The dtypes the op returns for these arguments (one list per return; empty for non-tensor
// returns), from its meta kernel; none when the op has no meta kernel for them.
std::optional<std::vector<std::vector<at::ScalarType>>> result_dtypes_on_meta(
    const c10::OperatorHandle& op, const std::vector<c10::IValue>& arguments) {
  torch::jit::Stack meta;
  meta.reserve(arguments.size());
  for (const c10::IValue& value : arguments) meta.push_back(as_meta(value));
  try {
    op.callBoxed(&meta);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::vector<std::vector<at::ScalarType>> dtypes;
  for (const c10::IValue& value : meta) {
    std::vector<at::ScalarType> of_return;
    if (value.isTensor()) {
      of_return.push_back(value.toTensor().scalar_type());
    } else if (value.isTensorList()) {
      for (const at::Tensor& tensor : value.toTensorVector()) {
        of_return.push_back(tensor.scalar_type());
      }
    }
    dtypes.push_back(std::move(of_return));
  }
  return dtypes;
}

// An argument whose tensors were converted for the host run, and the originals they stand for.
struct WidenedArgument {
  size_t index;
  std::vector<at::Tensor> originals;
  std::vector<at::Tensor> widened;
};

// A ScalarType argument (the schema types it as an int, so it is known by its name).
bool is_scalar_type_argument(const c10::Argument& argument) {
  return argument.name() == "dtype" || argument.name() == "out_dtype";
}

// The arguments with every tensor of a widened dtype converted, and every dtype= argument that
// names a widened dtype naming what it is computed at (prod(x, dtype=complex32)).
torch::jit::Stack widened_arguments(const c10::OperatorHandle& op,
                                    const std::vector<c10::IValue>& arguments,
                                    const Widening& widening,
                                    std::vector<WidenedArgument>* converted) {
  auto widen = [&](const at::Tensor& tensor) {
    if (!tensor.defined()) return tensor;
    const auto found = widening.find(tensor.scalar_type());
    if (found == widening.end()) return tensor;
    // On the tensor's own device: cpu_fallback writes mutated arguments back with
    // _copy_from_and_resize, which only a device tensor has.
    return tensor.to(found->second);
  };
  torch::jit::Stack stack;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const c10::IValue& value = arguments[i];
    if (value.isTensor()) {
      at::Tensor widened = widen(value.toTensor());
      if (!widened.is_same(value.toTensor())) {
        converted->push_back({i, {value.toTensor()}, {widened}});
      }
      stack.emplace_back(widened);
    } else if (value.isTensorList()) {
      const std::vector<at::Tensor> originals = value.toTensorVector();
      std::vector<at::Tensor> widened;
      bool any = false;
      for (const at::Tensor& tensor : originals) {
        widened.push_back(widen(tensor));
        any = any || !widened.back().is_same(tensor);
      }
      if (any) converted->push_back({i, originals, widened});
      stack.emplace_back(c10::List<at::Tensor>(widened));
    } else if (value.isInt() && is_scalar_type_argument(op.schema().arguments()[i])) {
      const auto found = widening.find(static_cast<at::ScalarType>(value.toInt()));
      stack.emplace_back(found == widening.end() ? value : c10::IValue(found->second));
    } else {
      stack.push_back(value);
    }
  }
  return stack;
}

// A result of the widened run as the caller expects it: a mutated argument's stand-in becomes
// the argument itself (its values written back), anything else is rounded once to `expected`.
at::Tensor restore(const at::Tensor& result, std::optional<at::ScalarType> expected,
                   const std::vector<WidenedArgument>& converted, const Widening& widening) {
  if (!result.defined()) return result;
  for (const WidenedArgument& argument : converted) {
    for (size_t k = 0; k < argument.widened.size(); ++k) {
      if (result.is_same(argument.widened[k])) return argument.originals[k];
    }
  }
  if (!expected) {
    // No meta kernel: a result in a dtype we widened to goes back to what it widened from.
    for (const auto& [original, computed] : widening) {
      if (result.scalar_type() == computed) {
        expected = original;
        break;
      }
    }
  }
  return expected && *expected != result.scalar_type() ? result.to(*expected) : result;
}

// Widenings that cured an op before, so later calls skip the failing first run.
std::map<std::string, Widening>& learned_widenings() {
  static auto* learned = new std::map<std::string, Widening>();
  return *learned;
}
std::mutex g_learned_mutex;

// Whether a tensor argument, or a dtype= argument, has a dtype `widening` widens.
bool uses_any(const c10::OperatorHandle& op, const std::vector<c10::IValue>& arguments,
              const Widening& widening) {
  auto uses = [&](const at::Tensor& tensor) {
    return tensor.defined() && widening.count(tensor.scalar_type()) > 0;
  };
  for (size_t i = 0; i < arguments.size(); ++i) {
    const c10::IValue& value = arguments[i];
    if (value.isTensor() && uses(value.toTensor())) return true;
    if (value.isTensorList()) {
      for (const at::Tensor& tensor : value.toTensorVector()) {
        if (uses(tensor)) return true;
      }
    }
    if (value.isInt() && is_scalar_type_argument(op.schema().arguments()[i]) &&
        widening.count(static_cast<at::ScalarType>(value.toInt())) > 0) {
      return true;
    }
  }
  return false;
}

// Whether any tensor argument has dtype `type`.
bool has_tensor_of(const std::vector<c10::IValue>& arguments, at::ScalarType type) {
  for (const c10::IValue& value : arguments) {
    if (value.isTensor() && value.toTensor().defined() && value.toTensor().scalar_type() == type) {
      return true;
    }
  }
  return false;
}

// Runs the host run widened as `widening` says; rethrows what it raises.
void run_widened(const c10::OperatorHandle& op, torch::jit::Stack* stack, size_t first,
                 const std::vector<c10::IValue>& arguments, const Widening& widening,
                 const std::optional<std::vector<std::vector<at::ScalarType>>>& expected,
                 const std::function<void(torch::jit::Stack*)>& host_run) {
  std::vector<WidenedArgument> converted;
  torch::jit::Stack widened = widened_arguments(op, arguments, widening, &converted);
  stack->resize(first);
  stack->insert(stack->end(), widened.begin(), widened.end());
  host_run(stack);
  // Mutated arguments take their new values in their own dtype.
  const auto& schema_arguments = op.schema().arguments();
  for (const WidenedArgument& argument : converted) {
    const c10::AliasInfo* alias = schema_arguments[argument.index].alias_info();
    if (alias == nullptr || !alias->isWrite()) continue;
    for (size_t k = 0; k < argument.originals.size(); ++k) {
      const at::Tensor& original = argument.originals[k];
      const at::Tensor& widened = argument.widened[k];
      if (widened.is_same(original)) continue;
      // An out= the op resized (e.g. an empty one) takes the result's shape first.
      if (original.sizes() != widened.sizes()) original.resize_(widened.sizes());
      original.copy_(widened);
    }
  }
  const size_t returns = op.schema().returns().size();
  for (size_t r = 0; r < returns; ++r) {
    c10::IValue& value = (*stack)[stack->size() - returns + r];
    const std::vector<at::ScalarType>* dtypes = expected ? &(*expected)[r] : nullptr;
    auto expected_at = [&](size_t k) -> std::optional<at::ScalarType> {
      if (dtypes == nullptr || k >= dtypes->size()) return std::nullopt;
      return (*dtypes)[k];
    };
    if (value.isTensor()) {
      value = c10::IValue(restore(value.toTensor(), expected_at(0), converted, widening));
    } else if (value.isTensorList()) {
      std::vector<at::Tensor> results = value.toTensorVector();
      for (size_t k = 0; k < results.size(); ++k) {
        results[k] = restore(results[k], expected_at(k), converted, widening);
      }
      value = c10::IValue(c10::List<at::Tensor>(results));
    }
  }
}

// "torch.int32" for kInt: the name Python users know the dtype by.
std::string python_dtype_name(at::ScalarType type) {
  return "torch." + std::string(c10::getDtypeNames(type).first);
}

void record(const std::string& name, const Widening& widening) {
  for (const auto& [original, computed] : widening) {
    record_widened_fallback(name, python_dtype_name(original), python_dtype_name(computed));
  }
}

}  // namespace

void set_fallback_widening(bool enabled) { g_widening = enabled; }
bool fallback_widening() { return g_widening.load(); }

void run_widening_unsupported_dtypes(const c10::OperatorHandle& op, torch::jit::Stack* stack,
                                     const std::string& name, bool names_a_device,
                                     const std::function<void(torch::jit::Stack*)>& host_run) {
  const size_t first = stack->size() - op.schema().arguments().size();
  const std::vector<c10::IValue> arguments(stack->begin() + static_cast<std::ptrdiff_t>(first),
                                           stack->end());
  auto expected_dtypes = [&]() -> std::optional<std::vector<std::vector<at::ScalarType>>> {
    if (names_a_device) return std::nullopt;
    return result_dtypes_on_meta(op, arguments);
  };
  if (g_widening.load() && computes_16bit_at_float32_on_cuda(name)) {
    const Widening upfront = {{at::kHalf, at::kFloat}, {at::kBFloat16, at::kFloat}};
    if (uses_any(op, arguments, upfront)) {
      run_widened(op, stack, first, arguments, upfront, expected_dtypes(), host_run);
      Widening used;
      for (const auto& [original, computed] : upfront) {
        if (uses_any(op, arguments, {{original, computed}})) used[original] = computed;
      }
      record(name, used);
      return;
    }
  }
  if (g_widening.load()) {
    std::optional<Widening> learned;
    {
      std::lock_guard<std::mutex> lock(g_learned_mutex);
      const auto found = learned_widenings().find(name);
      if (found != learned_widenings().end()) learned = found->second;
    }
    if (learned && uses_any(op, arguments, *learned)) {
      run_widened(op, stack, first, arguments, *learned, expected_dtypes(), host_run);
      record(name, *learned);
      return;
    }
  }
  std::optional<at::ScalarType> failing;
  try {
    host_run(stack);
    return;
  } catch (const c10::Error& error) {
    if (!g_widening.load()) throw;
    failing = dtype_named_in(error.msg());
    const bool integers_too = has_cuda_integer_kernel(name);
    const bool bool_too = has_cuda_bool_kernel(name);
    Widening widening;
    if (!failing || !widen_further(widening, *failing, integers_too, bool_too)) throw;
    // The FFT names a complex tensor by its real part's dtype ("type: Half" for complex32, also
    // when a real out= sits beside it): the complex tensors widen with the real ones.
    if (at::isFloatingType(*failing) && has_tensor_of(arguments, c10::toComplexType(*failing))) {
      widen_further(widening, c10::toComplexType(*failing), integers_too, bool_too);
    }
    if (!uses_any(op, arguments, widening)) throw;
    const auto expected = expected_dtypes();
    // Each retry names the next dtype the CPU lacks; a handful of steps reaches float64.
    for (int attempt = 0; attempt < 6; ++attempt) {
      try {
        run_widened(op, stack, first, arguments, widening, expected, host_run);
        record(name, widening);
        std::lock_guard<std::mutex> lock(g_learned_mutex);
        learned_widenings()[name] = widening;
        return;
      } catch (const c10::Error& retry_error) {
        const auto next = dtype_named_in(retry_error.msg());
        if (!next || !widen_further(widening, *next, integers_too, bool_too)) break;
      }
    }
    throw;
  }
}

}  // namespace openneuron::bridge
