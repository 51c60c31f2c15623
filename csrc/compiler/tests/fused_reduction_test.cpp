// Fused reductions against the reference interpreter, bit for bit: last-dim and leading-dim
// reductions, keepdim or not, sum/mean/amax, bf16, a producer read outside, a reduction of a
// graph input alone, tiles spread across threads, and an empty reduction.
#include "compiler/fused_reduction.h"

#include <gtest/gtest.h>

#include <random>

#include "compiler/pipeline.h"
#include "compiler/reference_interpreter.h"
#include "compiler/tests/random_tensor.h"
#include "compiler/text.h"
#include "kernels/pointwise/cast.h"

namespace openneuron::compiler {
namespace {

using kernels::TensorView;

// Normal(0, 3.0) draws, as every test in this file takes them.
HostTensor random_tensor(DType dtype, std::vector<int64_t> shape, std::mt19937& rng) {
  return testing::random_tensor(dtype, std::move(shape), rng, 3.0f);
}

// Runs every fused node (reducing ones through run_fused_reduction) on dense outputs.
std::vector<HostTensor> run_compiled(const Graph& graph, const std::vector<HostTensor>& inputs) {
  std::vector<HostTensor> env(graph.values.size());
  for (size_t k = 0; k < inputs.size(); ++k) env[graph.inputs[k]] = inputs[k];
  for (const Node& node : graph.nodes) {
    EXPECT_EQ(node.op, "fused");
    const Graph& body = *node.body;
    std::vector<int64_t> shape;
    const Value& iteration = ends_in_reduce(body) ? body.values[body.nodes.back().inputs[0]]
                                                  : graph.values[node.outputs[0]];
    for (const Dim& d : iteration.shape) shape.push_back(d.size);
    std::vector<TensorView> outs, ins;
    for (int input : node.inputs) ins.push_back(env[input].broadcast_to(shape));
    if (!ends_in_reduce(body)) {
      for (int output : node.outputs) {
        env[output] = HostTensor(graph.values[output].dtype, shape);
        outs.push_back(env[output].view());
      }
      run_fused_kernel(build_fused_kernel(body), outs.data(), ins.data());
      continue;
    }
    const FusedReduction kernel = build_fused_reduction(body);
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      const int output = node.outputs[k];
      if (static_cast<int>(k) != kernel.result) {
        env[output] = HostTensor(graph.values[output].dtype, shape);
        outs.push_back(env[output].view());
        continue;
      }
      std::vector<int64_t> keepdim = shape, reduced;
      for (size_t d = 0; d < shape.size(); ++d) {
        if ((kernel.mask >> d) & 1u) keepdim[d] = 1;
      }
      for (const Dim& d : graph.values[output].shape) reduced.push_back(d.size);
      env[output] = HostTensor(graph.values[output].dtype, keepdim);
      outs.push_back(env[output].view());
      env[output].shape = reduced;
    }
    run_fused_reduction(kernel, static_cast<int>(shape.size()), shape.data(), outs.data(),
                        ins.data());
  }
  std::vector<HostTensor> results;
  for (int output : graph.outputs) results.push_back(env[output]);
  return results;
}

struct Case {
  const char* text;
  std::vector<std::pair<DType, std::vector<int64_t>>> inputs;
  size_t kernels;  // fused nodes after the pipeline
};

TEST(FusedReductionKernel, MatchesTheInterpreterBitwise) {
  const Case cases[] = {
      // RMS norm: the square joins the mean over the last dim; tiles across threads.
      {R"(graph(%0: bf16[300, 257], %1: f32[257]) {
  %2: f32[300, 257] = cast(%0)
  %3: f32[300, 257] = pointwise[compute="f32", fn="Mul"](%2, %2)
  %4: f32[300, 1] = reduce[dims=[1], fn="mean", keepdim=1](%3)
  %5: f32[] = scalar[value=1e-06]()
  %6: f32[300, 1] = pointwise[compute="f32", fn="AddAlpha", p0=1](%4, %5)
  %7: f32[300, 1] = pointwise[compute="f32", fn="Rsqrt"](%6)
  %8: f32[300, 257] = pointwise[compute="f32", fn="Mul"](%2, %7)
  %9: f32[300, 257] = pointwise[compute="f32", fn="Mul"](%8, %1)
  return (%9)
}
)",
       {{DType::BFloat16, {300, 257}}, {DType::Float32, {257}}},
       3},
      // Softmax: amax, then shifted exp into the sum, the exp read again by the division.
      {R"(graph(%0: f32[6, 40, 129]) {
  %1: f32[6, 40, 1] = reduce[dims=[2], fn="amax", keepdim=1](%0)
  %2: f32[6, 40, 129] = pointwise[compute="f32", fn="SubAlpha", p0=1](%0, %1)
  %3: f32[6, 40, 129] = pointwise[compute="f32", fn="Exp"](%2)
  %4: f32[6, 40, 1] = reduce[dims=[2], fn="sum", keepdim=1](%3)
  %5: f32[6, 40, 129] = pointwise[compute="f32", fn="Div"](%3, %4)
  return (%5)
}
)",
       {{DType::Float32, {6, 40, 129}}},
       3},
      // A bias gradient: a column sum over the leading dims, not kept, of a scaled input.
      {R"(graph(%0: bf16[9, 700, 33]) {
  %1: f32[] = scalar[value=0.5]()
  %2: bf16[9, 700, 33] = pointwise[compute="bf16", fn="Mul"](%0, %1)
  %3: bf16[33] = reduce[dims=[0, 1], fn="sum", keepdim=0](%2)
  return (%3, %2)
}
)",
       {{DType::BFloat16, {9, 700, 33}}},
       1},
      // A graph input reduced alone, over a middle dim.
      {R"(graph(%0: f32[5, 64, 70]) {
  %1: f32[5, 70] = reduce[dims=[1], fn="mean", keepdim=0](%0)
  return (%1)
}
)",
       {{DType::Float32, {5, 64, 70}}},
       1},
      // An empty reduction: sum gives zeros, mean NaN.
      {R"(graph(%0: f32[3, 0]) {
  %1: f32[3, 0] = pointwise[compute="f32", fn="Exp"](%0)
  %2: f32[3] = reduce[dims=[1], fn="sum", keepdim=0](%1)
  %3: f32[3] = reduce[dims=[1], fn="mean", keepdim=0](%0)
  return (%2, %3)
}
)",
       {{DType::Float32, {3, 0}}},
       2},
  };
  std::mt19937 rng(3);
  for (const Case& c : cases) {
    const Graph reference = parse_graph(c.text);
    Graph compiled = parse_graph(c.text);
    run_pipeline(compiled);
    EXPECT_EQ(compiled.nodes.size(), c.kernels) << print_graph(compiled);
    std::vector<HostTensor> inputs;
    for (const auto& [dtype, shape] : c.inputs) inputs.push_back(random_tensor(dtype, shape, rng));
    const std::vector<HostTensor> got = run_compiled(compiled, inputs);
    const std::vector<HostTensor> expected = interpret(reference, inputs);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t k = 0; k < got.size(); ++k) {
      ASSERT_EQ(got[k].shape, expected[k].shape) << c.text;
      EXPECT_TRUE(got[k].bytes == expected[k].bytes) << "output " << k << " differs\n" << c.text;
    }
  }
}

}  // namespace
}  // namespace openneuron::compiler
