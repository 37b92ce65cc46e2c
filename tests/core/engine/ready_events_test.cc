// ReadyEvents over the fake GPU runtime: one stream wait per framework stream, on the last
// event recorded there; events pooled, not created per tensor; none leaked.
#include "core/engine/ready_events.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/support/fake_device_runtime.h"

namespace hora {
namespace engine {
namespace {

using test_support::FakeDeviceRuntime;

DeviceStream stream(uintptr_t handle) { return reinterpret_cast<DeviceStream>(handle); }
const DeviceStream kEngine = stream(0x1000);

ReadyEvents::Ready take(ReadyEvents& ready, const std::string& name) {
  ReadyEvents::Ready r;
  EXPECT_TRUE(ready.take(name, &r)) << name;
  return r;
}

TEST(ReadyEvents, WaitsOncePerStreamForItsLastRecord) {
  FakeDeviceRuntime rt(1);
  {
    ReadyEvents ready(&rt);
    const DeviceStream a = stream(0x100), b = stream(0x200);
    ASSERT_TRUE(ready.record("a1", 0, a).ok());
    ASSERT_TRUE(ready.record("b1", 0, b).ok());
    ASSERT_TRUE(ready.record("a2", 0, a).ok());
    ASSERT_TRUE(ready.record("a3", 0, a).ok());
    // Taken out of order: the wait still picks each stream's last record.
    std::vector<ReadyEvents::Ready> events = {take(ready, "a3"), take(ready, "a1"),
                                              take(ready, "b1"), take(ready, "a2")};
    const DeviceEvent a3 = events[0].event.get(), b1 = events[2].event.get();
    StatusOr<int> waits = ready.wait(0, kEngine, events);
    ASSERT_TRUE(waits.ok()) << waits.status().to_string();
    EXPECT_EQ(waits.value(), 2);
    const auto seen = rt.stream_waits();
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[0].stream, kEngine);
    EXPECT_EQ(seen[0].event, a3);
    EXPECT_EQ(seen[1].event, b1);
    EXPECT_EQ(rt.recorded_on(a3), a);
    EXPECT_EQ(rt.recorded_on(b1), b);
  }
  EXPECT_EQ(rt.live_events(), 0);
}

TEST(ReadyEvents, PerThreadDefaultStreamEventsAreEachWaitedFor) {
  FakeDeviceRuntime rt(1);
  ReadyEvents ready(&rt);
  const DeviceStream per_thread = stream(0x2);  // cudaStreamPerThread: one stream per thread
  ASSERT_TRUE(ready.record("x", 0, per_thread).ok());
  ASSERT_TRUE(ready.record("y", 0, per_thread).ok());
  StatusOr<int> waits = ready.wait(0, kEngine, {take(ready, "x"), take(ready, "y")});
  ASSERT_TRUE(waits.ok());
  EXPECT_EQ(waits.value(), 2);
}

TEST(ReadyEvents, EventsArePooledAcrossSteps) {
  FakeDeviceRuntime rt(1);
  {
    ReadyEvents ready(&rt);
    for (int step = 0; step < 5; ++step) {
      std::vector<ReadyEvents::Ready> events;
      for (int t = 0; t < 50; ++t) {
        const std::string name = "g" + std::to_string(t);
        ASSERT_TRUE(ready.record(name, 0, stream(0x100)).ok());
        events.push_back(take(ready, name));
      }
      ASSERT_TRUE(ready.wait(0, kEngine, events).ok());
    }
    EXPECT_EQ(rt.count("create_event"), 50);  // the first step's, reused by the next four
    EXPECT_EQ(rt.count("stream_wait_event"), 5);
  }
  EXPECT_EQ(rt.live_events(), 0);
}

TEST(ReadyEvents, ARecordReplacesTheNamesEarlierEventAndTakeEmpties) {
  FakeDeviceRuntime rt(1);
  ReadyEvents ready(&rt);
  ASSERT_TRUE(ready.record("t", 0, stream(0x100)).ok());
  ASSERT_TRUE(ready.record("t", 0, stream(0x100)).ok());
  ReadyEvents::Ready r = take(ready, "t");
  EXPECT_EQ(r.seq, 2u);
  EXPECT_FALSE(ready.take("t", &r));
  EXPECT_FALSE(ready.take("never", &r));
}

TEST(ReadyEvents, ARecordOnAMissingDeviceFailsNamingIt) {
  FakeDeviceRuntime rt(1);
  ReadyEvents ready(&rt);
  Status s = ready.record("t", 3, stream(0x100));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("3"), std::string::npos) << s.to_string();
}

}  // namespace
}  // namespace engine
}  // namespace hora
