// Python bindings of adaptive eager: the switch, a flush, the counters and the test hook.
#include <pybind11/pybind11.h>

#include "adaptive/adaptive_eager.h"

namespace py = pybind11;

namespace openneuron::bridge {

void register_adaptive_bindings(py::module& m) {
  m.def("_adaptive_eager_enabled", &adaptive::enabled);
  m.def("_adaptive_eager_set_enabled", &adaptive::set_enabled);
  m.def("_adaptive_eager_flush", &adaptive::flush_all);
  m.def("_adaptive_eager_reset_metrics", &adaptive::reset_metrics);
  m.def("_adaptive_eager_last_fallback", &adaptive::last_fallback_reason);
  m.def("_adaptive_eager_perturb_fused_results", &adaptive::set_perturb_fused_results);
  m.def("_adaptive_eager_metrics", [] {
    const adaptive::Metrics m = adaptive::metrics();
    py::dict d;
    d["ops_recorded"] = m.ops_recorded;
    d["segments"] = m.segments;
    d["fused_segments"] = m.fused_segments;
    d["fused_ops"] = m.fused_ops;
    d["single_op_segments"] = m.single_ops;
    d["cache_hits"] = m.cache_hits;
    d["compiles"] = m.compiles;
    d["fallbacks"] = m.fallbacks;
    d["stores_skipped"] = m.stores_skipped;
    d["ran_at_once"] = m.ran_at_once;
    py::dict ended;
    ended["shape"] = m.ended_by_shape;
    ended["alias"] = m.ended_by_alias;
    ended["limit"] = m.ended_by_limit;
    ended["stream"] = m.ended_by_stream;
    d["segment_ends"] = ended;
    return d;
  });
}

}  // namespace openneuron::bridge
