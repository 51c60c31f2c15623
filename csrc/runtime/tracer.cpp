#include "runtime/tracer.h"

#include <mutex>

namespace openneuron::runtime::tracer {

namespace detail {
std::atomic<bool> g_enabled{false};
}

namespace {
std::mutex g_mutex;
std::vector<Activity> g_activities;
thread_local uint64_t t_correlation = 0;
}  // namespace

void start() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_activities.clear();
  detail::g_enabled.store(true, std::memory_order_release);
}

std::vector<Activity> stop() {
  std::lock_guard<std::mutex> lock(g_mutex);
  detail::g_enabled.store(false, std::memory_order_release);
  std::vector<Activity> result;
  result.swap(g_activities);
  return result;
}

void set_correlation(uint64_t id) { t_correlation = id; }

uint64_t current_correlation() { return t_correlation; }

void record(const Activity& activity) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!detail::g_enabled.load(std::memory_order_relaxed)) return;
  g_activities.push_back(activity);
}

}  // namespace openneuron::runtime::tracer
