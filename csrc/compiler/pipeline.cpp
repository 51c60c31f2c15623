// The fixed order of passes; see pipeline.h.
#include "compiler/pipeline.h"

#include "compiler/passes/passes.h"
#include "compiler/verify.h"

namespace openneuron::compiler {

void run_pipeline(Graph& graph, const PassObserver& observer, const PipelineOptions& options) {
  const bool fuse = options.fuse;
  const bool layouts = options.eliminate_layouts;
  const bool epilogues = options.fuse && options.gemm_epilogues;
  const bool widen = epilogues && !options.bitwise;
  const bool siblings = options.sibling_gemms && !options.bitwise;
  EpilogueProducers producers;
  producers.bmm = options.bmm_epilogues;
  producers.conv = options.conv_epilogues;
  verify(graph, "input");
  if (observer) observer("input", graph);
  const std::pair<const char*, std::function<void(Graph&)>> passes[] = {
      {"eliminate_views", eliminate_views},
      {"eliminate_layouts",
       [layouts](Graph& g) {
         if (layouts) eliminate_layouts(g);
       }},
      {"fold_constants", fold_constants},
      {"eliminate_common_subexpressions", eliminate_common_subexpressions},
      {"eliminate_dead_code", eliminate_dead_code},
      {"merge_sibling_gemms",
       [siblings](Graph& g) {
         if (siblings) merge_sibling_gemms(g);
       }},
      {"fuse_elementwise", [fuse](Graph& g) { fuse_elementwise(g, fuse); }},
      {"fuse_gemm_epilogue",
       [epilogues, producers](Graph& g) {
         if (epilogues) fuse_gemm_epilogue(g, producers);
       }},
      {"widen_gemm_epilogues",
       [widen](Graph& g) {
         if (widen) widen_gemm_epilogues(g);
       }},
      {"plan_memory", plan_memory},
  };
  for (const auto& [name, pass] : passes) {
    pass(graph);
    verify(graph, name);
    if (observer) observer(name, graph);
  }
}

}  // namespace openneuron::compiler
