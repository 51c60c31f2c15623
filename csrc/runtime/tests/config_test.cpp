#include "runtime/config.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/device_profile.h"
#include "runtime/errors.h"
#include "runtime/tests/test_helpers.h"

namespace openneuron::runtime {
namespace {

using testing::ScopedEnv;

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kMiB = uint64_t{1} << 20;

// Every test starts from an environment with no OPENNEURON_* variable set, whatever the shell
// running the suite exported, and gets the original values back afterwards.
class ConfigTest : public ::testing::Test {
 protected:
  ConfigTest() {
    for (const char* name : {"OPENNEURON_DEVICES", "OPENNEURON_PROFILE", "OPENNEURON_HBM_BYTES",
                             "OPENNEURON_LAUNCH_BLOCKING", "OPENNEURON_STRICT"}) {
      cleared_.push_back(std::make_unique<ScopedEnv>(name, std::nullopt));
    }
  }

  // Sets `name` for the rest of the test (restored by the fixture's cleared_ entry).
  static void set(const char* name, const std::string& value) { setenv(name, value.c_str(), 1); }

  // The ConfigError message for `name`=`value`; fails the test when nothing is thrown.
  static std::string config_error_for(const char* name, const std::string& value) {
    set(name, value);
    try {
      config_from_environment();
    } catch (const ConfigError& error) {
      return error.what();
    }
    ADD_FAILURE() << name << "='" << value << "' was accepted";
    return "";
  }

 private:
  std::vector<std::unique_ptr<ScopedEnv>> cleared_;
};

TEST_F(ConfigTest, DefaultsAreTwoTrn2DevicesWith24GiB) {
  RuntimeConfig config = config_from_environment();
  EXPECT_EQ(config.device_count, 2);
  EXPECT_EQ(config.profile.name, "trn2");
  EXPECT_EQ(config.profile.hbm_bytes, 24 * kGiB);
  EXPECT_EQ(config.device_memory_bytes, 24 * kGiB);
  EXPECT_FALSE(config.launch_blocking);
  EXPECT_FALSE(config.strict);
}

TEST_F(ConfigTest, EmptyVariablesCountAsUnset) {
  set("OPENNEURON_DEVICES", "");
  set("OPENNEURON_PROFILE", "");
  set("OPENNEURON_HBM_BYTES", "");
  RuntimeConfig config = config_from_environment();
  EXPECT_EQ(config.device_count, 2);
  EXPECT_EQ(config.profile.name, "trn2");
  EXPECT_EQ(config.device_memory_bytes, 24 * kGiB);
}

TEST_F(ConfigTest, DevicesAcceptsOneToSixtyFour) {
  for (const auto& [text, expected] :
       std::vector<std::pair<std::string, int>>{{"1", 1}, {"8", 8}, {"64", 64}, {"007", 7}}) {
    set("OPENNEURON_DEVICES", text);
    EXPECT_EQ(config_from_environment().device_count, expected) << "OPENNEURON_DEVICES=" << text;
  }
}

TEST_F(ConfigTest, InvalidDevicesNamesVariableAndRange) {
  for (const std::string text : {"0", "65", "1000", "-1", "two", "2x", " 2", "1.5", "\xff"}) {
    std::string message = config_error_for("OPENNEURON_DEVICES", text);
    EXPECT_NE(message.find("OPENNEURON_DEVICES"), std::string::npos) << message;
    EXPECT_NE(message.find("1 to 64"), std::string::npos) << message;
  }
}

TEST_F(ConfigTest, Trn3ProfileHas36GiB) {
  set("OPENNEURON_PROFILE", "trn3");
  RuntimeConfig config = config_from_environment();
  EXPECT_EQ(config.profile.name, "trn3");
  EXPECT_EQ(config.profile.core_version, "v4");
  EXPECT_EQ(config.device_memory_bytes, 36 * kGiB);
}

TEST_F(ConfigTest, UnknownProfileNamesVariableAndAcceptedProfiles) {
  std::string message = config_error_for("OPENNEURON_PROFILE", "trn9");
  EXPECT_NE(message.find("OPENNEURON_PROFILE"), std::string::npos) << message;
  EXPECT_NE(message.find("trn9"), std::string::npos) << message;
  EXPECT_NE(message.find("trn2, trn3"), std::string::npos) << message;
}

TEST_F(ConfigTest, KnownProfilesListTrn2First) {
  const auto& profiles = known_profiles();
  ASSERT_EQ(profiles.size(), 2u);
  EXPECT_EQ(profiles[0].name, "trn2");
  EXPECT_EQ(&profile_by_name("trn3"), &profiles[1]);
}

TEST_F(ConfigTest, HbmBytesCapsTheProfileCapacity) {
  for (const auto& [text, expected] :
       std::vector<std::pair<std::string, uint64_t>>{{"512M", 512 * kMiB},
                                                     {"2G", 2 * kGiB},
                                                     {"1048576", kMiB},
                                                     {"64K", 64 * 1024},
                                                     {"512MB", 512 * kMiB},
                                                     {"2GiB", 2 * kGiB},
                                                     {"3g", 3 * kGiB},
                                                     {"4096B", 4096}}) {
    set("OPENNEURON_HBM_BYTES", text);
    EXPECT_EQ(config_from_environment().device_memory_bytes, expected)
        << "OPENNEURON_HBM_BYTES=" << text;
  }
}

TEST_F(ConfigTest, HbmBytesNeverRaisesTheProfileCapacity) {
  set("OPENNEURON_HBM_BYTES", "100G");
  EXPECT_EQ(config_from_environment().device_memory_bytes, 24 * kGiB);
  set("OPENNEURON_PROFILE", "trn3");
  EXPECT_EQ(config_from_environment().device_memory_bytes, 36 * kGiB);
  set("OPENNEURON_HBM_BYTES", "30G");
  EXPECT_EQ(config_from_environment().device_memory_bytes, 30 * kGiB);
  EXPECT_EQ(config_from_environment().profile.hbm_bytes,
            36 * kGiB);  // the profile itself is unchanged
}

TEST_F(ConfigTest, InvalidHbmBytesNamesVariableAndAcceptedForms) {
  // "16777216T" is 2^64 bytes: it must be rejected, not wrap around to a zero capacity.
  for (const std::string text :
       {"0", "0G", "-1", "G", "2X", "2 G", " 2G", "1.5G", "abc", "16777216T", "9999999999T"}) {
    std::string message = config_error_for("OPENNEURON_HBM_BYTES", text);
    EXPECT_NE(message.find("OPENNEURON_HBM_BYTES"), std::string::npos) << message;
    EXPECT_NE(message.find("512M"), std::string::npos) << message;
  }
}

TEST_F(ConfigTest, ParseByteSizeHandlesLargestValues) {
  EXPECT_EQ(parse_byte_size("16777215T", "X"), uint64_t{16777215} << 40);
  EXPECT_EQ(parse_byte_size("18446744073709551615", "X"), ~uint64_t{0});
  EXPECT_THROW(parse_byte_size("18446744073709551616", "X"), ConfigError);
  EXPECT_THROW(parse_byte_size("17179869184G", "X"), ConfigError);  // 2^34 GiB = 2^64
}

TEST_F(ConfigTest, LaunchBlockingAndStrictSwitches) {
  for (const std::string on : {"1", "true", "on", "yes"}) {
    set("OPENNEURON_LAUNCH_BLOCKING", on);
    set("OPENNEURON_STRICT", on);
    RuntimeConfig config = config_from_environment();
    EXPECT_TRUE(config.launch_blocking) << on;
    EXPECT_TRUE(config.strict) << on;
  }
  for (const std::string off : {"0", "false", "off", "no"}) {
    set("OPENNEURON_LAUNCH_BLOCKING", off);
    set("OPENNEURON_STRICT", off);
    RuntimeConfig config = config_from_environment();
    EXPECT_FALSE(config.launch_blocking) << off;
    EXPECT_FALSE(config.strict) << off;
  }
}

TEST_F(ConfigTest, SwitchesAreIndependent) {
  set("OPENNEURON_STRICT", "1");
  RuntimeConfig config = config_from_environment();
  EXPECT_TRUE(config.strict);
  EXPECT_FALSE(config.launch_blocking);
}

TEST_F(ConfigTest, InvalidSwitchNamesVariableAndAcceptedValues) {
  for (const char* variable : {"OPENNEURON_LAUNCH_BLOCKING", "OPENNEURON_STRICT"}) {
    std::string message = config_error_for(variable, "maybe");
    EXPECT_NE(message.find(variable), std::string::npos) << message;
    EXPECT_NE(message.find("maybe"), std::string::npos) << message;
    EXPECT_NE(message.find("1, 0"), std::string::npos) << message;
    unsetenv(variable);
  }
}

}  // namespace
}  // namespace openneuron::runtime
