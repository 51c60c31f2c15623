// Host-side scan of index tensors for out-of-range values (see index_bounds.h).
#include "aten/ops/shape/index_bounds.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include "aten/core/host_access.h"
#include "aten/core/runtime_errors.h"
#include "aten/core/tensor_views.h"
#include "kernels/shape/indexing.h"

namespace openneuron::bridge {

namespace {

std::atomic<bool>& deferred_checks() {
  static std::atomic<bool> deferred{[] {
    const char* value = std::getenv("OPENNEURON_DEFERRED_INDEX_CHECKS");
    if (value == nullptr || std::string(value) == "0" || std::string(value).empty()) return false;
    TORCH_CHECK(std::string(value) == "1", "OPENNEURON_DEFERRED_INDEX_CHECKS must be 0 or 1, got '",
                value, "'");
    return true;
  }()};
  return deferred;
}

}  // namespace

bool set_deferred_index_checks(bool deferred) { return deferred_checks().exchange(deferred); }

std::optional<int64_t> first_index_outside(const at::Tensor& index, int64_t lo, int64_t hi,
                                           std::optional<int64_t> skip) {
  if (index.numel() == 0) return std::nullopt;
  if (index.is_privateuseone() && deferred_checks().load(std::memory_order_relaxed)) {
    return std::nullopt;
  }
  const at::Tensor readable = readable_on_host(index);
  const int64_t* skipped = skip.has_value() ? &*skip : nullptr;
  int64_t found = 0;
  if (kernels::find_index_outside(view_of(readable), lo, hi, skipped, &found)) return found;
  return std::nullopt;
}

}  // namespace openneuron::bridge
