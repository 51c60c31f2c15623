// A compiled graph as the runtime runs it: the optimised IR turned into a flat list of steps
// over value slots — fused kernels queued on the current stream, ATen calls through the
// dispatcher (native kernels, or the counted host fallback), size arithmetic on the host.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>

#include <memory>
#include <string>
#include <vector>

#include "compiler/ir.h"

namespace openneuron::bridge {

struct ProgramStep;

class CompiledProgram {
 public:
  // Builds the steps of a graph that has been through compiler::run_pipeline. Throws
  // c10::Error naming the node when an extern target has no ATen schema or its arguments do not
  // fit the schema.
  explicit CompiledProgram(const compiler::Graph& graph);
  ~CompiledProgram();

  // Runs the program on `inputs` (one per graph input: tensors, ints, floats or None) and returns
  // one value per graph output. Errors raised by a step name the graph node and, when the IR
  // records it, the user's source line; queued kernel errors surface at the next synchronize.
  // The kernels it queues on the first neuron input's current stream reach that stream as one
  // submission while the stream is busy (runtime::Stream gathering): handed over early only
  // where the program reads on the host or the stream would otherwise sit idle.
  std::vector<c10::IValue> run(std::vector<c10::IValue> inputs) const;

  // The step that raised the last error from run() (empty if none did).
  const std::string& last_failure() const { return last_failure_; }

  // Results of ATen calls copied into the layout the graph's meta kernels promised, so far in
  // this process (an eager kernel whose output strides differ from its meta kernel's).
  static int64_t layout_repairs();

  int fused_kernels() const { return fused_kernels_; }
  int extern_calls() const { return extern_calls_; }
  int fused_ops() const { return fused_ops_; }
  // GEMMs that run with a fused epilogue (counted among fused_kernels too).
  int gemm_epilogues() const { return gemm_epilogues_; }  // all kinds, bmm and conv among them
  int widened_epilogues() const { return widened_epilogues_; }  // 16-bit products kept in fp32
  int sibling_gemms() const { return sibling_gemms_; }          // GEMMs merged with a sibling
  int bmm_epilogues() const { return bmm_epilogues_; }
  int conv_epilogues() const { return conv_epilogues_; }
  // Fused kernels that end in a reduction (counted among fused_kernels too).
  int fused_reductions() const { return fused_reductions_; }
  // The fused kernels' instruction listings, in program order.
  std::string kernel_listing() const;

 private:
  std::vector<std::unique_ptr<ProgramStep>> steps_;
  std::vector<int> input_slots_;
  std::vector<int> output_slots_;
  size_t num_slots_ = 0;
  // One submission to the stream per run (OPENNEURON_GRAPH_SUBMISSION=per_kernel: one per kernel).
  bool gather_ = true;
  int fused_kernels_ = 0;
  int extern_calls_ = 0;
  int fused_ops_ = 0;
  int gemm_epilogues_ = 0;
  int widened_epilogues_ = 0;
  int sibling_gemms_ = 0;
  int bmm_epilogues_ = 0;
  int conv_epilogues_ = 0;
  int fused_reductions_ = 0;
  mutable std::string last_failure_;
};

}  // namespace openneuron::bridge
