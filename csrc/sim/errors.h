// The error every rule violation raises: it names the rule and the kernel's source line.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace openneuron::sim {

// Rule names, stable: tests and the Python front end match on them.
namespace rule {
inline constexpr const char* kPartitionLimit = "partition-limit";
inline constexpr const char* kPartitionAlignment = "partition-alignment";
inline constexpr const char* kPartitionStride = "partition-stride";
inline constexpr const char* kOutOfBounds = "out-of-bounds";
inline constexpr const char* kShapeMismatch = "shape-mismatch";
inline constexpr const char* kMatmulLimits = "matmul-limits";
inline constexpr const char* kMatmulPlacement = "matmul-placement";
inline constexpr const char* kPsumBank = "psum-bank";
inline constexpr const char* kSbufCapacity = "sbuf-capacity";
inline constexpr const char* kPsumCapacity = "psum-capacity";
inline constexpr const char* kDtype = "dtype";
inline constexpr const char* kPsumAccess = "psum-access";
inline constexpr const char* kPsumBothInputs = "psum-both-inputs";
inline constexpr const char* kHbmAccess = "hbm-access";
inline constexpr const char* kUninitializedRead = "uninitialized-read";
inline constexpr const char* kBadOperand = "bad-operand";
}  // namespace rule

class SimError : public std::runtime_error {
 public:
  SimError(std::string rule_name, const std::string& message, const std::string& source,
           int32_t line)
      : std::runtime_error(source + ":" + std::to_string(line) + ": [" + rule_name + "] " +
                           message),
        rule(std::move(rule_name)),
        line(line),
        detail(message) {}
  std::string rule;
  int32_t line;
  std::string detail;
};

}  // namespace openneuron::sim
