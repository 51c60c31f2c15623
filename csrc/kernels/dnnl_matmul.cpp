#include "kernels/dnnl_matmul.h"

#include <dnnl.hpp>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "kernels/cast.h"

namespace openneuron::kernels {
namespace {

using dnnl::memory;

memory::data_type dnnl_type(DType dtype) {
  switch (dtype) {
    case DType::BFloat16: return memory::data_type::bf16;
    case DType::Float32: return memory::data_type::f32;
    default: return memory::data_type::undef;
  }
}

// A 2-D or 3-D view as oneDNN sees it; a stride-0 batch becomes a broadcast batch of 1.
memory::desc describe(const TensorView& view) {
  memory::dims dims(view.sizes, view.sizes + view.ndim);
  memory::dims strides(view.strides, view.strides + view.ndim);
  if (view.ndim == 3 && view.strides[0] == 0) dims[0] = 1;
  // A size-1 dim's stride is arbitrary in PyTorch; oneDNN wants it to span the inner dims.
  for (int d = view.ndim - 1; d >= 0; --d) {
    if (dims[d] != 1) continue;
    memory::dim span = 1;
    for (int inner = d + 1; inner < view.ndim; ++inner) span = std::max(span, dims[inner] * strides[inner]);
    strides[d] = span;
  }
  return memory::desc(dims, dnnl_type(view.dtype), strides);
}

void append_key(std::string& key, const TensorView& view) {
  key += std::to_string(static_cast<int>(view.dtype));
  for (int d = 0; d < view.ndim; ++d) {
    key += ',' + std::to_string(view.sizes[d]) + ':' + std::to_string(view.strides[d]);
  }
  key += ';';
}

struct Primitive {
  dnnl::matmul matmul;
  bool optimised;
};

class PrimitiveCache {
 public:
  // The primitive for this problem, created on first use. Returns nullptr if unsupported.
  const Primitive* find_or_create(const TensorView& out, const TensorView& a, const TensorView& b,
                                  double alpha, bool accumulate, double beta) {
    std::string key;
    append_key(key, out);
    append_key(key, a);
    append_key(key, b);
    key += std::to_string(alpha) + '|' + std::to_string(accumulate ? beta : 0.0);
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = cache_.find(key);
    if (found != cache_.end()) return &found->second;
    if (cache_.size() > 512) cache_.clear();  // shapes churn (e.g. dynamic batch): start over
    Primitive primitive{dnnl::matmul(), false};
    try {
      dnnl::primitive_attr attr;
      if (alpha != 1.0) attr.set_output_scales(0, {static_cast<float>(alpha)});
      if (accumulate) {
        dnnl::post_ops ops;
        ops.append_sum(static_cast<float>(beta));
        attr.set_post_ops(ops);
      }
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(describe(a), describe(b), describe(out)),
                                      attr, engine());
      const std::string impl = pd.impl_info_str();
      primitive = Primitive{dnnl::matmul(pd), impl.find("ref") == std::string::npos};
    } catch (const dnnl::error&) {
      primitive.optimised = false;
    }
    return &cache_.emplace(key, std::move(primitive)).first->second;
  }

  static dnnl::engine& engine() {
    static dnnl::engine instance(dnnl::engine::kind::cpu, 0);
    return instance;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, Primitive> cache_;
};

PrimitiveCache& cache() {
  static auto* instance = new PrimitiveCache();
  return *instance;
}

}  // namespace

bool dnnl_gemm(const TensorView& out, const TensorView& a, const TensorView& b,
               const TensorView* bias, double alpha, double beta) {
  if ((out.dtype != DType::BFloat16 && out.dtype != DType::Float32) || a.dtype != out.dtype || b.dtype != out.dtype) return false;
  for (int d = 0; d < out.ndim; ++d) {
    if (out.sizes[d] == 0 || a.sizes[d] == 0 || b.sizes[d] == 0 || out.strides[d] == 0) return false;
  }
  const bool accumulate = bias != nullptr && beta != 0.0;
  const Primitive* primitive = cache().find_or_create(out, a, b, alpha, accumulate, beta);
  if (!primitive->optimised) return false;
  if (accumulate) copy(out, *bias);  // the sum post-op adds beta * (what out holds)
  dnnl::engine& engine = PrimitiveCache::engine();
  dnnl::stream stream(engine);
  memory a_memory(describe(a), engine, a.data);
  memory b_memory(describe(b), engine, b.data);
  memory out_memory(describe(out), engine, out.data);
  try {
    primitive->matmul.execute(stream, {{DNNL_ARG_SRC, a_memory},
                                       {DNNL_ARG_WEIGHTS, b_memory},
                                       {DNNL_ARG_DST, out_memory}});
    stream.wait();
  } catch (const dnnl::error&) {
    return false;  // the BLAS path recomputes out from scratch (bias never aliases out)
  }
  return true;
}

}  // namespace openneuron::kernels
