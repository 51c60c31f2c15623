// Lowering and tiled execution of fused elementwise kernels.
#include "compiler/fused_kernel.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "compiler/elementwise_params.h"
#include "compiler/names.h"
#include "compiler/ops.h"
#include "kernels/pointwise/cast.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::compiler {

using kernels::TensorView;

FusedKernel build_fused_kernel(const Graph& body) {
  FusedKernel kernel;
  std::unordered_map<int, int> slot;  // body value -> slot
  kernel.num_inputs = static_cast<int>(body.inputs.size());
  for (int id : body.inputs) {
    slot[id] = static_cast<int>(kernel.slot_dtypes.size());
    kernel.slot_dtypes.push_back(body.values[id].dtype);
  }
  for (const Node& node : body.nodes) {
    if (node.op != ops::kScalar) continue;
    const DType dtype = body.values[node.outputs[0]].dtype;
    kernel.constants.push_back(host_scalar_of(node, dtype));
    slot[node.outputs[0]] = static_cast<int>(kernel.slot_dtypes.size());
    kernel.slot_dtypes.push_back(dtype);
  }
  for (const Node& node : body.nodes) {
    if (node.op == ops::kScalar) continue;
    FusedInstr instr;
    if (node.op == ops::kCast) {
      instr.is_cast = true;
    } else if (node.op == ops::kPointwise) {
      const ElementwiseCall call = elementwise_call(node);
      instr.op = call.op;
      instr.compute = call.compute;
      instr.params = call.params;
    } else {
      throw std::invalid_argument("compiler: fused body holds a " + node.op + " node");
    }
    if (node.inputs.size() > 3) throw std::invalid_argument("compiler: more than 3 inputs");
    for (int input : node.inputs) {
      const auto it = slot.find(input);
      if (it == slot.end()) throw std::invalid_argument("compiler: fused body reads undefined");
      instr.args[instr.num_args++] = it->second;
    }
    instr.result = static_cast<int>(kernel.slot_dtypes.size());
    slot[node.outputs[0]] = instr.result;
    kernel.slot_dtypes.push_back(body.values[node.outputs[0]].dtype);
    kernel.instrs.push_back(instr);
  }
  for (int id : body.outputs) kernel.outputs.push_back(slot.at(id));
  return kernel;
}

std::string FusedKernel::listing() const {
  std::ostringstream out;
  out << "inputs:";
  for (int k = 0; k < num_inputs; ++k) out << " %" << k << ":" << dtype_short_name(slot_dtypes[k]);
  out << "\n";
  for (size_t c = 0; c < constants.size(); ++c) {
    const int s = num_inputs + static_cast<int>(c);
    const Attr value = constants[c].attr();
    out << "  %" << s << ":" << dtype_short_name(slot_dtypes[s]) << " = const ";
    if (value.kind == Attr::Kind::Float) {
      out << value.f;
    } else {
      out << value.i;
    }
    out << "\n";
  }
  for (const FusedInstr& instr : instrs) {
    out << "  %" << instr.result << ":" << dtype_short_name(slot_dtypes[instr.result]) << " = ";
    if (instr.is_cast) {
      out << "cast";
    } else {
      out << pointwise_op_name(instr.op) << "." << dtype_short_name(instr.compute);
    }
    out << "(";
    for (int a = 0; a < instr.num_args; ++a) out << (a ? ", %" : "%") << instr.args[a];
    out << ")\n";
  }
  out << "outputs:";
  for (int s : outputs) out << " %" << s;
  out << "\n";
  return out.str();
}

namespace {

constexpr int kMaxOperands = 64;

// The iteration space after dropping size-1 dims, ordering dims as the first output is laid
// out in memory, and merging dims that are contiguous in every operand.
struct Space {
  int ndim = 0;
  int64_t sizes[kernels::kMaxDims] = {};
  // Per operand; only dims [0, ndim) are written and read. Rows are 512 bytes each, so they
  // live in a per-thread buffer reused from call to call, not allocated and zeroed per call.
  std::array<int64_t, kernels::kMaxDims>* strides = nullptr;
};

Space collapse(const std::vector<const TensorView*>& views) {
  const TensorView& first = *views[0];
  std::vector<int> dims;
  for (int d = 0; d < first.ndim; ++d) {
    if (first.sizes[d] != 1) dims.push_back(d);
  }
  std::stable_sort(dims.begin(), dims.end(), [&](int a, int b) {
    return std::abs(first.strides[a]) > std::abs(first.strides[b]);
  });
  Space space;
  thread_local std::vector<std::array<int64_t, kernels::kMaxDims>> rows;
  if (rows.size() < views.size()) rows.resize(views.size());
  space.strides = rows.data();
  for (int d : dims) {
    const int n = space.ndim;
    bool merged = false;
    if (n > 0) {
      merged = true;
      for (size_t v = 0; v < views.size(); ++v) {
        if (space.strides[v][n - 1] != views[v]->strides[d] * views[v]->sizes[d]) merged = false;
      }
    }
    if (merged) {
      space.sizes[n - 1] *= first.sizes[d];
      for (size_t v = 0; v < views.size(); ++v) space.strides[v][n - 1] = views[v]->strides[d];
    } else {
      space.sizes[n] = first.sizes[d];
      for (size_t v = 0; v < views.size(); ++v) space.strides[v][n] = views[v]->strides[d];
      ++space.ndim;
    }
  }
  return space;
}

// Fills `view` in place as a dense row-major view (a TensorView is about 1 KB: per tile and
// instruction, only the dims in use are written).
void set_dense_view(TensorView& view, void* data, DType dtype, int ndim, const int64_t* sizes) {
  view.data = data;
  view.dtype = dtype;
  view.ndim = ndim;
  int64_t stride = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    view.sizes[d] = sizes[d];
    view.strides[d] = stride;
    stride *= sizes[d];
  }
}

}  // namespace

void run_fused_kernel(const FusedKernel& kernel, const TensorView* outputs,
                      const TensorView* inputs) {
  const size_t num_outputs = kernel.outputs.size();
  if (outputs[0].numel() == 0) return;
  std::vector<const TensorView*> views;
  for (size_t k = 0; k < num_outputs; ++k) views.push_back(&outputs[k]);
  for (int k = 0; k < kernel.num_inputs; ++k) views.push_back(&inputs[k]);
  if (views.size() > kMaxOperands) throw std::invalid_argument("compiler: too many operands");

  // A single instruction that writes the only output: the kernel library's own call over the
  // whole views, as eager makes it (its own threading, no per-tile set-up), so the same result.
  if (kernel.instrs.size() == 1 && num_outputs == 1 &&
      kernel.outputs[0] == kernel.instrs[0].result) {
    const FusedInstr& instr = kernel.instrs[0];
    TensorView args[3];
    for (int a = 0; a < instr.num_args; ++a) {
      const int slot = instr.args[a];
      if (slot < kernel.num_inputs) {
        args[a] = inputs[slot];
        continue;
      }
      const HostScalar& constant = kernel.constants.at(slot - kernel.num_inputs);
      args[a] = outputs[0];
      args[a].data = const_cast<unsigned char*>(constant.bytes);
      args[a].dtype = constant.dtype;
      for (int d = 0; d < args[a].ndim; ++d) args[a].strides[d] = 0;
    }
    if (instr.is_cast) {
      kernels::copy(outputs[0], args[0]);
    } else {
      kernels::pointwise(instr.op, outputs[0], args, instr.num_args, instr.compute, instr.params);
    }
    return;
  }
  const Space space = collapse(views);

  // Tiles: whole inner dims [split + 1, ndim) and `chunk` indices of dim `split`.
  int split = space.ndim - 1;
  int64_t inner = 1;
  while (split >= 0 && inner * space.sizes[split] <= kTileElements) inner *= space.sizes[split--];
  const int64_t chunk = split >= 0 ? std::max<int64_t>(1, kTileElements / inner) : 1;
  const int64_t chunks = split >= 0 ? (space.sizes[split] + chunk - 1) / chunk : 1;
  int64_t outer = 1;
  for (int d = 0; d < split; ++d) outer *= space.sizes[d];
  const int64_t tiles = outer * chunks;
  const int tile_ndim = split >= 0 ? space.ndim - split : space.ndim;
  const int first_tile_dim = split >= 0 ? split : 0;

  // Scratch for one tile per intermediate, sized by the actual tile (small tensors need little)
  // and left uninitialised: every element is written before it is read.
  const int64_t tile_elements = std::min<int64_t>(kTileElements, inner * chunk);
  auto slot_bytes = [&](DType dtype) {  // each slot 64-byte aligned
    return (kernels::element_size(dtype) * static_cast<size_t>(tile_elements) + 63) / 64 * 64;
  };
  size_t scratch_bytes = 0;
  for (const FusedInstr& instr : kernel.instrs) {
    scratch_bytes += slot_bytes(kernel.slot_dtypes[instr.result]);
  }
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, tile_elements));

  kernels::parallel_for(0, tiles, grain, [&](int64_t begin, int64_t end) {
    std::unique_ptr<unsigned char[]> scratch(new unsigned char[scratch_bytes + 64]);
    // Reused per thread: a TensorView is about 1 KB and a long kernel has ~100 slots, too many
    // to allocate on every call (every slot in use is written before it is read).
    thread_local std::vector<TensorView> slot_views;
    if (slot_views.size() < kernel.slot_dtypes.size()) slot_views.resize(kernel.slot_dtypes.size());
    TensorView* const slots = slot_views.data();
    std::vector<int> output_index(kernel.slot_dtypes.size(), -1);
    for (size_t k = 0; k < num_outputs; ++k) output_index[kernel.outputs[k]] = static_cast<int>(k);
    TensorView args[3];
    for (int64_t tile = begin; tile < end; ++tile) {
      // The tile's position: indices of the outer dims and the chunk of dim `split`.
      int64_t sizes[kernels::kMaxDims];
      int64_t offsets[kMaxOperands] = {};
      int64_t rest = tile / chunks;
      const int64_t chunk_index = tile % chunks;
      for (int d = split - 1; d >= 0; --d) {
        const int64_t i = rest % space.sizes[d];
        rest /= space.sizes[d];
        for (size_t v = 0; v < views.size(); ++v) offsets[v] += i * space.strides[v][d];
      }
      for (int d = 0; d < tile_ndim; ++d) sizes[d] = space.sizes[first_tile_dim + d];
      if (split >= 0) {
        const int64_t start = chunk_index * chunk;
        sizes[0] = std::min(chunk, space.sizes[split] - start);
        for (size_t v = 0; v < views.size(); ++v) offsets[v] += start * space.strides[v][split];
      }
      auto set_operand_view = [&](TensorView& view, size_t v) {
        view.dtype = views[v]->dtype;
        view.ndim = tile_ndim;
        view.data = static_cast<char*>(views[v]->data) +
                    offsets[v] * static_cast<int64_t>(kernels::element_size(view.dtype));
        for (int d = 0; d < tile_ndim; ++d) {
          view.sizes[d] = sizes[d];
          view.strides[d] = space.strides[v][first_tile_dim + d];
        }
      };
      for (int k = 0; k < kernel.num_inputs; ++k) set_operand_view(slots[k], num_outputs + k);
      for (size_t c = 0; c < kernel.constants.size(); ++c) {
        TensorView& view = slots[kernel.num_inputs + c];
        view.data = const_cast<unsigned char*>(kernel.constants[c].bytes);
        view.dtype = kernel.constants[c].dtype;
        view.ndim = tile_ndim;
        for (int d = 0; d < tile_ndim; ++d) {
          view.sizes[d] = sizes[d];
          view.strides[d] = 0;
        }
      }
      unsigned char* free_scratch = scratch.get();
      for (const FusedInstr& instr : kernel.instrs) {
        const int out_k = output_index[instr.result];
        if (out_k >= 0) {
          set_operand_view(slots[instr.result], static_cast<size_t>(out_k));
        } else {
          const DType dtype = kernel.slot_dtypes[instr.result];
          set_dense_view(slots[instr.result], free_scratch, dtype, tile_ndim, sizes);
          free_scratch += slot_bytes(dtype);
        }
        if (instr.is_cast) {
          kernels::copy(slots[instr.result], slots[instr.args[0]]);
        } else {
          for (int a = 0; a < instr.num_args; ++a) args[a] = slots[instr.args[a]];
          kernels::pointwise(instr.op, slots[instr.result], args, instr.num_args, instr.compute,
                             instr.params);
        }
      }
    }
  });
}

}  // namespace openneuron::compiler
