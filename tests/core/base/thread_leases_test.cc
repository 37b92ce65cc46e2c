// The threads' leases (core/base/thread_leases.h): a resource retired while threads lease it
// on every call is freed only once no thread can still touch it (ASan in CI sees a use after
// free otherwise), with the process's fence mode (membarrier where the kernel has it) and with
// full fences (in a child process: the mode is decided once per process); drain() waits for
// a lease held before it began and gives up at its deadline; leases nest.
#include "core/base/thread_leases.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

namespace hora {
namespace {

using Clock = std::chrono::steady_clock;

struct Resource {
  static constexpr uint64_t kAlive = 0x600dcafe;
  std::atomic<uint64_t> magic{kAlive};
};

// Readers lease `current` in a loop and check what they see is alive, while the main thread
// retires and frees one resource after another (a new one published each time). Returns the
// number of reads of a retired resource (must be 0).
int retire_while_leased(int readers, int cycles) {
  std::atomic<Resource*> current{new Resource()};
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::atomic<long> reads{0};
  std::vector<std::thread> threads;
  threads.reserve(readers);
  for (int t = 0; t < readers; ++t) {
    threads.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        thread_leases::enter();
        if (Resource* r = current.load(std::memory_order_seq_cst)) {
          // Held for a while (reads at its start and end), so that a drain that did not wait
          // for it would be seen retiring the resource in between.
          for (int i = 0; i < 200; ++i)
            if (r->magic.load(std::memory_order_relaxed) != Resource::kAlive) bad.fetch_add(1);
          reads.fetch_add(1, std::memory_order_relaxed);
        }
        thread_leases::leave();
      }
    });
  }
  for (int c = 0; c < cycles; ++c) {
    const long before = reads.load();
    while (reads.load() < before + 50) std::this_thread::yield();  // readers are in their loop
    Resource* old = current.exchange(nullptr, std::memory_order_seq_cst);
    EXPECT_TRUE(thread_leases::drain(Clock::now() + std::chrono::seconds(60)).ok());
    old->magic.store(0, std::memory_order_relaxed);
    delete old;
    current.store(new Resource(), std::memory_order_seq_cst);
  }
  stop.store(true);
  for (std::thread& t : threads) t.join();
  delete current.load();
  return bad.load();
}

TEST(ThreadLeases, RetiredResourceIsNeverReadAfterDrain) {
  EXPECT_EQ(retire_while_leased(2, 200), 0)
      << (thread_leases::asymmetric() ? "membarrier mode" : "full-fence mode");
}

TEST(ThreadLeases, FullFenceModeInAChildProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (!thread_leases::force_full_fence_for_testing() || thread_leases::asymmetric())
          std::_Exit(2);
        std::_Exit(retire_while_leased(2, 200) == 0 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// A thread that holds a lease (taken `depth` times, given back all but one at once) from its
// start until release(); the constructor returns once it holds it.
class LeaseHolder {
 public:
  explicit LeaseHolder(int depth) {
    thread_ = std::thread([this, depth] {
      for (int i = 0; i < depth; ++i) thread_leases::enter();
      for (int i = 1; i < depth; ++i) thread_leases::leave();
      held_.store(true);
      while (!release_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      thread_leases::leave();
    });
    while (!held_.load()) std::this_thread::yield();
  }
  ~LeaseHolder() {
    release();
    thread_.join();
  }
  LeaseHolder(const LeaseHolder&) = delete;
  LeaseHolder& operator=(const LeaseHolder&) = delete;
  void release() { release_.store(true); }

 private:
  std::atomic<bool> held_{false}, release_{false};
  std::thread thread_;
};

TEST(ThreadLeases, DrainWaitsForALeaseHeldBeforeItAndGivesUpAtItsDeadline) {
  {
    LeaseHolder holder(2);  // nested: returned only by the second leave
    const auto t0 = Clock::now();
    EXPECT_EQ(thread_leases::drain(Clock::now() + std::chrono::milliseconds(50)).code(),
              StatusCode::kTimeout);
    EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(50));
    std::thread releaser([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      holder.release();
    });
    const auto t1 = Clock::now();
    EXPECT_TRUE(thread_leases::drain(Clock::now() + std::chrono::seconds(60)).ok());
    EXPECT_GE(Clock::now() - t1, std::chrono::milliseconds(90));
    releaser.join();
  }
  EXPECT_TRUE(thread_leases::drain(Clock::now()).ok());  // nothing held: at once
}

TEST(ThreadLeases, AThreadThatExitedHoldsNothing) {
  for (int i = 0; i < 20; ++i) {
    std::thread([] {
      thread_leases::enter();
      thread_leases::leave();
    }).join();
  }
  EXPECT_TRUE(thread_leases::drain(Clock::now()).ok());
}

// A child forked while another thread holds a lease has only the forking thread: its drain
// does not wait for the other thread's lease (it does not exist there), and leases and drains
// work there in the parent's mode (membarrier registered anew where the parent used it).
TEST(ThreadLeases, AForkedChildDrainsWithoutTheParentsOtherThreads) {
  thread_leases::enter();  // this thread's slot exists in the child
  thread_leases::leave();
  LeaseHolder holder(1);
  const bool asymmetric = thread_leases::asymmetric();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // no threads started here: ThreadSanitizer does not support that
    const bool drained = thread_leases::drain(Clock::now() + std::chrono::seconds(5)).ok();
    const bool mode_kept = thread_leases::asymmetric() == asymmetric;
    thread_leases::enter();
    thread_leases::leave();
    // A drain runs membarrier in the asymmetric mode: it fails unless the child registered.
    const bool again = thread_leases::drain(Clock::now() + std::chrono::seconds(5)).ok();
    std::_Exit(!drained ? 1 : !mode_kept ? 2 : !again ? 3 : 0);
  }
  int status = -1;
  const auto until = Clock::now() + std::chrono::seconds(120);
  while (waitpid(child, &status, WNOHANG) == 0) {
    if (Clock::now() >= until) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(WIFEXITED(status)) << "the child did not exit in 120 s (status " << status << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "1: drain waited for a thread the child does not have; 2: the fence mode changed; 3: "
         "a drain after a lease failed";
}

}  // namespace
}  // namespace hora
