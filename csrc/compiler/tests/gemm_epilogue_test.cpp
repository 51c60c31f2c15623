// GEMM, bmm and convolution epilogues against the reference interpreter, bit for bit: bias
// broadcast, a product read through a reshape, a residual add, a scale and mask, a cast, bf16,
// the product held by an output or a buffer, and a body large enough to be tiled across threads;
// and widened bf16 epilogues (not bitwise mode), which round once and are closer to float64.
#include "compiler/gemm_epilogue.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>

#include "compiler/epilogue_faults.h"
#include "compiler/passes/passes.h"
#include "compiler/pipeline.h"
#include "compiler/reference_interpreter.h"
#include "compiler/tests/random_tensor.h"
#include "compiler/text.h"
#include "kernels/pointwise/cast.h"

namespace openneuron::compiler {
namespace {

using kernels::TensorView;

// Normal(0, 1.0) draws, as every test in this file takes them.
HostTensor random_tensor(DType dtype, std::vector<int64_t> shape, std::mt19937& rng) {
  return testing::random_tensor(dtype, std::move(shape), rng, 1.0f);
}

// Runs the compiled graph's single gemm_epilogue node through run_gemm_epilogue (mm, addmm,
// bmm) or run_conv_epilogue.
std::vector<HostTensor> run_epilogue(const Graph& graph, const std::vector<HostTensor>& inputs) {
  EXPECT_EQ(graph.nodes.size(), 1u) << print_graph(graph);
  const Node& node = graph.nodes.at(0);
  EXPECT_EQ(node.op, "gemm_epilogue");
  std::vector<HostTensor> env(graph.values.size());
  for (size_t k = 0; k < inputs.size(); ++k) env[graph.inputs[k]] = inputs[k];
  const FusedKernel kernel = build_fused_kernel(*node.body);
  const std::string gemm = node.string_attr("gemm");
  const size_t operands = epilogue_operands(node);
  HostTensor& a = env[node.inputs[0]];
  HostTensor& b = env[node.inputs[1]];
  std::vector<int64_t> shape;
  for (const Dim& d : graph.values[node.outputs[0]].shape) shape.push_back(d.size);
  std::vector<int64_t> product_shape = shape;  // a convolution's product is read directly
  if (gemm == "bmm") product_shape = {a.shape[0], a.shape[1], b.shape[2]};
  if (gemm == "mm" || gemm == "addmm") product_shape = {a.shape[0], b.shape[1]};
  std::vector<TensorView> outs, ins;
  for (int output : node.outputs) {
    env[output] = HostTensor(graph.values[output].dtype, shape);
    outs.push_back(env[output].view());
  }
  for (size_t k = operands; k < node.inputs.size(); ++k) {
    ins.push_back(env[node.inputs[k]].broadcast_to(shape));
  }
  const int into = static_cast<int>(node.int_attr("product_into", -1));
  HostTensor buffer(node.body->values[node.body->inputs[0]].dtype, product_shape);  // widened?
  TensorView product = buffer.view();
  if (into >= 0) product.data = env[node.outputs[into]].view().data;
  if (gemm == "conv") {
    const TensorView bias = operands == 3 ? env[node.inputs[2]].view() : TensorView{};
    run_conv_epilogue(kernel, a.view(), b.view(), operands == 3 ? &bias : nullptr,
                      conv_params_of(node), product, outs.data(), ins.data());
  } else {
    const Attr* beta = node.attr("beta");
    const bool has_bias = operands == 3 && beta && beta->f != 0.0;
    const TensorView bias =
        has_bias ? env[node.inputs[2]].broadcast_to(product_shape) : TensorView{};
    run_gemm_epilogue(kernel, a.view(), b.view(), has_bias ? &bias : nullptr, node.attr("alpha")->f,
                      has_bias ? beta->f : 0.0, product, outs.data(), ins.data());
  }
  std::vector<HostTensor> results;
  for (int output : graph.outputs) results.push_back(env[output]);
  return results;
}

void expect_bitwise_equal(const std::vector<HostTensor>& a, const std::vector<HostTensor>& b,
                          const std::string& context) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].shape, b[k].shape) << context;
    EXPECT_TRUE(a[k].bytes == b[k].bytes) << "output " << k << " differs\n" << context;
  }
}

struct Case {
  const char* text;
  std::vector<std::pair<DType, std::vector<int64_t>>> inputs;
  bool product_into;  // whether the plan puts the product into an output
};

TEST(GemmEpilogueKernel, MatchesTheInterpreterBitwise) {
  const Case cases[] = {
      // A linear layer with gelu and a residual add, read through a reshape; tiled body.
      {R"(graph(%0: f32[96, 64], %1: f32[64, 384], %2: f32[384], %3: f32[4, 24, 384]) {
  %4: f32[96, 384] = extern[args=[%2, %0, %1, 1, 1], overload="default", target="aten::addmm"](%2, %0, %1)
  %5: f32[4, 24, 384] = extern[args=[%4, [4, 24, 384]], overload="default", target="aten::view"](%4)
  %6: f32[4, 24, 384] = pointwise[compute="f32", fn="Gelu", p0=0](%5)
  %7: f32[4, 24, 384] = pointwise[compute="f32", fn="AddAlpha", p0=1](%6, %3)
  return (%7)
}
)",
       {{DType::Float32, {96, 64}},
        {DType::Float32, {64, 384}},
        {DType::Float32, {384}},
        {DType::Float32, {4, 24, 384}}},
       true},
      // bf16 mm with a SiLU and a cast to fp32 (the product lives in a buffer), alpha != 1.
      {R"(graph(%0: bf16[50, 40], %1: bf16[40, 70]) {
  %2: bf16[50, 70] = extern[args=[%0, %1], overload="default", target="aten::mm"](%0, %1)
  %3: bf16[50, 70] = pointwise[compute="bf16", fn="Silu"](%2)
  %4: f32[50, 70] = cast(%3)
  return (%4)
}
)",
       {{DType::BFloat16, {50, 40}}, {DType::BFloat16, {40, 70}}},
       false},
      // addmm with a full bias, beta and alpha not 1, and two outputs.
      {R"(graph(%0: f32[33, 17], %1: f32[17, 29], %2: f32[33, 29]) {
  %3: f32[33, 29] = extern[args=[%2, %0, %1, 0.5, 2.0], overload="default", target="aten::addmm"](%2, %0, %1)
  %4: f32[33, 29] = pointwise[compute="f32", fn="Relu"](%3)
  %5: f32[33, 29] = pointwise[compute="f32", fn="Exp"](%4)
  return (%4, %5)
}
)",
       {{DType::Float32, {33, 17}}, {DType::Float32, {17, 29}}, {DType::Float32, {33, 29}}},
       true},
      // Attention scores: bmm read through a view, a scale and a broadcast mask add.
      {R"(graph(%0: f32[12, 40, 16], %1: f32[12, 16, 40], %2: f32[3, 1, 40, 40]) {
  %3: f32[12, 40, 40] = extern[args=[%0, %1], overload="default", target="aten::bmm"](%0, %1)
  %4: f32[3, 4, 40, 40] = extern[args=[%3, [3, 4, 40, 40]], overload="default", target="aten::_unsafe_view"](%3)
  %5: f32[] = scalar[value=0.25]()
  %6: f32[3, 4, 40, 40] = pointwise[compute="f32", fn="Mul"](%4, %5)
  %7: f32[3, 4, 40, 40] = pointwise[compute="f32", fn="AddAlpha", p0=1](%6, %2)
  return (%7)
}
)",
       {{DType::Float32, {12, 40, 16}},
        {DType::Float32, {12, 16, 40}},
        {DType::Float32, {3, 1, 40, 40}}},
       true},
      // bf16 bmm cast to fp32 (the product lives in a buffer).
      {R"(graph(%0: bf16[5, 9, 24], %1: bf16[5, 24, 11]) {
  %2: bf16[5, 9, 11] = extern[args=[%0, %1], overload="default", target="aten::bmm"](%0, %1)
  %3: bf16[5, 9, 11] = pointwise[compute="bf16", fn="Gelu", p0=0](%2)
  %4: f32[5, 9, 11] = cast(%3)
  return (%4)
}
)",
       {{DType::BFloat16, {5, 9, 24}}, {DType::BFloat16, {5, 24, 11}}},
       false},
      // A convolution with its bias, batch norm's scale and shift as elementwise ops, relu and a
      // residual add; 4 x 16 x 32 x 32 outputs, so the body is tiled across threads.
      {R"(graph(%0: f32[4, 8, 32, 32], %1: f32[16, 8, 3, 3], %2: f32[16], %3: f32[16, 1, 1], %4: f32[16, 1, 1], %5: f32[4, 16, 32, 32]) {
  %6: f32[4, 16, 32, 32] = extern[args=[%0, %1, %2, [1, 1], [1, 1], [1, 1], false, [0, 0], 1], overload="default", target="aten::convolution"](%0, %1, %2)
  %7: f32[4, 16, 32, 32] = pointwise[compute="f32", fn="Mul"](%6, %3)
  %8: f32[4, 16, 32, 32] = pointwise[compute="f32", fn="AddAlpha", p0=1](%7, %4)
  %9: f32[4, 16, 32, 32] = pointwise[compute="f32", fn="Relu"](%8)
  %10: f32[4, 16, 32, 32] = pointwise[compute="f32", fn="AddAlpha", p0=1](%9, %5)
  return (%10)
}
)",
       {{DType::Float32, {4, 8, 32, 32}},
        {DType::Float32, {16, 8, 3, 3}},
        {DType::Float32, {16}},
        {DType::Float32, {16, 1, 1}},
        {DType::Float32, {16, 1, 1}},
        {DType::Float32, {4, 16, 32, 32}}},
       true},
      // bf16, no bias, stride 2, dilation 2, two groups, SiLU and a cast (a buffer).
      {R"(graph(%0: bf16[2, 6, 17, 15], %1: bf16[4, 3, 3, 3]) {
  %2: bf16[2, 4, 8, 6] = extern[args=[%0, %1, none, [2, 2], [1, 0], [2, 2], false, [0, 0], 2], overload="default", target="aten::convolution"](%0, %1)
  %3: bf16[2, 4, 8, 6] = pointwise[compute="bf16", fn="Silu"](%2)
  %4: f32[2, 4, 8, 6] = cast(%3)
  return (%4)
}
)",
       {{DType::BFloat16, {2, 6, 17, 15}}, {DType::BFloat16, {4, 3, 3, 3}}},
       false},
  };
  std::mt19937 rng(7);
  for (const Case& c : cases) {
    const Graph reference = parse_graph(c.text);
    Graph compiled = parse_graph(c.text);
    run_pipeline(compiled);
    ASSERT_EQ(compiled.nodes.size(), 1u) << print_graph(compiled);
    EXPECT_EQ(compiled.nodes[0].attr("product_into") != nullptr, c.product_into)
        << print_graph(compiled);
    std::vector<HostTensor> inputs;
    for (const auto& [dtype, shape] : c.inputs) inputs.push_back(random_tensor(dtype, shape, rng));
    // The reference: the interpreter on the compiled graph (the whole product through
    // kernels::gemm, then the body op by op over whole tensors).
    expect_bitwise_equal(run_epilogue(compiled, inputs), interpret(compiled, inputs), c.text);
  }
}

TEST(GemmEpilogueKernel, RejectsShapesThatDoNotFit) {
  Graph g = parse_graph(R"(graph(%0: f32[6, 4], %1: f32[4, 8]) {
  %2: f32[6, 8] = extern[args=[%0, %1], overload="default", target="aten::mm"](%0, %1)
  %3: f32[6, 8] = pointwise[compute="f32", fn="Neg"](%2)
  return (%3)
}
)");
  run_pipeline(g);
  const FusedKernel kernel = build_fused_kernel(*g.nodes.at(0).body);
  HostTensor a(DType::Float32, {6, 4}), b(DType::Float32, {4, 8}), out(DType::Float32, {6, 9});
  HostTensor product(DType::Float32, {6, 8});
  const TensorView out_view = out.view();
  EXPECT_THROW(run_gemm_epilogue(kernel, a.view(), b.view(), nullptr, 1.0, 0.0, product.view(),
                                 &out_view, nullptr),
               std::invalid_argument);
  // A convolution's iteration shape must be its product's shape.
  HostTensor input(DType::Float32, {1, 2, 5, 5}), weight(DType::Float32, {3, 2, 3, 3});
  HostTensor conv_product(DType::Float32, {1, 3, 3, 3}), conv_out(DType::Float32, {1, 3, 3, 4});
  const TensorView conv_out_view = conv_out.view();
  EXPECT_THROW(run_conv_epilogue(kernel, input.view(), weight.view(), nullptr, {},
                                 conv_product.view(), &conv_out_view, nullptr),
               std::invalid_argument);
}

// ---- widened epilogues (not bitwise mode) ----

// A bf16 linear layer with GELU and a residual add, read through a reshape.
constexpr const char* kBf16LinearGeluResidual =
    R"(graph(%0: bf16[96, 64], %1: bf16[64, 200], %2: bf16[200], %3: bf16[4, 24, 200]) {
  %4: bf16[96, 200] = extern[args=[%2, %0, %1, 1, 1], overload="default", target="aten::addmm"](%2, %0, %1)
  %5: bf16[4, 24, 200] = extern[args=[%4, [4, 24, 200]], overload="default", target="aten::view"](%4)
  %6: bf16[4, 24, 200] = pointwise[compute="bf16", fn="Gelu", p0=0](%5)
  %7: bf16[4, 24, 200] = pointwise[compute="bf16", fn="AddAlpha", p0=1](%6, %3)
  return (%7)
}
)";

Graph compiled(const char* text, bool bitwise) {
  Graph graph = parse_graph(text);
  PipelineOptions options;
  options.bitwise = bitwise;
  run_pipeline(graph, {}, options);
  return graph;
}

HostTensor as_float64(HostTensor t) {  // by value: view() is not const
  HostTensor wide(DType::Float64, t.shape);
  kernels::copy(wide.view(), t.view());
  return wide;
}

// Mean absolute difference of two tensors of one shape.
double mean_error(const HostTensor& a, const HostTensor& b) {
  const HostTensor x = as_float64(a), y = as_float64(b);
  const auto* p = reinterpret_cast<const double*>(x.bytes.data());
  const auto* q = reinterpret_cast<const double*>(y.bytes.data());
  double total = 0.0;
  for (int64_t i = 0; i < x.numel(); ++i) total += std::abs(p[i] - q[i]);
  return total / static_cast<double>(x.numel());
}

TEST(WidenedEpilogue, BitwiseModeKeepsTheRoundedProduct) {
  const Graph graph = compiled(kBf16LinearGeluResidual, /*bitwise=*/true);
  ASSERT_EQ(graph.nodes.size(), 1u);
  const Graph& body = *graph.nodes[0].body;
  EXPECT_EQ(body.values[body.inputs[0]].dtype, DType::BFloat16) << print_graph(graph);
}

TEST(WidenedEpilogue, KeepsTheFp32ProductAndRoundsOnce) {
  const Graph graph = compiled(kBf16LinearGeluResidual, /*bitwise=*/false);
  ASSERT_EQ(graph.nodes.size(), 1u) << print_graph(graph);
  const Graph& body = *graph.nodes[0].body;
  EXPECT_EQ(body.values[body.inputs[0]].dtype, DType::Float32) << print_graph(graph);
  int casts = 0, bf16_results = 0;
  for (const Node& node : body.nodes) {
    casts += node.op == "cast";
    bf16_results += body.values[node.outputs[0]].dtype == DType::BFloat16;
  }
  EXPECT_EQ(casts, 1) << print_graph(graph);  // the single rounding, at the output
  EXPECT_EQ(bf16_results, 1) << print_graph(graph);
  EXPECT_EQ(graph.nodes[0].attr("product_into"), nullptr);  // an fp32 buffer, not the output

  std::mt19937 rng(11);
  const std::vector<HostTensor> inputs = {random_tensor(DType::BFloat16, {96, 64}, rng),
                                          random_tensor(DType::BFloat16, {64, 200}, rng),
                                          random_tensor(DType::BFloat16, {200}, rng),
                                          random_tensor(DType::BFloat16, {4, 24, 200}, rng)};
  // The executor computes what the widened IR means.
  const std::vector<HostTensor> widened = run_epilogue(graph, inputs);
  expect_bitwise_equal(widened, interpret(graph, inputs), print_graph(graph));
  // Closer to an fp32 run of the same graph (bf16's rounding errors dwarf fp32's) than eager's
  // rounding after every op, by a clear margin.
  Graph fp32_graph = parse_graph(kBf16LinearGeluResidual);
  for (Value& v : fp32_graph.values) v.dtype = DType::Float32;
  for (Node& node : fp32_graph.nodes) {
    if (node.op == "pointwise") node.attrs["compute"] = Attr::string("f32");
  }
  run_pipeline(fp32_graph);
  std::vector<HostTensor> fp32_inputs;
  for (const HostTensor& t : inputs) {
    fp32_inputs.emplace_back(DType::Float32, t.shape);
    kernels::copy(fp32_inputs.back().view(), const_cast<HostTensor&>(t).view());
  }
  const HostTensor exact = interpret(fp32_graph, fp32_inputs)[0];
  const HostTensor eager = interpret(compiled(kBf16LinearGeluResidual, true), inputs)[0];
  const double widened_error = mean_error(widened[0], exact);
  const double eager_error = mean_error(eager, exact);
  EXPECT_LT(widened_error, 0.8 * eager_error) << widened_error << " against " << eager_error;
}

TEST(WidenedEpilogue, AnExplicitCastStillRounds) {
  // relu(x @ w) in bf16, then upcast: the bf16 value the model asked for is kept.
  constexpr const char* text = R"(graph(%0: bf16[40, 24], %1: bf16[24, 56]) {
  %2: bf16[40, 56] = extern[args=[%0, %1], overload="default", target="aten::mm"](%0, %1)
  %3: bf16[40, 56] = pointwise[compute="bf16", fn="Relu"](%2)
  %4: f32[40, 56] = cast(%3)
  return (%4)
}
)";
  const Graph graph = compiled(text, /*bitwise=*/false);
  ASSERT_EQ(graph.nodes.size(), 1u);
  std::mt19937 rng(5);
  const std::vector<HostTensor> inputs = {random_tensor(DType::BFloat16, {40, 24}, rng),
                                          random_tensor(DType::BFloat16, {24, 56}, rng)};
  std::vector<HostTensor> widened = run_epilogue(graph, inputs);
  // Every result is a bf16 value (relu commutes with rounding, so eager's bits come out).
  HostTensor rounded(DType::BFloat16, widened[0].shape);
  kernels::copy(rounded.view(), widened[0].view());
  HostTensor back(DType::Float32, widened[0].shape);
  kernels::copy(back.view(), rounded.view());
  EXPECT_TRUE(back.bytes == widened[0].bytes) << print_graph(graph);
}

TEST(EpilogueFault, IsSetWithoutTheEnvironmentAndChangesTheResult) {
  EXPECT_EQ(parse_epilogue_fault(""), EpilogueFault::kNone);
  EXPECT_EQ(parse_epilogue_fault("none"), EpilogueFault::kNone);
  EXPECT_THROW(parse_epilogue_fault("wrong"), std::invalid_argument);
  for (const char* name : {"drop_bias", "wrong_scale", "skip_body", "none"}) {
    EXPECT_STREQ(epilogue_fault_name(parse_epilogue_fault(name)), name);
  }
  const Graph graph = compiled(kBf16LinearGeluResidual, /*bitwise=*/true);
  std::mt19937 rng(3);
  const std::vector<HostTensor> inputs = {random_tensor(DType::BFloat16, {96, 64}, rng),
                                          random_tensor(DType::BFloat16, {64, 200}, rng),
                                          random_tensor(DType::BFloat16, {200}, rng),
                                          random_tensor(DType::BFloat16, {4, 24, 200}, rng)};
  const std::vector<HostTensor> expected = interpret(graph, inputs);
  for (EpilogueFault fault :
       {EpilogueFault::kDropBias, EpilogueFault::kWrongScale, EpilogueFault::kSkipBody}) {
    set_epilogue_fault(fault);
    const std::vector<HostTensor> wrong = run_epilogue(graph, inputs);
    set_epilogue_fault(EpilogueFault::kNone);
    EXPECT_FALSE(wrong[0].bytes == expected[0].bytes) << epilogue_fault_name(fault);
  }
  expect_bitwise_equal(run_epilogue(graph, inputs), expected, "no fault");
}

}  // namespace
}  // namespace openneuron::compiler
