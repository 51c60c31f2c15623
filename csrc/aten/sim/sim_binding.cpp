// The simulator's Python entry points in `openneuron._C`: decode a traced NKI program, run it,
// return outputs and timing. Thin on purpose (no torch headers): the front end is Python.
#include "aten/sim/sim_binding.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>

#include "sim/cost_model.h"
#include "sim/errors.h"
#include "sim/profile.h"
#include "sim/simulator.h"
#include "sim/timing.h"

namespace openneuron::bridge {

namespace {

namespace py = pybind11;
using namespace openneuron::sim;

// Layout of one encoded instruction (int64 words), shared with encode() in
// openneuron/nki/kernel.py.
constexpr int kHeaderWords = 12;
constexpr int kPatternWords = 15;
// Then a run-time offset: kind (0 none, 1 scalar, 2 vector), on_dst, skip out of bounds,
// stride, bound, and the index pattern.
constexpr int kIndirectWords = 5 + kPatternWords;
// Patterns: dst, dst2, src[0..3].
constexpr int kPatternSlots = 6;
constexpr int kInstructionWords = kHeaderWords + kPatternSlots * kPatternWords + kIndirectWords;

AccessPattern decode_pattern(const int64_t* words) {
  AccessPattern ap;
  ap.buffer = static_cast<int32_t>(words[0]);
  ap.dtype = static_cast<DType>(words[1]);
  ap.start_partition = static_cast<int32_t>(words[2]);
  ap.offset = words[3];
  ap.rank = static_cast<int32_t>(words[4]);
  for (int d = 0; d < kMaxDims; ++d) {
    ap.dims[d].size = words[5 + d];
    ap.dims[d].stride = words[10 + d];
  }
  return ap;
}

Program decode(const std::string& source, const py::list& buffers,
               const py::array_t<int64_t, py::array::c_style>& words,
               const py::array_t<double, py::array::c_style>& immediates) {
  Program program;
  program.source = source;
  for (const auto& item : buffers) {
    const auto fields = item.cast<py::tuple>();
    Buffer buffer;
    buffer.name = fields[0].cast<std::string>();
    buffer.memory = static_cast<Memory>(fields[1].cast<int>());
    buffer.dtype = static_cast<DType>(fields[2].cast<int>());
    buffer.partitions = fields[3].cast<int64_t>();
    buffer.bytes_per_partition = fields[4].cast<int64_t>();
    buffer.line = fields[5].cast<int32_t>();
    buffer.initialized = fields[6].cast<bool>();
    program.buffers.push_back(std::move(buffer));
  }
  const auto count = static_cast<size_t>(words.shape(0));
  if (count && (words.shape(1) != kInstructionWords || immediates.shape(1) != 3)) {
    throw std::invalid_argument("instruction encoding has the wrong width");
  }
  program.instructions.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const int64_t* w = words.data(i, 0);
    Instruction& ins = program.instructions[i];
    ins.opcode = static_cast<Opcode>(w[0]);
    ins.engine = static_cast<Engine>(w[1]);
    ins.alu0 = static_cast<AluOp>(w[2]);
    ins.alu1 = static_cast<AluOp>(w[3]);
    ins.function = static_cast<ActivationFunction>(w[4]);
    ins.accumulate = w[5] & 1;
    ins.reverse0 = w[5] & 2;
    ins.reverse1 = w[5] & 4;
    ins.negate = w[5] & 8;
    ins.carries_unwritten = w[5] & 16;
    ins.dma_transpose = w[5] & 32;
    ins.transfer_piece = w[5] & 64;
    ins.continues_transfer = w[5] & 128;
    ins.reduce_dims = static_cast<int32_t>(w[6]);
    ins.line = static_cast<int32_t>(w[7]);
    for (int k = 0; k < 4; ++k) ins.pattern[k] = w[8 + k];
    ins.dst = decode_pattern(w + kHeaderWords);
    ins.dst2 = decode_pattern(w + kHeaderWords + kPatternWords);
    for (int s = 0; s < 4; ++s)
      ins.src[s] = decode_pattern(w + kHeaderWords + (2 + s) * kPatternWords);
    const int64_t* indirect = w + kHeaderWords + kPatternSlots * kPatternWords;
    ins.indirect.kind = static_cast<IndirectKind>(indirect[0]);
    ins.indirect.on_dst = indirect[1] != 0;
    ins.indirect.skip_out_of_bounds = indirect[2] != 0;
    ins.indirect.stride = indirect[3];
    ins.indirect.bound = indirect[4];
    ins.indirect.index = decode_pattern(indirect + 5);
    const double* f = immediates.data(i, 0);
    ins.imm0 = static_cast<float>(f[0]);
    ins.imm1 = static_cast<float>(f[1]);
    ins.imm2 = static_cast<float>(f[2]);
  }
  return program;
}

[[noreturn]] void raise_rule(const SimError& error) {
  py::object cls = py::module_::import("openneuron.nki.errors").attr("KernelRuleError");
  py::object value = cls(error.rule, error.line, std::string(error.what()));
  PyErr_SetObject(cls.ptr(), value.ptr());
  throw py::error_already_set();
}

py::dict timeline_dict(const Program& program, const Timeline& timeline, bool with_trace,
                       const std::string& profile) {
  py::dict result;
  result["total_ns"] = timeline.total_ns;
  result["dma_bytes"] = timeline.dma_bytes;
  result["matmul_flops"] = timeline.matmul_flops;
  py::dict engines;
  for (int e = 0; e < static_cast<int>(Engine::kCount); ++e) {
    py::dict engine;
    engine["instructions"] = timeline.engines[e].instructions;
    engine["busy_ns"] = timeline.engines[e].busy_ns;
    engine["utilization"] = timeline.engines[e].utilization;
    engines[engine_name(static_cast<Engine>(e))] = engine;
  }
  result["engines"] = engines;
  if (with_trace) result["trace"] = chrome_trace(program, timeline, profile);
  return result;
}

// A traced program decoded, placed and checked once; run() executes it on arrays bound in
// place (no copies in or out), timing() schedules it once and keeps the result.
class SimProgram {
 public:
  SimProgram(const std::string& profile_name, const std::string& source, const py::list& buffers,
             const py::array_t<int64_t, py::array::c_style>& words,
             const py::array_t<double, py::array::c_style>& immediates)
      : profile_name_(profile_name) {
    const CoreProfile& profile = core_profile(profile_name);
    Program program = decode(source, buffers, words, immediates);
    try {
      simulator_ = std::make_unique<Simulator>(std::move(program), profile);
    } catch (const SimError& error) {
      raise_rule(error);
    }
  }

  // arrays: {HBM buffer index: C-contiguous array of exactly that buffer's bytes}. Inputs are
  // read in place; kernel-created tensors are written into theirs. Unbound buffers get storage
  // of their own (inputs read as zeros).
  void run(const py::dict& arrays, bool reference) {
    const Program& program = simulator_->program();
    std::vector<py::buffer_info> views;  // keeps the buffers' views alive while running
    for (const auto& item : arrays) {
      const auto index = item.first.cast<int32_t>();
      if (index < 0 || index >= static_cast<int32_t>(program.buffers.size()) ||
          program.buffers[index].memory != Memory::kHbm) {
        throw std::invalid_argument("buffer " + std::to_string(index) + " is not an HBM tensor");
      }
      py::buffer_info info = py::reinterpret_borrow<py::buffer>(item.second).request(true);
      const int64_t bytes = info.size * info.itemsize;
      if (bytes != program.buffers[index].bytes_per_partition) {
        throw std::invalid_argument("array for '" + program.buffers[index].name + "' holds " +
                                    std::to_string(bytes) + " bytes, the tensor " +
                                    std::to_string(program.buffers[index].bytes_per_partition));
      }
      simulator_->bind(index, static_cast<uint8_t*>(info.ptr));
      views.push_back(std::move(info));
    }
    bool failed = false;
    SimError failure("", "", "", 0);
    {
      py::gil_scoped_release no_gil;
      try {
        simulator_->run(reference);
      } catch (const SimError& error) {
        failed = true;
        failure = error;
      }
    }
    if (failed) raise_rule(failure);
  }

  py::dict timing(bool with_trace) {
    Timeline timeline;
    {
      py::gil_scoped_release no_gil;
      timeline = simulator_->timing();
    }
    py::dict result;
    result["timing"] = timeline_dict(simulator_->program(), timeline, with_trace, profile_name_);
    result["sbuf_peak_bytes"] = simulator_->layout().sbuf_peak_bytes;
    result["psum_peak_bytes"] = simulator_->layout().psum_peak_bytes;
    result["instructions"] = simulator_->program().instructions.size();
    return result;
  }

 private:
  std::string profile_name_;
  std::unique_ptr<Simulator> simulator_;
};

py::dict cost_dict(const OpCost& cost) {
  py::dict result;
  result["total_ns"] = cost.total_ns;
  result["instructions"] = cost.instructions;
  result["flops"] = cost.flops;
  result["dma_bytes"] = cost.dma_bytes;
  result["bound"] = engine_name(cost.bound);
  py::dict engines;
  for (int e = 0; e < static_cast<int>(Engine::kCount); ++e)
    engines[engine_name(static_cast<Engine>(e))] = cost.engine_ns[e];
  result["engines"] = engines;
  return result;
}

py::dict matmul_cost_dict(const std::string& profile, int64_t batch, int64_t m, int64_t k,
                          int64_t n, const std::string& dtype) {
  return cost_dict(matmul_cost(core_profile(profile), batch, m, k, n, dtype_from_name(dtype)));
}

py::dict rows_cost_dict(const std::string& profile, int64_t rows, int64_t cols,
                        const std::vector<std::pair<int, int>>& passes, const std::string& dtype,
                        int64_t bytes_in, int64_t bytes_out) {
  std::vector<Pass> decoded;
  for (const auto& [opcode, inputs] : passes) {
    if (opcode < 0 || opcode >= static_cast<int>(Opcode::kCount))
      throw std::invalid_argument("unknown opcode " + std::to_string(opcode));
    decoded.push_back({static_cast<Opcode>(opcode), inputs});
  }
  return cost_dict(rows_cost(core_profile(profile), rows, cols, decoded, dtype_from_name(dtype),
                             bytes_in, bytes_out));
}

py::dict profile_dict(const std::string& name) {
  const CoreProfile& p = core_profile(name);
  py::dict d;
  d["name"] = p.name;
  d["partitions"] = p.partitions;
  d["sbuf_bytes_per_partition"] = p.sbuf_bytes_per_partition;
  d["psum_bytes_per_partition"] = p.psum_bytes_per_partition;
  d["psum_bank_bytes"] = p.psum_bank_bytes;
  d["matmul_max_k"] = p.matmul_max_k;
  d["matmul_max_m"] = p.matmul_max_m;
  d["matmul_max_n"] = p.matmul_max_n;
  d["tensor_ghz"] = p.tensor_ghz;
  d["vector_ghz"] = p.vector_ghz;
  d["scalar_ghz"] = p.scalar_ghz;
  d["gpsimd_ghz"] = p.gpsimd_ghz;
  d["dma_engines"] = p.dma_engines;
  d["dma_bytes_per_ns_per_engine"] = p.dma_bytes_per_ns_per_engine;
  d["dma_fixed_ns"] = p.dma_fixed_ns;
  d["hbm_gb_per_s"] = p.hbm_gb_per_s;
  d["peak_bf16_tflops"] = p.peak_bf16_tflops;
  d["peak_fp32_tflops"] = p.peak_fp32_tflops;
  d["vector_fp32_tflops"] = p.vector_fp32_tflops;
  return d;
}

}  // namespace

void register_sim_bindings(py::module_& m) {
  py::class_<SimProgram>(m, "_SimProgram",
                         "A traced NKI program placed and checked for the simulated NeuronCore.")
      .def(py::init<const std::string&, const std::string&, const py::list&,
                    const py::array_t<int64_t, py::array::c_style>&,
                    const py::array_t<double, py::array::c_style>&>(),
           py::arg("profile"), py::arg("source"), py::arg("buffers"), py::arg("words"),
           py::arg("immediates"))
      .def("run", &SimProgram::run, py::arg("arrays"), py::arg("reference") = false,
           "Executes the program on HBM arrays bound in place.")
      .def("timing", &SimProgram::timing, py::arg("trace") = false,
           "The per-engine schedule, utilisation and memory peaks.");
  m.def("_sim_matmul_cost", &matmul_cost_dict, py::arg("profile"), py::arg("batch"), py::arg("m"),
        py::arg("k"), py::arg("n"), py::arg("dtype"),
        "Projected time of batch x [m,k] @ [k,n] on one NeuronCore (per engine, ns).");
  m.def("_sim_rows_cost", &rows_cost_dict, py::arg("profile"), py::arg("rows"), py::arg("cols"),
        py::arg("passes"), py::arg("dtype"), py::arg("bytes_in"), py::arg("bytes_out"),
        "Projected time of an op made of instruction passes over [rows, cols] (per engine, ns).");
  m.def("_sim_profile", &profile_dict, "The constants of a NeuronCore profile (trn2, trn3).");
  m.def("_sim_instruction_words", [] { return kInstructionWords; });
}

}  // namespace openneuron::bridge
