#include "runtime/profile_settings.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace openneuron::runtime {
namespace {

TEST(ProfileSettingsTest, AnEmptyConfigRecordsDeviceAndRuntimeActivityOnEveryCore) {
  ProfileSettings settings = parse_profile_settings("");
  EXPECT_TRUE(settings.device);
  EXPECT_TRUE(settings.runtime);
  EXPECT_FALSE(settings.cpu_util);
  EXPECT_FALSE(settings.host_memory);
  EXPECT_TRUE(settings.cores.empty());
  EXPECT_LT(settings.max_events_per_core, 0);
}

TEST(ProfileSettingsTest, ReadsEveryKeyWhateverTheCase) {
  ProfileSettings settings = parse_profile_settings(
      "MODES:cpu_util,Host_Memory; max_events_per_nc:7;capture_enabled_for_nc:0,2-4;"
      "profile_output_dir:/x/y;neff_cache_dir:c;precache_node_info:false;sample_period_ms:5");
  EXPECT_FALSE(settings.device);
  EXPECT_FALSE(settings.runtime);
  EXPECT_FALSE(settings.records_activities());
  EXPECT_TRUE(settings.cpu_util);
  EXPECT_TRUE(settings.host_memory);
  EXPECT_EQ(settings.max_events_per_core, 7);
  EXPECT_EQ(settings.cores, (std::set<int>{0, 2, 3, 4}));
  EXPECT_EQ(settings.output_dir, "/x/y");
  EXPECT_EQ(settings.neff_cache_dir, "c");
  EXPECT_FALSE(settings.precache_node_info);
  EXPECT_EQ(settings.sample_period_ms, 5);
}

TEST(ProfileSettingsTest, RefusesWhatItCannotReadNamingTheItem) {
  for (const char* bad : {"modes", "modes:device,gpu", "max_events_per_nc:many",
                          "capture_enabled_for_nc:3-1", "capture_enabled_for_nc:0,,1",
                          "colour:blue", "precache_node_info:maybe", "sample_period_ms:0"}) {
    try {
      parse_profile_settings(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find("profiler config"), std::string::npos) << bad;
    }
  }
}

Activity activity(int device, int64_t start_ns) {
  return Activity{"op", ActivityKind::kKernel, device, 0, 0, start_ns, start_ns + 1, 0};
}

TEST(ProfileSettingsTest, KeepsTheSelectedCoresAndTheEarliestEventsOfEach) {
  std::vector<Activity> recorded = {activity(0, 30), activity(1, 5),  activity(0, 10),
                                    activity(2, 1),  activity(0, 20), activity(1, 50)};
  ProfileSettings settings =
      parse_profile_settings("capture_enabled_for_nc:0-1;max_events_per_nc:2");
  std::vector<Activity> kept = select_activities(recorded, settings);
  ASSERT_EQ(kept.size(), 4u);
  // In recorded order: core 0's two earliest (10, 20), core 1's two (5, 50); core 2 dropped.
  EXPECT_EQ(kept[0].start_ns, 5);
  EXPECT_EQ(kept[1].start_ns, 10);
  EXPECT_EQ(kept[2].start_ns, 20);
  EXPECT_EQ(kept[3].start_ns, 50);
  EXPECT_EQ(select_activities(recorded, ProfileSettings{}).size(), recorded.size());
}

}  // namespace
}  // namespace openneuron::runtime
