// The `openneuron._C` extension: what the Python device module needs from the runtime.
#include <torch/csrc/Generator.h>
#include <torch/csrc/utils/pybind.h>

#include <chrono>

#include "aten/core/device_allocator.h"
#include "aten/core/generator.h"
#include "aten/core/memory_history.h"
#include "aten/core/op_tracking.h"
#include "aten/core/runtime_errors.h"
#include "aten/distributed/distributed_bindings.h"
#include "aten/fallback/fallback.h"
#include "aten/fallback/sparse_fallback.h"
#include "aten/ops/shape/index_bounds.h"
#include "aten/sim/sim_binding.h"
#include "kernels/runtime/cpu_isa.h"
#include "kernels/runtime/gemm_library.h"
#include "kernels/runtime/library_calls.h"
#include "kernels/runtime/mkl_library.h"
#include "kernels/runtime/process_state.h"
#include "runtime/device_profile.h"
#include "runtime/runtime.h"

namespace openneuron::bridge {

// Defined in profiler_activity.cpp: what the last profiling session recorded.
void register_profiler_bindings(pybind11::module& module);

namespace {

namespace py = pybind11;
using runtime::Runtime;

py::dict stat_dict(const c10::CachingAllocator::StatArray& stats, const std::string& name) {
  static const char* kPools[] = {"all", "small_pool", "large_pool"};
  static const char* kFields[] = {"current", "peak", "allocated", "freed"};
  py::dict result;
  for (size_t pool = 0; pool < 3; ++pool) {
    const auto& stat = stats[pool];
    const int64_t values[] = {stat.current, stat.peak, stat.allocated, stat.freed};
    for (size_t field = 0; field < 4; ++field) {
      result[py::str(name + "." + kPools[pool] + "." + kFields[field])] = values[field];
    }
  }
  return result;
}

// The same keys as torch.cuda.memory_stats().
py::dict memory_stats(int device) {
  const auto stats = device_stats(static_cast<c10::DeviceIndex>(device));
  py::dict result;
  auto merge = [&](const py::dict& part) {
    for (auto item : part) result[item.first] = item.second;
  };
  merge(stat_dict(stats.allocation, "allocation"));
  merge(stat_dict(stats.segment, "segment"));
  merge(stat_dict(stats.active, "active"));
  merge(stat_dict(stats.inactive_split, "inactive_split"));
  merge(stat_dict(stats.allocated_bytes, "allocated_bytes"));
  merge(stat_dict(stats.reserved_bytes, "reserved_bytes"));
  merge(stat_dict(stats.active_bytes, "active_bytes"));
  merge(stat_dict(stats.inactive_split_bytes, "inactive_split_bytes"));
  merge(stat_dict(stats.requested_bytes, "requested_bytes"));
  result["num_alloc_retries"] = stats.num_alloc_retries;
  result["num_ooms"] = stats.num_ooms;
  result["num_sync_all_streams"] = stats.num_sync_all_streams;
  result["num_device_alloc"] = stats.num_device_alloc;
  result["num_device_free"] = stats.num_device_free;
  return result;
}

py::dict counts_to_dict(const std::map<std::string, int64_t>& counts) {
  py::dict result;
  for (const auto& [name, count] : counts) result[py::str(name)] = count;
  return result;
}

}  // namespace

void register_compiler_bindings(pybind11::module& m);
void register_adaptive_bindings(pybind11::module& m);

PYBIND11_MODULE(_C, m) {
  // Before the runtime's first use registers its exit handler (see the function's contract).
  kernels::initialize_dnnl_process_state();
  register_sparse_host_kernels();
  register_compiler_bindings(m);
  register_adaptive_bindings(m);
  m.doc() = "OpenNeuron native extension: the neuron runtime as the Python device module sees it";

  m.def(
      "_init", [] { Runtime::get(); },
      "Initialises the runtime; raises on an invalid configuration.");
  m.def("_is_initialized", &Runtime::is_initialized);
  m.def("_in_bad_fork", &Runtime::in_bad_fork);
  m.def("_configured_device_count", &Runtime::device_count_or_zero);
  m.def("_device_count", [] { return Runtime::get().device_count(); });
  m.def("_current_device", [] { return runtime::current_device(); });
  m.def("_set_device", [](int index) { runtime::set_current_device(index); });
  m.def("_check_device", [](int index) { runtime::check_device_index(index); });
  m.def("_synchronize", [](int device) {
    py::gil_scoped_release no_gil;
    OPENNEURON_RUNTIME_CALL(Runtime::get().device(device).synchronize());
  });
  m.def(
      "_sleep",
      [](int device, int64_t cycles) {
        // Spins on the device's current stream, keeping it busy, as torch.cuda._sleep does.
        const auto spin = [cycles] {
          const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(cycles);
          while (std::chrono::steady_clock::now() < until) {
          }
        };
        OPENNEURON_RUNTIME_CALL(runtime::current_stream(device).enqueue("neuron::_sleep", spin));
      },
      "Queues work that spins for `cycles` cycles of a 1 GHz clock on the current stream.");
  m.def(
      "_stream_submissions",
      [](int device) { return runtime::current_stream(device).submissions(); },
      "Tasks handed to the device's current stream so far (a gathered batch counts once).");
  m.def("_config", [] {
    const auto& config = Runtime::get().config();
    py::dict result;
    result["device_count"] = config.device_count;
    result["profile"] = config.profile.name;
    result["core_version"] = config.profile.core_version;
    result["device_memory_bytes"] = config.device_memory_bytes;
    result["profile_hbm_bytes"] = config.profile.hbm_bytes;
    result["launch_blocking"] = config.launch_blocking;
    return result;
  });

  m.def("_device_profiles", [] {  // the published constants the projections use
    py::list result;
    for (const auto& profile : runtime::known_profiles()) {
      py::dict entry;
      entry["name"] = profile.name;
      entry["core_version"] = profile.core_version;
      entry["hbm_bytes"] = profile.hbm_bytes;
      entry["peak_bf16_tflops"] = profile.peak_bf16_tflops;
      entry["peak_fp32_tflops"] = profile.peak_fp32_tflops;
      entry["hbm_gb_per_s"] = profile.hbm_gb_per_s;
      result.append(entry);
    }
    return result;
  });
  m.def("_cpu_capability", [] {
    namespace kernels = openneuron::kernels;
    py::dict result;
    result["capability"] = kernels::cpu_isa_name(kernels::cpu_isa());
    result["detected"] = kernels::cpu_isa_name(kernels::detected_cpu_isa());
    result["kernels"] = kernels::use_avx512_kernels() ? "avx512" : "avx2";
    result["onednn"] = kernels::dnnl_effective_isa_name();
    result["gemm_library"] = kernels::gemm_library_name(kernels::requested_gemm_library());
    return result;
  });
  // Before the first product: where the `mkl` package put libmkl_rt (empty: not installed).
  m.def("_set_mkl_library_path", &openneuron::kernels::set_mkl_library_path);
  // Loads oneMKL if not yet loaded; its version and path, or why it is not loaded.
  m.def("_mkl_status", [] { return openneuron::kernels::mkl_status(); });
  // Whether OPENNEURON_GEMM_LIBRARY=auto gives fp32/fp64 products to oneMKL (loads it on Intel).
  m.def("_auto_prefers_mkl", [] { return openneuron::kernels::auto_prefers_mkl(); });
  // Switches the library choice between calls (tests and bench/gemm_libraries.py); the
  // caller synchronises first. An empty name returns to OPENNEURON_GEMM_LIBRARY.
  m.def("_set_gemm_library_for_testing", [](const std::string& name) {
    namespace kernels = openneuron::kernels;
    if (name.empty()) {
      kernels::reset_gemm_library_for_testing();
    } else {
      kernels::set_gemm_library_for_testing(kernels::parse_gemm_library(name.c_str()));
    }
  });
  m.def("_library_call_counts", [] {
    namespace kernels = openneuron::kernels;
    const auto counts = kernels::library_call_counts();
    py::dict result;
    for (size_t i = 0; i < counts.size(); ++i) {
      result[py::str(kernels::library_call_name(static_cast<kernels::LibraryCall>(i)))] = counts[i];
    }
    return result;
  });

  m.def("_memory_stats", &memory_stats);
  register_memory_history(m);
  register_profiler_bindings(m);
  m.def("_reset_peak_memory_stats",
        [](int device) { Runtime::get().device(device).allocator().reset_peak_stats(); });
  m.def("_reset_accumulated_memory_stats",
        [](int device) { Runtime::get().device(device).allocator().reset_accumulated_stats(); });
  m.def("_empty_cache", [] {
    py::gil_scoped_release no_gil;
    device_allocator()->emptyCache({0, 0});
  });
  m.def("_mem_get_info", [](int device) {
    auto& allocator = Runtime::get().device(device).allocator();
    return std::make_pair(allocator.free_bytes(), allocator.capacity());
  });

  m.def("_default_generator", [](int device) {
    return py::reinterpret_steal<py::object>(THPGenerator_initDefaultGenerator(
        default_generator(static_cast<c10::DeviceIndex>(device))));
  });

  m.def("_get_fallback_ops", [] { return counts_to_dict(fallback_ops()); });
  m.def("_get_executed_ops", [] { return counts_to_dict(executed_ops()); });
  m.def("_get_widened_fallbacks", [] { return widened_fallbacks(); });
  m.def("_clear_op_tracking", &clear_op_tracking);
  m.def("_set_fallback_widening", &set_fallback_widening);
  m.def("_is_fallback_widening", &fallback_widening);
  m.def("_set_strict", &set_strict_mode);
  m.def("_is_strict", &strict_mode);
  m.def("_set_deferred_index_checks", &set_deferred_index_checks);
  register_sim_bindings(m);

  // Called by openneuron.distributed once torch.distributed has registered the c10d types.
  m.def(
      "_init_distributed",
      [m]() mutable {
        if (!py::hasattr(m, "NeuronBackend")) register_distributed_bindings(m);
      },
      "Adds NeuronBackend, the c10d backend for neuron tensors, to this module.");
}

}  // namespace openneuron::bridge
