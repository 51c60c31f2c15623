// The text form: printing is canonical and parsing it back gives the same text.
#include "compiler/text.h"

#include <gtest/gtest.h>

#include "compiler/verify.h"

namespace openneuron::compiler {
namespace {

const char* kSample = R"(graph(%0: f32[8, "s0"], %1: bf16[8, 1]{1, 0}, %2: int) {
  %3: f32[8, "s0"] = pointwise[compute="f32", fn="AddAlpha", p0=1](%0, %1)
  %4: f32[] = scalar[value=-0.0]()
  %5: f32[8, "s0"], %6: b8[8, "s0"] = fused(%3, %0) {
    graph(%0: f32[8, "s0"], %1: f32[8, "s0"]) {
      %2: f32[8, "s0"] = pointwise[compute="f32", fn="Exp"](%0)
      %3: b8[8, "s0"] = pointwise[compute="f32", fn="Lt"](%2, %1)
      return (%2, %3)
    }
  }
  %7: int = sym[dim=1, fn="size"](%0)
  %8: f32["s0", 8] = extern[args=[%5, [1, 0], nan, inf, "x\"y", none, true], overload="default", target="aten::permute"](%5)
  return (%8, %7, _)
}
)";

TEST(IrText, RoundTripsExactly) {
  const Graph g = parse_graph(kSample);
  EXPECT_EQ(print_graph(g), kSample);
  EXPECT_NO_THROW(verify(g));
}

TEST(IrText, PrintingRenumbersInDefinitionOrder) {
  Graph g = parse_graph(kSample);
  g.values.insert(g.values.begin(), Value{});  // shift every id by one
  for (int& id : g.inputs) ++id;
  for (int& id : g.outputs) id = id < 0 ? id : id + 1;
  for (Node& node : g.nodes) {
    for (int& id : node.inputs) ++id;
    for (int& id : node.outputs) ++id;
    for (auto& entry : node.attrs) {
      for (Attr& item : entry.second.list) {
        if (item.kind == Attr::Kind::Ref) ++item.i;
      }
    }
  }
  EXPECT_EQ(print_graph(g), kSample);
}

TEST(IrText, FloatsKeepEveryBit) {
  const Graph g = parse_graph(
      "graph() {\n  %0: f64[] = scalar[value=0.10000000000000001]()\n  return (%0)\n}\n");
  EXPECT_EQ(g.nodes[0].attr("value")->f, 0.1);
}

TEST(IrText, ErrorsNameLineAndWhatWasExpected) {
  try {
    parse_graph(
        "graph(%0: f32[2]) {\n  %1: f32[2] = pointwise[fn=\"Exp\"](%7)\n  return (%1)\n}\n");
    FAIL() << "expected a ParseError";
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("%7 is undefined"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_graph("graph(%0: q32[2]) {\n  return (%0)\n}\n"), ParseError);
  EXPECT_THROW(parse_graph("graph() {\n  return (\n"), ParseError);
}

}  // namespace
}  // namespace openneuron::compiler
