#include "runtime/host_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

namespace openneuron::runtime {
namespace {

using std::chrono::milliseconds;

TEST(HostSamplerTest, StoppingWithoutStartingGivesNothing) {
  HostSampler sampler;
  EXPECT_TRUE(sampler.stop().empty());
}

TEST(HostSamplerTest, SamplesAtItsPeriodInTimeOrderWithTheDeviceBytes) {
  HostSampler sampler;
  sampler.start(milliseconds(5), [] { return int64_t{4096}; });
  std::this_thread::sleep_for(milliseconds(60));
  std::vector<HostSample> samples = sampler.stop();
  ASSERT_GE(samples.size(), 4u);
  // One per 5 ms over 60 ms and a last one at stop; a loaded host may wake late, not often.
  ASSERT_LE(samples.size(), 14u + 2u);
  for (size_t i = 1; i < samples.size(); ++i) EXPECT_GE(samples[i].time_ns, samples[i - 1].time_ns);
  for (const HostSample& s : samples) {
    EXPECT_EQ(s.device_allocated_bytes, 4096);
    EXPECT_GT(s.resident_bytes, 0);
    EXPECT_GE(s.system_cpu_percent, 0.0);
    EXPECT_LE(s.system_cpu_percent, 100.0);
  }
}

TEST(HostSamplerTest, SeesThisProcessKeepingACoreBusy) {
  HostSampler sampler;
  sampler.start(milliseconds(20), nullptr);
  auto end = std::chrono::steady_clock::now() + milliseconds(120);
  volatile uint64_t spins = 0;
  while (std::chrono::steady_clock::now() < end) spins = spins + 1;
  std::vector<HostSample> samples = sampler.stop();
  ASSERT_FALSE(samples.empty());
  double busiest = 0;
  for (const HostSample& s : samples) busiest = std::max(busiest, s.process_cpu_percent);
  // One spinning thread is 100% of a core; leave room for a loaded machine's preemption.
  EXPECT_GT(busiest, 25.0);
  EXPECT_EQ(samples.back().device_allocated_bytes, 0);
}

}  // namespace
}  // namespace openneuron::runtime
