// Golden IR tests: each pass on a small graph, compared with the expected printed graph.
#include "compiler/passes/passes.h"

#include <gtest/gtest.h>

#include <functional>

#include "compiler/pipeline.h"
#include "compiler/text.h"
#include "compiler/verify.h"

namespace openneuron::compiler {
namespace {

// Parses `before`, runs `pass`, verifies, and returns the printed result.
std::string after(const std::function<void(Graph&)>& pass, const std::string& before) {
  Graph g = parse_graph(before);
  verify(g);
  pass(g);
  verify(g, "the pass under test");
  return print_graph(g);
}

TEST(DeadCode, RemovesUnreadNodesButKeepsImpureOnes) {
  EXPECT_EQ(after(eliminate_dead_code, R"(graph(%0: f32[4]) {
  %1: f32[4] = pointwise[compute="f32", fn="Exp"](%0)
  %2: f32[4] = pointwise[compute="f32", fn="Neg"](%1)
  %3: f32[4] = extern[args=[%0], impure=1, target="aten::bernoulli"](%0)
  %4: f32[4] = pointwise[compute="f32", fn="Sin"](%0)
  return (%4)
}
)"),
            R"(graph(%0: f32[4]) {
  %1: f32[4] = extern[args=[%0], impure=1, target="aten::bernoulli"](%0)
  %2: f32[4] = pointwise[compute="f32", fn="Sin"](%0)
  return (%2)
}
)");
}

TEST(CommonSubexpressions, MergesEqualPureNodesOnly) {
  EXPECT_EQ(after(eliminate_common_subexpressions, R"(graph(%0: f32[4]) {
  %1: f32[4] = pointwise[compute="f32", fn="Exp"](%0)
  %2: f32[4] = pointwise[compute="f32", fn="Exp"](%0)
  %3: bf16[4] = cast(%0)
  %4: f16[4] = cast(%0)
  %5: f32[4] = extern[args=[%0], impure=1, target="aten::bernoulli"](%0)
  %6: f32[4] = extern[args=[%0], impure=1, target="aten::bernoulli"](%0)
  %7: f32[4] = pointwise[compute="f32", fn="AddAlpha", p0=1](%1, %2)
  return (%7, %3, %4, %5, %6)
}
)"),
            R"(graph(%0: f32[4]) {
  %1: f32[4] = pointwise[compute="f32", fn="Exp"](%0)
  %2: bf16[4] = cast(%0)
  %3: f16[4] = cast(%0)
  %4: f32[4] = extern[args=[%0], impure=1, target="aten::bernoulli"](%0)
  %5: f32[4] = extern[args=[%0], impure=1, target="aten::bernoulli"](%0)
  %6: f32[4] = pointwise[compute="f32", fn="AddAlpha", p0=1](%1, %1)
  return (%6, %2, %3, %4, %5)
}
)");
}

TEST(CommonSubexpressions, IgnoresTheSourceLine) {
  // Autocast casts one activation once per projection, each cast on its own source line.
  EXPECT_EQ(after(eliminate_common_subexpressions, R"(graph(%0: f32[4]) {
  %1: bf16[4] = cast[src="model.py:10"](%0)
  %2: bf16[4] = cast[src="model.py:11"](%0)
  %3: bf16[4] = pointwise[compute="bf16", fn="AddAlpha", p0=1, src="model.py:12"](%1, %2)
  return (%3)
}
)"),
            R"(graph(%0: f32[4]) {
  %1: bf16[4] = cast[src="model.py:10"](%0)
  %2: bf16[4] = pointwise[compute="bf16", fn="AddAlpha", p0=1, src="model.py:12"](%1, %1)
  return (%2)
}
)");
}

TEST(FoldConstants, EvaluatesSizeArithmeticAndScalarOps) {
  EXPECT_EQ(after(fold_constants, R"(graph(%0: f32[4], %1: int) {
  %2: int = sym[fn="const", value=6]()
  %3: int = sym[fn="const", value=-4]()
  %4: int = sym[fn="floordiv"](%3, %2)
  %5: int = sym[fn="mul"](%4, %1)
  %6: f32[] = scalar[value=2.0]()
  %7: f32[] = pointwise[compute="f32", fn="Exp"](%6)
  %8: f32[4] = pointwise[compute="f32", fn="Mul"](%0, %7)
  return (%8, %4, %5)
}
)"),
            R"(graph(%0: f32[4], %1: int) {
  %2: int = sym[fn="const", value=-1]()
  %3: int = sym[fn="mul"](%2, %1)
  %4: f32[] = scalar[value=7.3890562057495117]()
  %5: f32[4] = pointwise[compute="f32", fn="Mul"](%0, %4)
  return (%5, %2, %3)
}
)");
}

TEST(Views, RemovesIdentityViewsAndCancellingTransposes) {
  EXPECT_EQ(after(eliminate_views, R"(graph(%0: f32[4, 8]) {
  %1: f32[4, 8] = extern[args=[%0, [4, 8]], overload="default", target="aten::view"](%0)
  %2: f32[8, 4]{1, 0} = extern[args=[%1], overload="default", target="aten::t"](%1)
  %3: f32[4, 8] = extern[args=[%2], overload="default", target="aten::t"](%2)
  %4: f32[8, 4]{1, 0} = extern[args=[%3, [1, 0]], overload="default", target="aten::permute"](%3)
  %5: f32[4, 8] = extern[args=[%4, [1, 0]], overload="default", target="aten::permute"](%4)
  %6: f32[4, 8] = pointwise[compute="f32", fn="Exp"](%5)
  %7: f32[4, 8] = extern[args=[%6, [4, 8]], overload="default", target="aten::view"](%6)
  return (%7)
}
)"),
            R"(graph(%0: f32[4, 8]) {
  %1: f32[4, 8] = pointwise[compute="f32", fn="Exp"](%0)
  %2: f32[4, 8] = extern[args=[%1, [4, 8]], overload="default", target="aten::view"](%1)
  return (%2)
}
)");
}

TEST(Layouts, RemovesCopiesOfAllocatedValuesThatChangeNothing) {
  // A same-type cast, a clone that is returned, a contiguous clone of a row-major value and a
  // _to_copy to its own dtype: all four go.
  EXPECT_EQ(after(eliminate_layouts, R"(graph(%0: f32[4, 8]) {
  %1: f32[4, 8] = pointwise[compute="f32", fn="Exp"](%0)
  %2: f32[4, 8] = cast(%1)
  %3: f32[4, 8] = extern[args=[%2, "memory_format:contiguous_format"], overload="default", target="aten::clone"](%2)
  %4: f32[4, 8] = extern[args=[%3, "dtype:Float", none, none, false, false, none], overload="default", target="aten::_to_copy"](%3)
  %5: f32[4, 8] = pointwise[compute="f32", fn="Neg"](%4)
  %6: f32[4, 8] = extern[args=[%5, none], overload="default", target="aten::clone"](%5)
  return (%6)
}
)"),
            R"(graph(%0: f32[4, 8]) {
  %1: f32[4, 8] = pointwise[compute="f32", fn="Exp"](%0)
  %2: f32[4, 8] = pointwise[compute="f32", fn="Neg"](%1)
  return (%2)
}
)");
}

TEST(Layouts, KeepsCopiesThatChangeSomethingOrCopyWhatTheIRCannotSee) {
  // A dtype change, a layout change, a copy to another device, a pinned copy, and copies of a
  // graph input and of an extern's result (whose strides the IR does not fully describe).
  const std::string graph = R"(graph(%0: f32[4, 8], %1: f32[8, 4]) {
  %2: f32[4, 8] = pointwise[compute="f32", fn="Exp"](%0)
  %3: bf16[4, 8] = cast(%2)
  %4: f32[4, 8]{1, 0} = extern[args=[%2, "memory_format:channels_last"], overload="default", target="aten::clone"](%2)
  %5: f32[4, 8] = extern[args=[%2, none, none, "device:cpu", none, false, none], overload="default", target="aten::_to_copy"](%2)
  %6: f32[4, 8] = extern[args=[%2, none, none, none, true, false, none], overload="default", target="aten::_to_copy"](%2)
  %7: f32[4, 8] = cast(%0)
  %8: f32[4, 4] = extern[args=[%2, %1], overload="default", target="aten::mm"](%2, %1)
  %9: f32[4, 4] = cast(%8)
  return (%3, %4, %5, %6, %7, %9)
}
)";
  EXPECT_EQ(after(eliminate_layouts, graph), graph);
}

TEST(Layouts, KeepsCopiesWhoseBufferMustStayDistinct) {
  // %4: its input is returned too; %5: a copy of a graph input that is returned; %7: its input
  // is later written in place through a view; %11: the copy itself is written in place; %14:
  // returned while a view of its input is returned as well.
  const std::string graph = R"(graph(%0: f32[4, 8], %1: f32[4, 8], %2: f32[32]) {
  %3: f32[4, 8] = pointwise[compute="f32", fn="Exp"](%0)
  %4: f32[4, 8] = cast(%3)
  %5: f32[4, 8] = extern[args=[%0, none], overload="default", target="aten::clone"](%0)
  %6: f32[4, 8] = pointwise[compute="f32", fn="Sin"](%0)
  %7: f32[4, 8] = cast(%6)
  %8: f32[32] = extern[args=[%6, [32]], overload="default", target="aten::view", view=1](%6)
  %9: f32[32] = extern[args=[%8, %2], impure=1, overload="default", target="aten::copy_", view=1](%8, %2)
  %10: f32[4, 8] = pointwise[compute="f32", fn="Cos"](%0)
  %11: f32[4, 8] = cast(%10)
  %12: f32[4, 8] = extern[args=[%11, %1], impure=1, overload="default", target="aten::copy_", view=1](%11, %1)
  %13: f32[4, 8] = pointwise[compute="f32", fn="Tanh"](%0)
  %14: f32[4, 8] = cast(%13)
  %15: f32[32] = extern[args=[%13, [32]], overload="default", target="aten::view", view=1](%13)
  %16: f32[4, 8] = pointwise[compute="f32", fn="AddAlpha", p0=1](%7, %12)
  return (%3, %4, %5, %16, %14, %15)
}
)";
  EXPECT_EQ(after(eliminate_layouts, graph), graph);
}

TEST(Layouts, OffInThePipelineKeepsTheCopy) {
  const std::string graph = R"(graph(%0: f32[4]) {
  %1: f32[4] = pointwise[compute="f32", fn="Exp"](%0)
  %2: f32[4] = cast(%1)
  %3: f32[4] = extern[args=[%2], overload="default", target="aten::relu"](%2)
  return (%3)
}
)";
  auto casts = [&](bool on) {
    Graph g = parse_graph(graph);
    PipelineOptions options;
    options.eliminate_layouts = on;
    int count = 0;
    run_pipeline(
        g,
        [&](const std::string& pass, const Graph& after_pass) {
          if (pass != "eliminate_layouts") return;
          for (const Node& node : after_pass.nodes) count += node.op == "cast";
        },
        options);
    return count;
  };
  EXPECT_EQ(casts(true), 0);
  EXPECT_EQ(casts(false), 1);
}

TEST(Fusion, GroupsAChainAndStopsAtAnOutsideReader) {
  EXPECT_EQ(after([](Graph& g) { fuse_elementwise(g); }, R"(graph(%0: f32[4, 8], %1: f32[8]) {
  %2: f32[] = scalar[value=0.5]()
  %3: f32[4, 8] = pointwise[compute="f32", fn="Mul"](%0, %2)
  %4: f32[4, 8] = pointwise[compute="f32", fn="AddAlpha", p0=1](%3, %1)
  %5: bf16[4, 8] = cast(%4)
  %6: f32[4, 8] = extern[args=[%4], overload="default", target="aten::relu"](%4)
  %7: f32[4, 8] = pointwise[compute="f32", fn="Exp"](%4)
  %8: f32[4, 8] = pointwise[compute="f32", fn="Exp"](%6)
  %9: f32[4, 8] = pointwise[compute="f32", fn="Neg"](%8)
  return (%5, %7, %9)
}
)"),
            R"(graph(%0: f32[4, 8], %1: f32[8]) {
  %2: f32[4, 8], %3: bf16[4, 8] = fused(%0, %1) {
    graph(%0: f32[4, 8], %1: f32[8]) {
      %2: f32[] = scalar[value=0.5]()
      %3: f32[4, 8] = pointwise[compute="f32", fn="Mul"](%0, %2)
      %4: f32[4, 8] = pointwise[compute="f32", fn="AddAlpha", p0=1](%3, %1)
      %5: bf16[4, 8] = cast(%4)
      return (%4, %5)
    }
  }
  %4: f32[4, 8] = extern[args=[%2], overload="default", target="aten::relu"](%2)
  %5: f32[4, 8] = fused(%2) {
    graph(%0: f32[4, 8]) {
      %1: f32[4, 8] = pointwise[compute="f32", fn="Exp"](%0)
      return (%1)
    }
  }
  %6: f32[4, 8] = fused(%4) {
    graph(%0: f32[4, 8]) {
      %1: f32[4, 8] = pointwise[compute="f32", fn="Exp"](%0)
      %2: f32[4, 8] = pointwise[compute="f32", fn="Neg"](%1)
      return (%2)
    }
  }
  return (%3, %5, %6)
}
)");
}

TEST(Fusion, OffMakesOneKernelPerOp) {
  const std::string out = after([](Graph& g) { fuse_elementwise(g, /*join=*/false); },
                                R"(graph(%0: f32[4]) {
  %1: f32[4] = pointwise[compute="f32", fn="Exp"](%0)
  %2: f32[4] = pointwise[compute="f32", fn="Neg"](%1)
  return (%2)
}
)");
  EXPECT_EQ(out, R"(graph(%0: f32[4]) {
  %1: f32[4] = fused(%0) {
    graph(%0: f32[4]) {
      %1: f32[4] = pointwise[compute="f32", fn="Exp"](%0)
      return (%1)
    }
  }
  %2: f32[4] = fused(%1) {
    graph(%0: f32[4]) {
      %1: f32[4] = pointwise[compute="f32", fn="Neg"](%0)
      return (%1)
    }
  }
  return (%2)
}
)");
}

TEST(Fusion, NeverJoinsDifferentShapes) {
  const std::string out =
      after([](Graph& g) { fuse_elementwise(g); }, R"(graph(%0: f32[4, 1], %1: f32[4, 8]) {
  %2: f32[4, 1] = pointwise[compute="f32", fn="Exp"](%0)
  %3: f32[4, 8] = pointwise[compute="f32", fn="Mul"](%2, %1)
  return (%3)
}
)");
  EXPECT_EQ(out.find("fused(%0)"), out.find("fused("));  // the exp fused alone, first
  EXPECT_NE(out.find("fused(%2, %1)"), std::string::npos) << out;
}

TEST(MemoryPlan, FreesAtLastUseAndReusesDyingInputs) {
  EXPECT_EQ(after(plan_memory, R"(graph(%0: f32[4]) {
  %1: f32[4] = extern[args=[%0], overload="default", target="aten::relu"](%0)
  %2: f32[4] = fused(%1) {
    graph(%0: f32[4]) {
      %1: f32[4] = pointwise[compute="f32", fn="Exp"](%0)
      return (%1)
    }
  }
  %3: f32[4], %4: f32[4] = extern[args=[%2], overload="default", target="aten::two"](%2)
  return (%3)
}
)"),
            R"(graph(%0: f32[4]) {
  %1: f32[4] = extern[args=[%0], free=[%0], overload="default", target="aten::relu"](%0)
  %2: f32[4] = fused[free=[%1], reuse=[0, 0]](%1) {
    graph(%0: f32[4]) {
      %1: f32[4] = pointwise[compute="f32", fn="Exp"](%0)
      return (%1)
    }
  }
  %3: f32[4], %4: f32[4] = extern[args=[%2], free=[%2, %4], overload="default", target="aten::two"](%2)
  return (%3)
}
)");
}

TEST(MemoryPlan, NoReuseWhenTheInputIsReadAfterTheOutputIsWritten) {
  const std::string out = after(plan_memory, R"(graph(%0: f32[4]) {
  %1: f32[4] = extern[args=[%0], overload="default", target="aten::relu"](%0)
  %2: f32[4], %3: f32[4] = fused(%1) {
    graph(%0: f32[4]) {
      %1: f32[4] = pointwise[compute="f32", fn="Exp"](%0)
      %2: f32[4] = pointwise[compute="f32", fn="AddAlpha", p0=1](%1, %0)
      return (%1, %2)
    }
  }
  return (%2, %3)
}
)");
  EXPECT_NE(out.find("reuse=[1, 0]"), std::string::npos) << out;  // output 1, not output 0
}

TEST(Verifier, NamesTheBrokenRule) {
  auto message = [](const std::string& text) {
    try {
      verify(parse_graph(text));
    } catch (const VerifyError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("graph(%0: f32[4]) {\n  %1: f32[4] = pointwise[compute=\"f32\", "
                    "fn=\"Bogus\"](%0)\n  return (%1)\n}\n")
                .find("known fn"),
            std::string::npos);
  EXPECT_NE(message("graph(%0: f32[4]) {\n  %1: f32[4] = pointwise[compute=\"f32\", "
                    "fn=\"Mul\"](%0)\n  return (%1)\n}\n")
                .find("takes 2 inputs"),
            std::string::npos);
  EXPECT_NE(message("graph(%0: f32[4]) {\n  %1: f32[4] = fused(%0) {\n    graph(%0: f32[4]) {\n"
                    "      %1: f32[4] = extern[target=\"aten::relu\"](%0)\n      return (%1)\n"
                    "    }\n  }\n  return (%1)\n}\n")
                .find("elementwise ops"),
            std::string::npos);
  EXPECT_NE(message("graph(%0: f32[4], %1: int) {\n  %2: f32[4] = cast(%1)\n  return (%2)\n}\n")
                .find("are tensors"),
            std::string::npos);
}

// A linear layer's product, read through a reshape by gelu plus a residual add, and a second
// product that two nodes read (left alone).
constexpr const char* kLinearGelu =
    R"(graph(%0: f32[6, 4], %1: f32[4, 8], %2: f32[8], %3: f32[2, 3, 8]) {
  %4: f32[6, 8] = extern[args=[%2, %0, %1, 1, 1], overload="default", target="aten::addmm"](%2, %0, %1)
  %5: f32[2, 3, 8] = extern[args=[%4, [2, 3, 8]], overload="default", target="aten::view"](%4)
  %6: f32[2, 3, 8] = pointwise[compute="f32", fn="Gelu", p0=0](%5)
  %7: f32[2, 3, 8] = pointwise[compute="f32", fn="AddAlpha", p0=1](%6, %3)
  %8: f32[6, 8] = extern[args=[%0, %1], overload="default", target="aten::mm"](%0, %1)
  %9: f32[6, 8] = pointwise[compute="f32", fn="Neg"](%8)
  %10: f32[6, 8] = pointwise[compute="f32", fn="Exp"](%8)
  return (%7, %9, %10)
}
)";

TEST(GemmEpilogue, FusesTheConsumerOfAnUnsharedProduct) {
  EXPECT_EQ(after(
                [](Graph& g) {
                  fuse_elementwise(g);
                  fuse_gemm_epilogue(g);
                },
                kLinearGelu),
            R"(graph(%0: f32[6, 4], %1: f32[4, 8], %2: f32[8], %3: f32[2, 3, 8]) {
  %4: f32[2, 3, 8] = gemm_epilogue[alpha=1.0, beta=1.0, gemm="addmm"](%0, %1, %2, %3) {
    graph(%0: f32[2, 3, 8], %1: f32[2, 3, 8]) {
      %2: f32[2, 3, 8] = pointwise[compute="f32", fn="Gelu", p0=0](%0)
      %3: f32[2, 3, 8] = pointwise[compute="f32", fn="AddAlpha", p0=1](%2, %1)
      return (%3)
    }
  }
  %5: f32[6, 8] = extern[args=[%0, %1], overload="default", target="aten::mm"](%0, %1)
  %6: f32[6, 8] = fused(%5) {
    graph(%0: f32[6, 8]) {
      %1: f32[6, 8] = pointwise[compute="f32", fn="Neg"](%0)
      return (%1)
    }
  }
  %7: f32[6, 8] = fused(%5) {
    graph(%0: f32[6, 8]) {
      %1: f32[6, 8] = pointwise[compute="f32", fn="Exp"](%0)
      return (%1)
    }
  }
  return (%4, %6, %7)
}
)");
}

TEST(GemmEpilogue, LeavesBroadcastReadsReturnedProductsAndImpureNodesBetween) {
  // The body reads the product broadcast (a [1, 8] product into a [6, 8] add).
  const std::string broadcast = after(
      [](Graph& g) {
        fuse_elementwise(g);
        fuse_gemm_epilogue(g);
      },
      R"(graph(%0: f32[1, 4], %1: f32[4, 8], %2: f32[6, 8]) {
  %3: f32[1, 8] = extern[args=[%0, %1], overload="default", target="aten::mm"](%0, %1)
  %4: f32[6, 8] = pointwise[compute="f32", fn="AddAlpha", p0=1](%3, %2)
  return (%4)
}
)");
  EXPECT_EQ(broadcast.find("gemm_epilogue"), std::string::npos) << broadcast;
  // The product is also returned.
  const std::string returned = after(
      [](Graph& g) {
        fuse_elementwise(g);
        fuse_gemm_epilogue(g);
      },
      R"(graph(%0: f32[6, 4], %1: f32[4, 8]) {
  %2: f32[6, 8] = extern[args=[%0, %1], overload="default", target="aten::mm"](%0, %1)
  %3: f32[6, 8] = pointwise[compute="f32", fn="Neg"](%2)
  return (%3, %2)
}
)");
  EXPECT_EQ(returned.find("gemm_epilogue"), std::string::npos) << returned;
  // An in-place update of an operand lies between the product and its consumer.
  const std::string impure = after(
      [](Graph& g) {
        fuse_elementwise(g);
        fuse_gemm_epilogue(g);
      },
      R"(graph(%0: f32[6, 4], %1: f32[4, 8]) {
  %2: f32[6, 8] = extern[args=[%0, %1], overload="default", target="aten::mm"](%0, %1)
  %3: f32[4, 8] = extern[args=[%1, 1.0], impure=1, overload="Scalar", target="aten::add_"](%1)
  %4: f32[6, 8] = pointwise[compute="f32", fn="Neg"](%2)
  return (%4, %3)
}
)");
  EXPECT_EQ(impure.find("gemm_epilogue"), std::string::npos) << impure;
  // An integer product is not a matmul dtype.
  const std::string integer = after(
      [](Graph& g) {
        fuse_elementwise(g);
        fuse_gemm_epilogue(g);
      },
      R"(graph(%0: i64[6, 4], %1: i64[4, 8]) {
  %2: i64[6, 8] = extern[args=[%0, %1], overload="default", target="aten::mm"](%0, %1)
  %3: i64[6, 8] = pointwise[compute="i64", fn="Neg"](%2)
  return (%3)
}
)");
  EXPECT_EQ(integer.find("gemm_epilogue"), std::string::npos) << integer;
  // The consumer ends in a reduction (an epilogue is elementwise only).
  const std::string reduced = after(
      [](Graph& g) {
        fuse_elementwise(g);
        fuse_gemm_epilogue(g);
      },
      R"(graph(%0: f32[6, 4], %1: f32[4, 8]) {
  %2: f32[6, 8] = extern[args=[%0, %1], overload="default", target="aten::mm"](%0, %1)
  %3: f32[6, 8] = pointwise[compute="f32", fn="Neg"](%2)
  %4: f32[8] = reduce[dims=[0], fn="sum", keepdim=0](%3)
  return (%4)
}
)");
  EXPECT_EQ(reduced.find("gemm_epilogue"), std::string::npos) << reduced;
}

// A convolution with its bias, then a per-channel scale and shift (batch norm in inference, as
// elementwise ops), relu and a residual add; a second convolution that is also returned.
constexpr const char* kConvBlock =
    R"(graph(%0: f32[2, 3, 8, 8], %1: f32[4, 3, 3, 3], %2: f32[4], %3: f32[4, 1, 1], %4: f32[4, 1, 1], %5: f32[2, 4, 8, 8]) {
  %6: f32[2, 4, 8, 8] = extern[args=[%0, %1, %2, [1, 1], [1, 1], [1, 1], false, [0, 0], 1], overload="default", target="aten::convolution"](%0, %1, %2)
  %7: f32[2, 4, 8, 8] = pointwise[compute="f32", fn="Mul"](%6, %3)
  %8: f32[2, 4, 8, 8] = pointwise[compute="f32", fn="AddAlpha", p0=1](%7, %4)
  %9: f32[2, 4, 8, 8] = pointwise[compute="f32", fn="Relu"](%8)
  %10: f32[2, 4, 8, 8] = pointwise[compute="f32", fn="AddAlpha", p0=1](%9, %5)
  %11: f32[2, 4, 4, 4] = extern[args=[%0, %1, none, [2, 2], [1, 1], [1, 1], false, [0, 0], 1], overload="default", target="aten::convolution"](%0, %1)
  %12: f32[2, 4, 4, 4] = pointwise[compute="f32", fn="Silu"](%11)
  return (%10, %12, %11)
}
)";

TEST(GemmEpilogue, FusesAConvolutionsElementwiseConsumer) {
  EXPECT_EQ(
      after(
          [](Graph& g) {
            fuse_elementwise(g);
            fuse_gemm_epilogue(g);
          },
          kConvBlock),
      R"(graph(%0: f32[2, 3, 8, 8], %1: f32[4, 3, 3, 3], %2: f32[4], %3: f32[4, 1, 1], %4: f32[4, 1, 1], %5: f32[2, 4, 8, 8]) {
  %6: f32[2, 4, 8, 8] = gemm_epilogue[bias=1, dilation=[1, 1], gemm="conv", groups=1, padding=[1, 1], stride=[1, 1]](%0, %1, %2, %3, %4, %5) {
    graph(%0: f32[2, 4, 8, 8], %1: f32[4, 1, 1], %2: f32[4, 1, 1], %3: f32[2, 4, 8, 8]) {
      %4: f32[2, 4, 8, 8] = pointwise[compute="f32", fn="Mul"](%0, %1)
      %5: f32[2, 4, 8, 8] = pointwise[compute="f32", fn="AddAlpha", p0=1](%4, %2)
      %6: f32[2, 4, 8, 8] = pointwise[compute="f32", fn="Relu"](%5)
      %7: f32[2, 4, 8, 8] = pointwise[compute="f32", fn="AddAlpha", p0=1](%6, %3)
      return (%7)
    }
  }
  %7: f32[2, 4, 4, 4] = extern[args=[%0, %1, none, [2, 2], [1, 1], [1, 1], false, [0, 0], 1], overload="default", target="aten::convolution"](%0, %1)
  %8: f32[2, 4, 4, 4] = fused(%7) {
    graph(%0: f32[2, 4, 4, 4]) {
      %1: f32[2, 4, 4, 4] = pointwise[compute="f32", fn="Silu"](%0)
      return (%1)
    }
  }
  return (%6, %8, %7)
}
)");
}

// Attention scores written out: matmul lowered to bmm and a view back to [batch, heads, ...],
// then the scale and the mask add (softmax's input); the scores of a bmm read broadcast are not.
constexpr const char* kAttentionScores =
    R"(graph(%0: f32[6, 5, 8], %1: f32[6, 8, 5], %2: f32[2, 1, 5, 5]) {
  %3: f32[6, 5, 5] = extern[args=[%0, %1], overload="default", target="aten::bmm"](%0, %1)
  %4: f32[2, 3, 5, 5] = extern[args=[%3, [2, 3, 5, 5]], overload="default", target="aten::_unsafe_view"](%3)
  %5: f32[] = scalar[value=0.35355339059327373]()
  %6: f32[2, 3, 5, 5] = pointwise[compute="f32", fn="Mul"](%4, %5)
  %7: f32[2, 3, 5, 5] = pointwise[compute="f32", fn="AddAlpha", p0=1](%6, %2)
  return (%7)
}
)";

TEST(GemmEpilogue, FusesABatchedProductsScaleAndMask) {
  const std::string out = after(
      [](Graph& g) {
        fuse_elementwise(g);
        fuse_gemm_epilogue(g);
      },
      kAttentionScores);
  EXPECT_EQ(out, R"(graph(%0: f32[6, 5, 8], %1: f32[6, 8, 5], %2: f32[2, 1, 5, 5]) {
  %3: f32[2, 3, 5, 5] = gemm_epilogue[alpha=1.0, beta=0.0, gemm="bmm"](%0, %1, %2) {
    graph(%0: f32[2, 3, 5, 5], %1: f32[2, 1, 5, 5]) {
      %2: f32[] = scalar[value=0.35355339059327373]()
      %3: f32[2, 3, 5, 5] = pointwise[compute="f32", fn="Mul"](%0, %2)
      %4: f32[2, 3, 5, 5] = pointwise[compute="f32", fn="AddAlpha", p0=1](%3, %1)
      return (%4)
    }
  }
  return (%3)
}
)");
}

TEST(GemmEpilogue, LeavesTransposedFloat64AndViewedConvolutionsAndOptedOutKinds) {
  const auto fused = [](const std::string& text, EpilogueProducers producers = {}) {
    return after(
        [producers](Graph& g) {
          fuse_elementwise(g);
          fuse_gemm_epilogue(g, producers);
        },
        text);
  };
  // Transposed: eager runs it on the host.
  const std::string transposed = fused(R"(graph(%0: f32[2, 4, 8, 8], %1: f32[4, 3, 3, 3]) {
  %2: f32[2, 3, 10, 10] = extern[args=[%0, %1, none, [1, 1], [0, 0], [1, 1], true, [0, 0], 1], overload="default", target="aten::convolution"](%0, %1)
  %3: f32[2, 3, 10, 10] = pointwise[compute="f32", fn="Relu"](%2)
  return (%3)
}
)");
  EXPECT_EQ(transposed.find("gemm_epilogue"), std::string::npos) << transposed;
  // float64: not a matmul dtype.
  const std::string f64 = fused(R"(graph(%0: f64[2, 3, 8, 8], %1: f64[4, 3, 3, 3]) {
  %2: f64[2, 4, 6, 6] = extern[args=[%0, %1, none, [1, 1], [0, 0], [1, 1], false, [0, 0], 1], overload="default", target="aten::convolution"](%0, %1)
  %3: f64[2, 4, 6, 6] = pointwise[compute="f64", fn="Relu"](%2)
  return (%3)
}
)");
  EXPECT_EQ(f64.find("gemm_epilogue"), std::string::npos) << f64;
  // A convolution read through a view (only GEMM products are).
  const std::string viewed = fused(R"(graph(%0: f32[2, 3, 8, 8], %1: f32[4, 3, 3, 3]) {
  %2: f32[2, 4, 6, 6] = extern[args=[%0, %1, none, [1, 1], [0, 0], [1, 1], false, [0, 0], 1], overload="default", target="aten::convolution"](%0, %1)
  %3: f32[8, 36] = extern[args=[%2, [8, 36]], overload="default", target="aten::view"](%2)
  %4: f32[8, 36] = pointwise[compute="f32", fn="Relu"](%3)
  return (%4)
}
)");
  EXPECT_EQ(viewed.find("gemm_epilogue"), std::string::npos) << viewed;
  // The options that leave bmm and convolutions out.
  EpilogueProducers no_bmm;
  no_bmm.bmm = false;
  EXPECT_EQ(fused(kAttentionScores, no_bmm).find("gemm_epilogue"), std::string::npos);
  EpilogueProducers no_conv;
  no_conv.conv = false;
  EXPECT_EQ(fused(kConvBlock, no_conv).find("gemm_epilogue"), std::string::npos);
}

TEST(MemoryPlan, PutsAGemmProductIntoAnOutputThatCanHoldIt) {
  Graph g = parse_graph(kLinearGelu);
  run_pipeline(g);
  const std::string out = print_graph(g);
  EXPECT_NE(out.find("gemm=\"addmm\", product_into=0"), std::string::npos) << out;
  // A cast to another dtype cannot hold the fp32 product.
  Graph cast = parse_graph(R"(graph(%0: f32[6, 4], %1: f32[4, 8]) {
  %2: f32[6, 8] = extern[args=[%0, %1], overload="default", target="aten::mm"](%0, %1)
  %3: bf16[6, 8] = cast(%2)
  return (%3)
}
)");
  run_pipeline(cast);
  const std::string cast_out = print_graph(cast);
  EXPECT_NE(cast_out.find("gemm_epilogue"), std::string::npos) << cast_out;
  EXPECT_EQ(cast_out.find("product_into"), std::string::npos) << cast_out;
}

TEST(Verifier, RejectsAGemmEpilogueWhoseBodyMissesTheProduct) {
  Graph g = parse_graph(R"(graph(%0: f32[6, 4], %1: f32[4, 8]) {
  %2: f32[6, 8] = gemm_epilogue[alpha=1.0, beta=0.0, gemm="mm"](%0, %1) {
    graph(%0: f32[6, 4]) {
      %1: f32[6, 4] = pointwise[compute="f32", fn="Neg"](%0)
      return (%1)
    }
  }
  return (%2)
}
)");
  try {
    verify(g, "a test");
    FAIL() << "the verifier accepted a product of the wrong shape";
  } catch (const VerifyError& e) {
    EXPECT_NE(std::string(e.what()).find("gemm_epilogue"), std::string::npos) << e.what();
  }
}

// A softmax written out: amax ends its own group (its input is a graph input), the shifted
// exp joins the sum, and the exp (read again by the division) is an output of the same kernel.
TEST(ReductionFusion, APointwiseProducerJoinsItsReduction) {
  EXPECT_EQ(after([](Graph& g) { fuse_elementwise(g); }, R"(graph(%0: f32[4, 8]) {
  %1: f32[4, 1] = reduce[dims=[1], fn="amax", keepdim=1](%0)
  %2: f32[4, 8] = pointwise[compute="f32", fn="SubAlpha", p0=1](%0, %1)
  %3: f32[4, 8] = pointwise[compute="f32", fn="Exp"](%2)
  %4: f32[4, 1] = reduce[dims=[1], fn="sum", keepdim=1](%3)
  %5: f32[4, 8] = pointwise[compute="f32", fn="Div"](%3, %4)
  return (%5)
}
)"),
            R"(graph(%0: f32[4, 8]) {
  %1: f32[4, 1] = fused(%0) {
    graph(%0: f32[4, 8]) {
      %1: f32[4, 1] = reduce[dims=[1], fn="amax", keepdim=1](%0)
      return (%1)
    }
  }
  %2: f32[4, 8], %3: f32[4, 1] = fused(%0, %1) {
    graph(%0: f32[4, 8], %1: f32[4, 1]) {
      %2: f32[4, 8] = pointwise[compute="f32", fn="SubAlpha", p0=1](%0, %1)
      %3: f32[4, 8] = pointwise[compute="f32", fn="Exp"](%2)
      %4: f32[4, 1] = reduce[dims=[1], fn="sum", keepdim=1](%3)
      return (%3, %4)
    }
  }
  %4: f32[4, 8] = fused(%2, %3) {
    graph(%0: f32[4, 8], %1: f32[4, 1]) {
      %2: f32[4, 8] = pointwise[compute="f32", fn="Div"](%0, %1)
      return (%2)
    }
  }
  return (%4)
}
)");
}

TEST(ReductionFusion, NeverJoinsAColumnMajorInputOrAClosedGroup) {
  // The producer's result is laid out column-major: eager reads it in another order.
  const std::string transposed = after([](Graph& g) { fuse_elementwise(g); },
                                       R"(graph(%0: f32[4, 8]{1, 0}) {
  %1: f32[4, 8]{1, 0} = pointwise[compute="f32", fn="Exp"](%0)
  %2: f32[8] = reduce[dims=[0], fn="sum", keepdim=0](%1)
  return (%2)
}
)");
  EXPECT_NE(transposed.find("fused(%1)"), std::string::npos) << transposed;
  // A reduce ends its group: the mean of a sum's input is a kernel of its own.
  EXPECT_EQ(after([](Graph& g) { fuse_elementwise(g); }, R"(graph(%0: f32[4, 8]) {
  %1: f32[4, 8] = pointwise[compute="f32", fn="Exp"](%0)
  %2: f32[4] = reduce[dims=[1], fn="sum", keepdim=0](%1)
  %3: f32[8] = reduce[dims=[0], fn="mean", keepdim=0](%1)
  return (%2, %3)
}
)"),
            R"(graph(%0: f32[4, 8]) {
  %1: f32[4, 8], %2: f32[4] = fused(%0) {
    graph(%0: f32[4, 8]) {
      %1: f32[4, 8] = pointwise[compute="f32", fn="Exp"](%0)
      %2: f32[4] = reduce[dims=[1], fn="sum", keepdim=0](%1)
      return (%1, %2)
    }
  }
  %3: f32[8] = fused(%1) {
    graph(%0: f32[4, 8]) {
      %1: f32[8] = reduce[dims=[0], fn="mean", keepdim=0](%0)
      return (%1)
    }
  }
  return (%2, %3)
}
)");
}

TEST(Verifier, ChecksReduceShapesAndThatAReduceEndsItsBody) {
  auto rejects = [](const std::string& text, const std::string& rule) {
    try {
      verify(parse_graph(text), "a test");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const VerifyError& e) {
      EXPECT_NE(std::string(e.what()).find(rule), std::string::npos) << e.what();
    }
  };
  rejects(R"(graph(%0: f32[4, 8]) {
  %1: f32[4, 8] = reduce[dims=[1], fn="sum", keepdim=0](%0)
  return (%1)
}
)",
          "input's shape less the dims");
  rejects(R"(graph(%0: f32[4, 8]) {
  %1: f32[4] = fused(%0) {
    graph(%0: f32[4, 8]) {
      %1: f32[4] = reduce[dims=[1], fn="sum", keepdim=0](%0)
      %2: f32[4] = pointwise[compute="f32", fn="Exp"](%1)
      return (%2)
    }
  }
  return (%1)
}
)",
          "at most one final reduce");
}

TEST(Pipeline, ReportsEveryPassAndVerifiesBetween) {
  Graph g = parse_graph(R"(graph(%0: f32[4]) {
  %1: f32[4] = pointwise[compute="f32", fn="Exp"](%0)
  %2: f32[4] = pointwise[compute="f32", fn="Exp"](%0)
  %3: f32[4] = pointwise[compute="f32", fn="Mul"](%1, %2)
  return (%3)
}
)");
  std::vector<std::string> seen;
  run_pipeline(g, [&](const std::string& pass, const Graph&) { seen.push_back(pass); });
  EXPECT_EQ(seen.size(), 11u);
  EXPECT_EQ(seen.front(), "input");
  EXPECT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op, "fused");
  EXPECT_EQ(g.nodes[0].body->nodes.size(), 2u);  // CSE merged the two exps
}

TEST(SiblingGemms, MergesLinearLayersThatReadOneInput) {
  // q and k projections (mm of one input by transposed weights) and a third layer whose weight
  // is computed (not a graph input), which stays alone.
  EXPECT_EQ(after(merge_sibling_gemms,
                  R"(graph(%0: bf16[16, 8], %1: bf16[6, 8], %2: bf16[4, 8], %3: bf16[8, 5]) {
  %4: bf16[8, 6]{1, 0} = extern[args=[%1], target="aten::t", view=1](%1)
  %5: bf16[16, 6] = extern[args=[%0, %4], target="aten::mm"](%0, %4)
  %6: bf16[8, 4]{1, 0} = extern[args=[%2], target="aten::t", view=1](%2)
  %7: bf16[16, 4] = extern[args=[%0, %6], target="aten::mm"](%0, %6)
  %8: bf16[8, 5] = pointwise[compute="bf16", fn="Neg"](%3)
  %9: bf16[16, 5] = extern[args=[%0, %8], target="aten::mm"](%0, %8)
  return (%5, %7, %9)
}
)"),
            R"(graph(%0: bf16[16, 8], %1: bf16[6, 8], %2: bf16[4, 8], %3: bf16[8, 5]) {
  %4: bf16[10, 8] = extern[args=[[%1, %2], 0], cached=1, overload="default", target="aten::cat"](%1, %2)
  %5: bf16[8, 10]{1, 0} = extern[args=[%4], overload="default", target="aten::t", view=1](%4)
  %6: bf16[16, 10] = extern[args=[%0, %5], merged=2, overload="default", target="aten::mm"](%0, %5)
  %7: bf16[16, 6] = extern[args=[%6, 1, 0, 6, 1], overload="Tensor", target="aten::slice", view=1](%6)
  %8: bf16[16, 4] = extern[args=[%6, 1, 6, 10, 1], overload="Tensor", target="aten::slice", view=1](%6)
  %9: bf16[8, 5] = pointwise[compute="bf16", fn="Neg"](%3)
  %10: bf16[16, 5] = extern[args=[%0, %9], target="aten::mm"](%0, %9)
  return (%7, %8, %10)
}
)");
}

TEST(SiblingGemms, MergesBiasesOfAddmmAndLeavesMixedOrSeparatedOnes) {
  // Two addmm siblings (gate/up with biases) merge with their biases; an mm beside them is of
  // another kind, and an impure node between two more mm siblings keeps those apart.
  const std::string merged = after(
      merge_sibling_gemms,
      R"(graph(%0: f32[16, 8], %1: f32[6, 8], %2: f32[6], %3: f32[6, 8], %4: f32[6], %5: f32[3, 8], %6: f32[3, 8]) {
  %7: f32[8, 6]{1, 0} = extern[args=[%1, [1, 0]], target="aten::permute", view=1](%1)
  %8: f32[16, 6] = extern[args=[%2, %0, %7, 1, 1], target="aten::addmm"](%2, %0, %7)
  %9: f32[8, 6]{1, 0} = extern[args=[%3], target="aten::t", view=1](%3)
  %10: f32[16, 6] = extern[args=[%4, %0, %9, 1, 1], target="aten::addmm"](%4, %0, %9)
  %11: f32[8, 3]{1, 0} = extern[args=[%5], target="aten::t", view=1](%5)
  %12: f32[16, 3] = extern[args=[%0, %11], target="aten::mm"](%0, %11)
  %13: f32[16, 8] = extern[args=[%0], impure=1, target="aten::bernoulli"](%0)
  %14: f32[8, 3]{1, 0} = extern[args=[%6], target="aten::t", view=1](%6)
  %15: f32[16, 3] = extern[args=[%0, %14], target="aten::mm"](%0, %14)
  return (%8, %10, %12, %13, %15)
}
)");
  EXPECT_NE(merged.find(
                R"(extern[args=[[%2, %4], 0], cached=1, overload="default", target="aten::cat"])"),
            std::string::npos)
      << merged;
  EXPECT_NE(merged.find(R"(merged=2, overload="default", target="aten::addmm")"), std::string::npos)
      << merged;
  size_t mms = 0;
  for (size_t at = merged.find("aten::mm\""); at != std::string::npos;
       at = merged.find("aten::mm\"", at + 1)) {
    ++mms;
  }
  EXPECT_EQ(mms, 2u) << merged;  // the impure node keeps the two mm layers apart
}

TEST(SiblingGemms, CastsTheConcatenationOfAutocastWeightsOnce) {
  // Under autocast each fp32 weight is cast to bf16 before its transpose (which the graph also
  // returns, for the backward): the fp32 weights are concatenated, cast once, and each returned
  // transpose reads its rows of that cast.
  EXPECT_EQ(after(merge_sibling_gemms, R"(graph(%0: f32[6, 8], %1: bf16[16, 8], %2: f32[4, 8]) {
  %3: bf16[6, 8] = cast(%0)
  %4: bf16[8, 6]{1, 0} = extern[args=[%3], target="aten::t", view=1](%3)
  %5: bf16[16, 6] = extern[args=[%1, %4], target="aten::mm"](%1, %4)
  %6: bf16[4, 8] = cast(%2)
  %7: bf16[8, 4]{1, 0} = extern[args=[%6], target="aten::t", view=1](%6)
  %8: bf16[16, 4] = extern[args=[%1, %7], target="aten::mm"](%1, %7)
  return (%5, %8, %4, %7)
}
)"),
            R"(graph(%0: f32[6, 8], %1: bf16[16, 8], %2: f32[4, 8]) {
  %3: f32[10, 8] = extern[args=[[%0, %2], 0], cached=1, overload="default", target="aten::cat"](%0, %2)
  %4: bf16[10, 8] = cast(%3)
  %5: bf16[6, 8] = extern[args=[%4, 0, 0, 6, 1], overload="Tensor", target="aten::slice", view=1](%4)
  %6: bf16[4, 8] = extern[args=[%4, 0, 6, 10, 1], overload="Tensor", target="aten::slice", view=1](%4)
  %7: bf16[8, 6]{1, 0} = extern[args=[%5], target="aten::t", view=1](%5)
  %8: bf16[8, 10]{1, 0} = extern[args=[%4], overload="default", target="aten::t", view=1](%4)
  %9: bf16[16, 10] = extern[args=[%1, %8], merged=2, overload="default", target="aten::mm"](%1, %8)
  %10: bf16[16, 6] = extern[args=[%9, 1, 0, 6, 1], overload="Tensor", target="aten::slice", view=1](%9)
  %11: bf16[16, 4] = extern[args=[%9, 1, 6, 10, 1], overload="Tensor", target="aten::slice", view=1](%9)
  %12: bf16[8, 4]{1, 0} = extern[args=[%6], target="aten::t", view=1](%6)
  return (%10, %11, %7, %12)
}
)");
}

TEST(SiblingGemms, MergeProjectionsWhoseInputsAutocastCastsOnSeveralLines) {
  // Llama's q, k and v projections under autocast: each casts the normed activation (and its
  // weight) on its own source line; CSE makes the activation casts one, so all three merge.
  Graph g = parse_graph(R"(graph(%0: f32[16, 8], %1: f32[8, 8], %2: f32[4, 8], %3: f32[4, 8]) {
  %4: bf16[16, 8] = cast[src="m.py:1"](%0)
  %5: bf16[8, 8] = cast[src="m.py:1"](%1)
  %6: bf16[8, 8]{1, 0} = extern[args=[%5], src="m.py:1", target="aten::t", view=1](%5)
  %7: bf16[16, 8] = extern[args=[%4, %6], src="m.py:1", target="aten::mm"](%4, %6)
  %8: bf16[16, 8] = cast[src="m.py:2"](%0)
  %9: bf16[4, 8] = cast[src="m.py:2"](%2)
  %10: bf16[8, 4]{1, 0} = extern[args=[%9], src="m.py:2", target="aten::t", view=1](%9)
  %11: bf16[16, 4] = extern[args=[%8, %10], src="m.py:2", target="aten::mm"](%8, %10)
  %12: bf16[16, 8] = cast[src="m.py:3"](%0)
  %13: bf16[4, 8] = cast[src="m.py:3"](%3)
  %14: bf16[8, 4]{1, 0} = extern[args=[%13], src="m.py:3", target="aten::t", view=1](%13)
  %15: bf16[16, 4] = extern[args=[%12, %14], src="m.py:3", target="aten::mm"](%12, %14)
  return (%7, %11, %15)
}
)");
  PipelineOptions options;
  options.bitwise = false;
  run_pipeline(g, {}, options);
  const std::string printed = print_graph(g);
  EXPECT_NE(printed.find("merged=3"), std::string::npos) << printed;
}

TEST(SiblingGemms, RunOnlyOutsideTheBitwiseMode) {
  const char* text = R"(graph(%0: f32[16, 8], %1: f32[6, 8], %2: f32[4, 8]) {
  %3: f32[8, 6]{1, 0} = extern[args=[%1], target="aten::t", view=1](%1)
  %4: f32[16, 6] = extern[args=[%0, %3], target="aten::mm"](%0, %3)
  %5: f32[8, 4]{1, 0} = extern[args=[%2], target="aten::t", view=1](%2)
  %6: f32[16, 4] = extern[args=[%0, %5], target="aten::mm"](%0, %5)
  return (%4, %6)
}
)";
  for (const bool bitwise : {true, false}) {
    Graph g = parse_graph(text);
    PipelineOptions options;
    options.bitwise = bitwise;
    run_pipeline(g, {}, options);
    const std::string printed = print_graph(g);
    EXPECT_EQ(printed.find("merged=2") == std::string::npos, bitwise) << printed;
  }
}

}  // namespace
}  // namespace openneuron::compiler
