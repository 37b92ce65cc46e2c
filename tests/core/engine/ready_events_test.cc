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

ReadyEvents::Ready record(ReadyEvents& ready, DeviceStream s) {
  StatusOr<ReadyEvents::Ready> r = ready.record(0, s);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? std::move(r).value() : ReadyEvents::Ready();
}

TEST(ReadyEvents, WaitsOncePerStreamForItsLastRecord) {
  FakeDeviceRuntime rt(1);
  {
    ReadyEvents ready(&rt);
    const DeviceStream a = stream(0x100), b = stream(0x200);
    ReadyEvents::Ready r_a1 = record(ready, a), r_b1 = record(ready, b), r_a2 = record(ready, a),
                       r_a3 = record(ready, a);
    // Listed out of order: the wait still picks each stream's last record.
    std::vector<ReadyEvents::Ready> events = {r_a3, r_a1, r_b1, r_a2};
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
  StatusOr<int> waits =
      ready.wait(0, kEngine, {record(ready, per_thread), record(ready, per_thread)});
  ASSERT_TRUE(waits.ok());
  EXPECT_EQ(waits.value(), 2);
}

TEST(ReadyEvents, EventsArePooledAcrossSteps) {
  FakeDeviceRuntime rt(1);
  {
    ReadyEvents ready(&rt);
    for (int step = 0; step < 5; ++step) {
      std::vector<ReadyEvents::Ready> events;
      for (int t = 0; t < 50; ++t) events.push_back(record(ready, stream(0x100)));
      ASSERT_TRUE(ready.wait(0, kEngine, events).ok());
    }
    EXPECT_EQ(rt.count("create_event"), 50);  // the first step's, reused by the next four
    EXPECT_EQ(rt.count("stream_wait_event"), 5);
  }
  EXPECT_EQ(rt.live_events(), 0);
}

TEST(ReadyEvents, RecordsAreNumberedInOrder) {
  FakeDeviceRuntime rt(1);
  ReadyEvents ready(&rt);
  ReadyEvents::Ready first = record(ready, stream(0x100)), second = record(ready, stream(0x100));
  EXPECT_EQ(first.seq, 1u);
  EXPECT_EQ(second.seq, 2u);
  EXPECT_NE(first.event.get(), second.event.get());
}

TEST(ReadyEvents, ARecordOnAMissingDeviceFailsNamingIt) {
  FakeDeviceRuntime rt(1);
  ReadyEvents ready(&rt);
  Status s = ready.record(3, stream(0x100)).status();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("3"), std::string::npos) << s.to_string();
}

}  // namespace
}  // namespace engine
}  // namespace hora
