// The `_C` functions behind openneuron.compile: pointwise planning for the FX lowering, and
// compiling IR text into a program the runtime runs.
#include <ATen/ScalarOps.h>
#include <torch/csrc/jit/python/pybind_utils.h>
#include <torch/csrc/utils/pybind.h>

#include <chrono>
#include <stdexcept>

#include "aten/compile/compiled_program.h"
#include "aten/ops/pointwise/ops_elementwise_common.h"
#include "aten/ops/pointwise/ops_elementwise_pointwise.h"
#include "compiler/epilogue_faults.h"
#include "compiler/names.h"
#include "compiler/pipeline.h"
#include "compiler/text.h"
#include "compiler/verify.h"

namespace openneuron::bridge {

namespace {

namespace py = pybind11;

// How the lowering should express a functional pointwise ATen call, or None when it is not one
// the device computes natively (the call then stays an ATen call).
py::object plan_for_compiler(const std::string& overload_name, const py::list& args) {
  const PointwiseSpec* spec = find_pointwise_spec(overload_name);
  const auto dot = overload_name.find('.');
  const std::string base = "aten::" + overload_name.substr(0, dot);
  const std::string overload = dot == std::string::npos ? "" : overload_name.substr(dot + 1);
  const auto handle = c10::Dispatcher::singleton().findSchema({base, overload});
  if (!handle) return py::none();
  const auto& schema = handle->schema();
  if (schema.arguments().size() != args.size() || schema.is_mutable()) return py::none();
  std::vector<c10::IValue> values;
  for (size_t k = 0; k < args.size(); ++k) {
    const c10::TypePtr& type = schema.arguments()[k].type();
    const py::handle item = args[k];
    if (type->kind() == c10::TypeKind::TensorType && !THPVariable_Check(item.ptr())) {
      // A Python number where the schema takes a tensor: the wrapped scalar eager would see.
      values.emplace_back(at::native::wrapped_scalar_tensor(
          torch::jit::toIValue(item, c10::NumberType::get()).toScalar()));
      continue;
    }
    values.push_back(torch::jit::toIValue(item, type));
  }
  PointwisePlan plan;
  const bool planned = spec ? plan_pointwise(*spec, schema, values, &plan)
                            : plan_typed_elementwise(overload_name, values, &plan);
  if (!planned) return py::none();
  py::dict result;
  result["fn"] = compiler::pointwise_op_name(plan.op);
  result["compute"] = compiler::dtype_short_name(kernel_dtype(plan.compute));
  result["result"] = compiler::dtype_short_name(kernel_dtype(plan.result));
  py::list params;
  for (int k = 0; k < 4; ++k) {
    if (!plan.params.present[k]) {
      params.append(py::none());
    } else if (plan.params.values[k].is_integral) {
      params.append(plan.params.values[k].i);
    } else {
      params.append(plan.params.values[k].f);
    }
  }
  result["params"] = params;
  // Each operand: ("arg", position) or ("scalar", value, dtype of the host copy).
  py::list operands;
  const at::ScalarType host = elementwise::host_scalar_dtype(plan.compute);
  for (size_t k = 0; k < plan.operands.size(); ++k) {
    if (plan.operand_args[k] >= 0) {
      operands.append(py::make_tuple("arg", plan.operand_args[k]));
      continue;
    }
    const at::Scalar value = plan.operands[k].item();
    py::object number = value.isFloatingPoint() ? py::object(py::float_(value.toDouble()))
                                                : py::object(py::int_(value.toLong()));
    operands.append(
        py::make_tuple("scalar", number, compiler::dtype_short_name(kernel_dtype(host))));
  }
  result["operands"] = operands;
  return result;
}

// Every ScalarType as (torch.dtype, IR short name or None, c10 name): the lowering's dtype
// table, built from the compiler's own spellings.
py::list dtype_names() {
  py::list out;
  for (int k = 0; k < static_cast<int>(at::ScalarType::NumOptions); ++k) {
    const auto st = static_cast<at::ScalarType>(k);
    py::object dtype;
    try {
      dtype = py::cast(st);
    } catch (const std::exception&) {  // a ScalarType without a torch.dtype
      continue;
    }
    py::object short_name = py::none();
    try {
      short_name = py::str(compiler::dtype_short_name(kernel_dtype(st)));
    } catch (const std::exception&) {  // not a dtype the device stores (complex, quantized)
    }
    out.append(py::make_tuple(dtype, short_name, std::string(c10::toString(st))));
  }
  return out;
}

// A compiled graph as Python sees it.
struct PyCompiledGraph {
  std::shared_ptr<CompiledProgram> program;
  std::string ir;
  std::vector<std::pair<std::string, std::string>> dumps;
  double compile_ms = 0;

  py::list run(const py::list& inputs) const {
    std::vector<c10::IValue> values;
    values.reserve(inputs.size());
    for (const py::handle& item : inputs) {
      if (THPVariable_Check(item.ptr())) {
        values.emplace_back(THPVariable_Unpack(item.ptr()));
      } else if (item.is_none()) {
        values.emplace_back();
      } else if (py::isinstance<py::bool_>(item)) {
        values.emplace_back(item.cast<bool>());
      } else if (py::isinstance<py::int_>(item) || torch::is_symint(item)) {
        values.emplace_back(py::cast<int64_t>(item));
      } else if (py::isinstance<py::float_>(item)) {
        values.emplace_back(item.cast<double>());
      } else {
        throw py::type_error("compiled graph input of unsupported type " +
                             std::string(py::str(item.get_type())));
      }
    }
    py::list results;
    for (const c10::IValue& v : program->run(std::move(values))) {
      results.append(torch::jit::toPyObject(v));
    }
    return results;
  }
};

PyCompiledGraph compile_text(const std::string& text, bool keep_dumps, bool run_passes, bool fuse,
                             bool gemm_epilogues, bool bmm_epilogues, bool conv_epilogues,
                             bool eliminate_layouts, bool bitwise, bool sibling_gemms) {
  const auto start = std::chrono::steady_clock::now();
  PyCompiledGraph result;
  compiler::Graph graph;
  try {
    graph = compiler::parse_graph(text);
    compiler::PassObserver observer;
    if (keep_dumps) {
      observer = [&](const std::string& pass, const compiler::Graph& g) {
        result.dumps.emplace_back(pass, compiler::print_graph(g));
      };
    }
    if (run_passes) {
      compiler::PipelineOptions options;
      options.fuse = fuse;
      options.gemm_epilogues = gemm_epilogues;
      options.bmm_epilogues = bmm_epilogues;
      options.conv_epilogues = conv_epilogues;
      options.eliminate_layouts = eliminate_layouts;
      options.bitwise = bitwise;
      options.sibling_gemms = sibling_gemms;
      compiler::run_pipeline(graph, observer, options);
    } else {
      compiler::verify(graph, "loading");
    }
  } catch (const std::runtime_error& e) {  // ParseError, VerifyError
    TORCH_CHECK(false, "openneuron compiler: ", e.what());
  }
  result.ir = compiler::print_graph(graph);
  result.program = std::make_shared<CompiledProgram>(graph);
  result.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace

void register_compiler_bindings(py::module& m) {
  m.def("_compiler_plan_pointwise", &plan_for_compiler);
  m.def("_compiler_dtype_names", &dtype_names);
  m.def("_compiler_layout_repairs", &CompiledProgram::layout_repairs);
  // The test-only wrong epilogue (compiler/epilogue_faults.h): tests switch it between runs.
  m.def("_compiler_set_fault", [](const std::string& name) {
    try {
      compiler::set_epilogue_fault(compiler::parse_epilogue_fault(name));
    } catch (const std::invalid_argument& e) {
      TORCH_CHECK_VALUE(false, e.what());
    }
  });
  m.def("_compiler_fault",
        [] { return std::string(compiler::epilogue_fault_name(compiler::epilogue_fault())); });
  py::class_<PyCompiledGraph>(m, "_CompiledGraph")
      .def("run", &PyCompiledGraph::run)
      .def_readonly("ir", &PyCompiledGraph::ir)
      .def_property_readonly("last_failure",
                             [](const PyCompiledGraph& g) { return g.program->last_failure(); })
      .def_readonly("dumps", &PyCompiledGraph::dumps)
      .def_readonly("compile_ms", &PyCompiledGraph::compile_ms)
      .def_property_readonly("kernel_listing",
                             [](const PyCompiledGraph& g) { return g.program->kernel_listing(); })
      .def_property_readonly("stats", [](const PyCompiledGraph& g) {
        py::dict stats;
        stats["fused_kernels"] = g.program->fused_kernels();
        stats["fused_ops"] = g.program->fused_ops();
        stats["extern_calls"] = g.program->extern_calls();
        stats["gemm_epilogues"] = g.program->gemm_epilogues();
        stats["widened_epilogues"] = g.program->widened_epilogues();
        stats["sibling_gemms"] = g.program->sibling_gemms();
        stats["bmm_epilogues"] = g.program->bmm_epilogues();
        stats["conv_epilogues"] = g.program->conv_epilogues();
        stats["fused_reductions"] = g.program->fused_reductions();
        return stats;
      });
  // run_passes=false loads an already optimised graph (a disk cache entry).
  m.def("_compiler_compile", &compile_text, py::arg("text"), py::arg("keep_dumps") = false,
        py::arg("run_passes") = true, py::arg("fuse") = true, py::arg("gemm_epilogues") = true,
        py::arg("bmm_epilogues") = true, py::arg("conv_epilogues") = true,
        py::arg("eliminate_layouts") = true, py::arg("bitwise") = true,
        py::arg("sibling_gemms") = true);
}

}  // namespace openneuron::bridge
