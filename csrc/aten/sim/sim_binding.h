// Registers the simulator's functions on the `openneuron._C` module.
#pragma once

#include <pybind11/pybind11.h>

namespace openneuron::bridge {

void register_sim_bindings(pybind11::module_& m);

}  // namespace openneuron::bridge
