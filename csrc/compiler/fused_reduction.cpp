// Lowering and tiled execution of fused reductions.
#include "compiler/fused_reduction.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <vector>

#include "compiler/ops.h"
#include "kernels/reduce/reduce.h"
#include "kernels/reduce/reduce_general.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::compiler {

using kernels::TensorView;

bool ends_in_reduce(const Graph& body) {
  return !body.nodes.empty() && body.nodes.back().op == ops::kReduce;
}

FusedReduction build_fused_reduction(const Graph& body) {
  if (!ends_in_reduce(body)) throw std::invalid_argument("compiler: body does not reduce");
  FusedReduction kernel;
  const Node& reduce = body.nodes.back();
  const std::string fn = reduce.string_attr("fn");
  kernel.fn = fn == "sum" ? ReduceFn::Sum : fn == "mean" ? ReduceFn::Mean : ReduceFn::Amax;
  for (const Attr& d : reduce.attr("dims")->list) kernel.mask |= 1u << d.i;
  const int source = reduce.inputs[0];
  kernel.source_dtype = body.values[source].dtype;
  Graph elementwise = body;
  elementwise.nodes.pop_back();
  elementwise.outputs.clear();
  for (size_t k = 0; k < body.outputs.size(); ++k) {
    if (body.outputs[k] == reduce.outputs[0]) {
      kernel.result = static_cast<int>(k);
      continue;
    }
    if (body.outputs[k] == source) kernel.source_output = static_cast<int>(k);
    elementwise.outputs.push_back(body.outputs[k]);
  }
  const auto bound = std::find(body.inputs.begin(), body.inputs.end(), source);
  if (bound != body.inputs.end()) {
    kernel.source_input = static_cast<int>(bound - body.inputs.begin());
  } else if (kernel.source_output < 0) {
    kernel.scratch_output = static_cast<int>(elementwise.outputs.size());
    elementwise.outputs.push_back(source);
  }
  kernel.has_elementwise = !elementwise.outputs.empty();
  if (kernel.has_elementwise) kernel.elementwise = build_fused_kernel(elementwise);
  return kernel;
}

namespace {

TensorView slice(TensorView view, int dim, int64_t begin, int64_t length) {
  view.data = static_cast<char*>(view.data) +
              begin * view.strides[dim] * static_cast<int64_t>(kernels::element_size(view.dtype));
  view.sizes[dim] = length;
  return view;
}

void reduce_tile(ReduceFn fn, const TensorView& out, const TensorView& in, uint32_t mask) {
  if (fn == ReduceFn::Amax) {
    TensorView no_indices = out;
    no_indices.data = nullptr;
    kernels::reduce_general(kernels::GeneralReduceOp::Max, {}, out, no_indices, in, mask);
  } else {
    kernels::reduce(fn == ReduceFn::Sum ? kernels::ReduceOp::Sum : kernels::ReduceOp::Mean, out, in,
                    mask);
  }
}

}  // namespace

void run_fused_reduction(const FusedReduction& kernel, int ndim, const int64_t* sizes,
                         const TensorView* outputs, const TensorView* inputs) {
  const size_t num_outputs =
      kernel.elementwise.outputs.size() + 1 - (kernel.scratch_output >= 0 ? 1 : 0);
  int64_t numel = 1;
  for (int d = 0; d < ndim; ++d) numel *= sizes[d];
  // Tiles: `chunk` indices of the outermost kept dim that is not 1, with every other dim whole.
  int split = -1;
  for (int d = 0; d < ndim && split < 0; ++d) {
    if (!((kernel.mask >> d) & 1u) && sizes[d] > 1) split = d;
  }
  const int64_t extent = split >= 0 ? sizes[split] : 1;
  const int64_t per_index = numel / std::max<int64_t>(1, extent);  // elements per split index
  const int64_t chunk =
      split >= 0 ? std::max<int64_t>(1, kReductionTileElements / std::max<int64_t>(1, per_index))
                 : 1;
  const int64_t tiles = (extent + chunk - 1) / chunk;
  const int num_inputs =
      kernel.has_elementwise ? kernel.elementwise.num_inputs : kernel.source_input + 1;
  const size_t source_bytes = kernels::element_size(kernel.source_dtype);

  kernels::parallel_for(0, tiles, 1, [&](int64_t first, int64_t last) {
    std::unique_ptr<unsigned char[]> scratch;
    if (kernel.scratch_output >= 0 && numel > 0) {
      const int64_t tile_elements = split >= 0 ? std::min(chunk, extent) * per_index : numel;
      scratch.reset(new unsigned char[static_cast<size_t>(tile_elements) * source_bytes]);
    }
    std::vector<TensorView> ins(static_cast<size_t>(std::max(num_inputs, 0)));
    std::vector<TensorView> outs(kernel.elementwise.outputs.size());
    for (int64_t tile = first; tile < last; ++tile) {
      const int64_t begin = tile * chunk;
      const int64_t length = split >= 0 ? std::min(chunk, extent - begin) : 1;
      auto tiled = [&](const TensorView& v) {
        return split >= 0 ? slice(v, split, begin, length) : v;
      };
      for (size_t k = 0; k < ins.size(); ++k) ins[k] = tiled(inputs[k]);
      // Node outputs other than the reduce's map to elementwise outputs in order.
      size_t next = 0;
      for (size_t k = 0; k < num_outputs; ++k) {
        if (static_cast<int>(k) == kernel.result) continue;
        outs[next++] = tiled(outputs[k]);
      }
      TensorView source;
      if (kernel.scratch_output >= 0) {
        source = tiled(outputs[kernel.result]);  // sizes of the tile, reduced dims restored
        source.data = scratch.get();
        source.dtype = kernel.source_dtype;
        int64_t stride = 1;
        for (int d = ndim - 1; d >= 0; --d) {
          source.sizes[d] = d == split ? length : sizes[d];
          source.strides[d] = stride;
          stride *= source.sizes[d];
        }
        outs[kernel.scratch_output] = source;
      }
      if (numel > 0 && kernel.has_elementwise) {
        run_fused_kernel(kernel.elementwise, outs.data(), ins.data());
      }
      if (kernel.source_input >= 0) {
        source = ins[kernel.source_input];
      } else if (kernel.source_output >= 0) {
        source = tiled(outputs[kernel.source_output]);
      }
      reduce_tile(kernel.fn, tiled(outputs[kernel.result]), source, kernel.mask);
    }
  });
}

}  // namespace openneuron::compiler
