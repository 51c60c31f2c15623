#include "kernels/pointwise/dnnl_eltwise.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "kernels/runtime/dnnl_runtime.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {
namespace {

using dnnl::memory;

// Fewest elements worth a kernel thread of their own.
constexpr int64_t kMinPiece = 32768;

struct GeluPrimitives {
  memory::desc desc;
  dnnl::eltwise_forward forward;
  dnnl::eltwise_backward backward;
};

// The primitives for one (dtype, form, length), created once per thread: a oneDNN primitive
// is not executed concurrently, and kernel threads live for the whole process.
const GeluPrimitives* primitives_for(DType dtype, bool tanh_approximation, int64_t length) {
  thread_local std::unordered_map<int64_t, std::optional<GeluPrimitives>> cache;
  const int64_t key = length * 8 + static_cast<int64_t>(dtype) * 2 + (tanh_approximation ? 1 : 0);
  auto found = cache.find(key);
  if (found != cache.end()) return found->second ? &*found->second : nullptr;
  std::optional<GeluPrimitives> created;
  try {
    const memory::data_type type =
        dtype == DType::Float32 ? memory::data_type::f32 : memory::data_type::bf16;
    const memory::desc desc({length}, type, memory::format_tag::a);
    const auto algorithm =
        tanh_approximation ? dnnl::algorithm::eltwise_gelu_tanh : dnnl::algorithm::eltwise_gelu_erf;
    const dnnl::eltwise_forward::primitive_desc forward_pd(
        {dnnl::prop_kind::forward_training, algorithm, desc, 0.0f, 0.0f}, dnnl_engine());
    const dnnl::eltwise_backward::primitive_desc backward_pd({algorithm, desc, desc, 0.0f, 0.0f},
                                                             dnnl_engine(), forward_pd);
    // Reference (non-JIT) implementations are slower than our own loops: decline them.
    const std::string forward_impl = forward_pd.impl_info_str();
    if (forward_impl.find("ref") == std::string::npos) {
      created = GeluPrimitives{desc, dnnl::eltwise_forward(forward_pd),
                               dnnl::eltwise_backward(backward_pd)};
    }
  } catch (const dnnl::error&) {
  }
  auto inserted = cache.emplace(key, std::move(created)).first;
  return inserted->second ? &*inserted->second : nullptr;
}

// Runs run_piece(primitives, offset) over [0, count) in pieces across kernel threads;
// false, having written nothing, if a piece length has no primitive on the caller's thread.
template <typename RunPiece>
bool for_each_piece(DType dtype, bool tanh_approximation, int64_t count,
                    const RunPiece& run_piece) {
  if (dtype != DType::Float32 && dtype != DType::BFloat16) return false;
  if (count <= 0) return true;
  const OneOpenMPThread one_openmp_thread;
  // One piece per kernel thread: every execution costs microseconds of setup.
  const int64_t pieces =
      std::max<int64_t>(1, std::min<int64_t>(kernel_thread_count(), count / kMinPiece));
  const int64_t piece_length = (count + pieces - 1) / pieces;
  const int64_t last_length = count - (pieces - 1) * piece_length;
  if (primitives_for(dtype, tanh_approximation, piece_length) == nullptr ||
      primitives_for(dtype, tanh_approximation, last_length) == nullptr) {
    return false;
  }
  parallel_for(0, pieces, 1, [&](int64_t first, int64_t last) {
    const OneOpenMPThread one_openmp_thread;
    for (int64_t piece = first; piece < last; ++piece) {
      const int64_t offset = piece * piece_length;
      const int64_t length = std::min(piece_length, count - offset);
      const GeluPrimitives* primitives = primitives_for(dtype, tanh_approximation, length);
      // Pieces may already be written (in place, too): failing here cannot fall back.
      if (primitives == nullptr)
        throw std::runtime_error("oneDNN gelu: no primitive on a kernel thread");
      try {
        run_piece(*primitives, offset);
      } catch (const dnnl::error& error) {
        throw std::runtime_error(std::string("oneDNN gelu failed: ") + error.what());
      }
    }
  });
  return true;
}

char* at_element(const void* base, int64_t offset, DType dtype) {
  return static_cast<char*>(const_cast<void*>(base)) +
         offset * static_cast<int64_t>(element_size(dtype));
}

}  // namespace

bool dnnl_gelu(void* out, const void* in, int64_t count, DType dtype, bool tanh_approximation) {
  return for_each_piece(
      dtype, tanh_approximation, count, [&](const GeluPrimitives& p, int64_t offset) {
        memory src(p.desc, dnnl_engine(), at_element(in, offset, dtype));
        memory dst(p.desc, dnnl_engine(), at_element(out, offset, dtype));
        p.forward.execute(dnnl_thread_stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
        dnnl_thread_stream().wait();
      });
}

bool dnnl_gelu_backward(void* grad_in, const void* grad_out, const void* in, int64_t count,
                        DType dtype, bool tanh_approximation) {
  return for_each_piece(
      dtype, tanh_approximation, count, [&](const GeluPrimitives& p, int64_t offset) {
        memory src(p.desc, dnnl_engine(), at_element(in, offset, dtype));
        memory diff_dst(p.desc, dnnl_engine(), at_element(grad_out, offset, dtype));
        memory diff_src(p.desc, dnnl_engine(), at_element(grad_in, offset, dtype));
        p.backward.execute(
            dnnl_thread_stream(),
            {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_SRC, diff_src}});
        dnnl_thread_stream().wait();
      });
}

}  // namespace openneuron::kernels
