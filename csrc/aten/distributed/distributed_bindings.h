// Adds the c10d backend's Python bindings to the `_C` module (kept apart so that only
// the distributed_*.cpp files compile the c10d headers).
#pragma once

#include <pybind11/pybind11.h>

namespace openneuron::bridge {

void register_distributed_bindings(pybind11::module_& module);

}  // namespace openneuron::bridge
