#include "aten/core/op_tracking.h"

#include <mutex>
#include <set>
#include <vector>

namespace openneuron::bridge {

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<std::pair<std::string, NativeOpCounter*>> native;
  std::map<std::string, int64_t> fallback;
  std::map<std::string, std::map<std::string, std::string>> widened;
  std::set<std::string> warned;
};

Registry& registry() {
  static auto* instance = new Registry();
  return *instance;
}

}  // namespace

NativeOpCounter::NativeOpCounter(const char* op_name) {
  auto& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  reg.native.emplace_back(op_name, this);
}

bool record_fallback(const std::string& op_name) {
  auto& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  ++reg.fallback[op_name];
  return reg.warned.insert(op_name).second;
}

void record_widened_fallback(const std::string& op_name, const std::string& from_dtype,
                             const std::string& to_dtype) {
  auto& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  reg.widened[op_name][from_dtype] = to_dtype;
}

std::map<std::string, std::map<std::string, std::string>> widened_fallbacks() {
  auto& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  return reg.widened;
}

std::map<std::string, int64_t> fallback_ops() {
  auto& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  return reg.fallback;
}

std::map<std::string, int64_t> executed_ops() {
  auto& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  std::map<std::string, int64_t> result = reg.fallback;
  for (auto& [name, counter] : reg.native) {
    if (counter->count() > 0) result[name] += counter->count();
  }
  return result;
}

void clear_op_tracking() {
  auto& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  reg.fallback.clear();
  reg.widened.clear();
  for (auto& [name, counter] : reg.native) counter->reset();
}

}  // namespace openneuron::bridge
