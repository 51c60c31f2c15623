// Per-op counts of what ran on the device: natively, or through the host fallback.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>

namespace openneuron::bridge {

// A counter for one native kernel, registered under `op_name` (e.g. "aten::add.Tensor").
// Declared once per kernel as a function-local static; hit() is one relaxed atomic add.
class NativeOpCounter {
 public:
  explicit NativeOpCounter(const char* op_name);
  void hit() { count_.fetch_add(1, std::memory_order_relaxed); }
  int64_t count() const { return count_.load(std::memory_order_relaxed); }
  void reset() { count_.store(0, std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> count_{0};
};

// Counts a host-fallback run of `op_name`; returns true the first time this op falls back
// in the process (so the caller warns once per op).
bool record_fallback(const std::string& op_name);

// Records that a host-fallback run of `op_name` computed `from_dtype` inputs at `to_dtype`
// because the CPU kernel lacks `from_dtype` (dtype names as torch prints them).
void record_widened_fallback(const std::string& op_name, const std::string& from_dtype,
                             const std::string& to_dtype);

// Ops that ran on the device (native and fallback), with run counts since the last clear.
std::map<std::string, int64_t> executed_ops();
// Ops that ran through the host fallback, with run counts since the last clear.
std::map<std::string, int64_t> fallback_ops();
// Per op, each dtype the host fallback widened and what to, since the last clear.
std::map<std::string, std::map<std::string, std::string>> widened_fallbacks();
// Forgets the counts (the warn-once memory is kept).
void clear_op_tracking();

}  // namespace openneuron::bridge

// Counts one run of the enclosing native kernel under `name`.
#define OPENNEURON_NATIVE_OP(name)                                        \
  static ::openneuron::bridge::NativeOpCounter native_op_counter__(name); \
  native_op_counter__.hit()
