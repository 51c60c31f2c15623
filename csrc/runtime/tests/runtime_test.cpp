#include "runtime/runtime.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include "runtime/device.h"
#include "runtime/errors.h"
#include "runtime/tests/test_helpers.h"

namespace openneuron::runtime {
namespace {

using testing::Gate;
using testing::OpenLater;
using testing::ScopedEnv;

constexpr uint64_t kMiB = uint64_t{1} << 20;

// The process-wide runtime. Whichever test gets here first initialises it from a known
// environment (two devices capped at 64 MiB), so the checks do not depend on the shell.
Runtime& test_runtime() {
  if (!Runtime::is_initialized()) {
    ScopedEnv devices("OPENNEURON_DEVICES", "2");
    ScopedEnv hbm("OPENNEURON_HBM_BYTES", "64M");
    ScopedEnv profile("OPENNEURON_PROFILE", std::nullopt);
    ScopedEnv blocking("OPENNEURON_LAUNCH_BLOCKING", std::nullopt);
    ScopedEnv strict("OPENNEURON_STRICT", std::nullopt);
    return Runtime::get();
  }
  return Runtime::get();
}

// The DeviceIndexError message check_device_index raises, or "" when it raises nothing.
std::string device_index_error(int index) {
  try {
    check_device_index(index);
  } catch (const DeviceIndexError& error) {
    return error.what();
  }
  return "";
}

// Runs `body` on a fresh thread and waits for it; thread-local state starts at its defaults.
template <typename Body>
void on_new_thread(Body body) {
  std::thread thread(body);
  thread.join();
}

TEST(RuntimeTest, ConfigurationComesFromTheEnvironment) {
  Runtime& runtime = test_runtime();
  EXPECT_TRUE(Runtime::is_initialized());
  EXPECT_FALSE(Runtime::in_bad_fork());
  EXPECT_EQ(runtime.device_count(), 2);
  EXPECT_EQ(Runtime::device_count_or_zero(), 2);
  EXPECT_EQ(runtime.config().device_memory_bytes, 64 * kMiB);
  EXPECT_EQ(runtime.config().profile.name, "trn2");
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(runtime.device(i).index(), i);
    EXPECT_EQ(runtime.device(i).allocator().capacity(), 64 * kMiB);
  }
}

TEST(RuntimeTest, IsInitialisedOnceAndIgnoresLaterEnvironmentChanges) {
  Runtime& first = test_runtime();
  ScopedEnv devices("OPENNEURON_DEVICES", "5");
  ScopedEnv hbm("OPENNEURON_HBM_BYTES", "not a size");
  EXPECT_EQ(&Runtime::get(), &first);
  EXPECT_EQ(Runtime::get().device_count(), 2);
  EXPECT_EQ(Runtime::device_count_or_zero(), 2);
}

TEST(RuntimeTest, CheckDeviceIndexNamesTheExistingDevices) {
  test_runtime();
  EXPECT_EQ(device_index_error(0), "");
  EXPECT_EQ(device_index_error(1), "");
  for (int bad : {2, -1, 64}) {
    std::string message = device_index_error(bad);
    EXPECT_NE(message.find("neuron:0, neuron:1"), std::string::npos) << message;
    EXPECT_NE(message.find(std::to_string(bad)), std::string::npos) << message;
    EXPECT_NE(message.find("OPENNEURON_DEVICES"), std::string::npos) << message;
  }
}

TEST(RuntimeTest, DeviceRejectsBadIndices) {
  Runtime& runtime = test_runtime();
  EXPECT_THROW(runtime.device(2), DeviceIndexError);
  EXPECT_THROW(runtime.device(-1), DeviceIndexError);
}

TEST(RuntimeTest, DeviceStreamsById) {
  Device& device = test_runtime().device(1);
  Stream& default_stream = device.default_stream();
  EXPECT_EQ(&device.stream(0), &default_stream);
  EXPECT_EQ(default_stream.id(), 0);
  EXPECT_EQ(default_stream.device(), 1);
  Stream& last = device.stream(Device::kPoolSize);
  EXPECT_EQ(last.id(), Device::kPoolSize);
  EXPECT_EQ(last.device(), 1);
  EXPECT_EQ(&device.stream(Device::kPoolSize), &last) << "a stream id names one stream";
  EXPECT_NE(&device.stream(5), &last);
  EXPECT_NE(&test_runtime().device(0).stream(5), &device.stream(5));

  for (int64_t bad : {int64_t{-1}, int64_t{Device::kPoolSize + 1}, int64_t{1} << 40}) {
    try {
      device.stream(bad);
      ADD_FAILURE() << "stream id " << bad << " was accepted";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find("0 to 32"), std::string::npos) << error.what();
      EXPECT_NE(std::string(error.what()).find("neuron:1"), std::string::npos) << error.what();
    }
  }
}

TEST(RuntimeTest, PoolStreamsCycleThroughEveryPoolId) {
  Device& device = test_runtime().device(0);
  std::set<int64_t> ids;
  for (int i = 0; i < Device::kPoolSize; ++i) {
    Stream& stream = device.next_pool_stream();
    EXPECT_GE(stream.id(), 1);
    EXPECT_LE(stream.id(), Device::kPoolSize);
    ids.insert(stream.id());
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(Device::kPoolSize));
}

TEST(RuntimeTest, CurrentDeviceIsThreadLocal) {
  test_runtime();
  ASSERT_EQ(current_device(), 0);
  on_new_thread([] {
    set_current_device(1);
    EXPECT_EQ(current_device(), 1);
  });
  EXPECT_EQ(current_device(), 0) << "another thread's set_current_device leaked into this one";

  set_current_device(1);
  on_new_thread([] { EXPECT_EQ(current_device(), 0) << "a new thread starts on device 0"; });
  EXPECT_THROW(set_current_device(2), DeviceIndexError);
  EXPECT_EQ(current_device(), 1) << "a rejected index must not change the current device";
  set_current_device(0);
}

TEST(RuntimeTest, CurrentStreamIsThreadLocalPerDevice) {
  Runtime& runtime = test_runtime();
  Stream& default_one = runtime.device(1).default_stream();
  Stream& pool_one = runtime.device(1).stream(5);
  EXPECT_EQ(&current_stream(1), &default_one);

  on_new_thread([&] {
    set_current_stream(pool_one);
    EXPECT_EQ(&current_stream(1), &pool_one);
    EXPECT_EQ(&current_stream(0), &runtime.device(0).default_stream()) << "only device 1 changed";
  });
  EXPECT_EQ(&current_stream(1), &default_one) << "another thread's stream leaked into this one";

  set_current_stream(pool_one);
  EXPECT_EQ(&current_stream(1), &pool_one);
  on_new_thread([&] { EXPECT_EQ(&current_stream(1), &default_one); });
  set_current_stream(default_one);
  EXPECT_EQ(&current_stream(1), &default_one);
  EXPECT_THROW(current_stream(2), DeviceIndexError);
}

TEST(RuntimeTest, SynchronizeAllWaitsForEveryDevice) {
  Runtime& runtime = test_runtime();
  Gate gate;
  std::atomic<bool> done{false};
  runtime.device(1).stream(7).enqueue("gated", gate.waiter());
  runtime.device(1).stream(7).enqueue("finish", [&] { done = true; });
  {
    OpenLater opener(gate);
    runtime.synchronize_all();
    EXPECT_TRUE(done);
  }
}

TEST(RuntimeTest, DeviceSynchronizeRaisesAQueuedErrorFromAnyStream) {
  RuntimeConfig config;
  config.device_memory_bytes = 16 * kMiB;
  Device device(0, config);
  std::atomic<bool> other_stream_done{false};
  Gate gate;
  device.stream(3).enqueue("failing_op", [] { throw std::runtime_error("bad kernel"); });
  device.stream(9).enqueue("gated", gate.waiter());
  device.stream(9).enqueue("finish", [&] { other_stream_done = true; });
  {
    OpenLater opener(gate);
    try {
      device.synchronize();
      ADD_FAILURE() << "the queued failure was not raised";
    } catch (const QueuedWorkError& error) {
      EXPECT_NE(std::string(error.what()).find("failing_op"), std::string::npos) << error.what();
    }
    EXPECT_TRUE(other_stream_done) << "device synchronize returned before every stream was idle";
  }
  EXPECT_NO_THROW(device.synchronize()) << "the error was raised twice";
  EXPECT_EQ(device.allocator().capacity(), 16 * kMiB);
}

TEST(RuntimeTest, LaunchBlockingDeviceRunsWorkInline) {
  RuntimeConfig config;
  config.device_memory_bytes = kMiB;
  config.launch_blocking = true;
  Device device(0, config);
  int value = 0;
  device.stream(2).enqueue("inline", [&] { value = 1; });
  EXPECT_EQ(value, 1);
  EXPECT_THROW(
      device.default_stream().enqueue("inline_failure", [] { throw std::runtime_error("x"); }),
      QueuedWorkError);
}

// Exit codes of the forked child: one bit per failed check.
enum ChildFailure {
  kNotMarkedBadFork = 1,
  kStillInitialised = 2,
  kGetSucceeded = 4,
  kMessageLacksSpawn = 8,
  kWrongException = 16,
};

TEST(RuntimeTest, ForkedChildCannotUseTheRuntime) {
  test_runtime();
  pid_t child = fork();
  ASSERT_GE(child, 0) << std::strerror(errno);
  if (child == 0) {
    // In the child: no gtest assertions, just an exit code for the parent to check.
    int failures = 0;
    if (!Runtime::in_bad_fork()) failures |= kNotMarkedBadFork;
    if (Runtime::is_initialized()) failures |= kStillInitialised;
    try {
      Runtime::get();
      failures |= kGetSucceeded;
    } catch (const ForkedChildError& error) {
      if (!std::strstr(error.what(), "spawn")) failures |= kMessageLacksSpawn;
    } catch (...) {
      failures |= kWrongException;
    }
    _exit(failures);
  }

  int status = 0;
  pid_t waited = 0;
  auto deadline = std::chrono::steady_clock::now() + testing::kWaitLimit;
  while ((waited = waitpid(child, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (waited == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    FAIL() << "the forked child hung";
  }
  ASSERT_EQ(waited, child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child did not exit normally, status " << status;
  int failures = WEXITSTATUS(status);
  EXPECT_EQ(failures & kNotMarkedBadFork, 0) << "in_bad_fork() was false in the child";
  EXPECT_EQ(failures & kStillInitialised, 0) << "is_initialized() was true in the child";
  EXPECT_EQ(failures & kGetSucceeded, 0) << "Runtime::get() worked in the child";
  EXPECT_EQ(failures & kMessageLacksSpawn, 0)
      << "the ForkedChildError message does not mention spawn";
  EXPECT_EQ(failures & kWrongException, 0)
      << "Runtime::get() threw something else than ForkedChildError";

  // The parent is unaffected.
  EXPECT_FALSE(Runtime::in_bad_fork());
  EXPECT_TRUE(Runtime::is_initialized());
  EXPECT_EQ(Runtime::get().device_count(), 2);
}

}  // namespace
}  // namespace openneuron::runtime
