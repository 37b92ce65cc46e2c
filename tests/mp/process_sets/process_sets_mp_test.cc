// Process sets under a real launcher (HORA_DYNAMIC_PROCESS_SETS=1): every collective on sets of
// every shape that fits the job, checked against values computed here; a name used in two sets
// at once; a set whose ranks are late does not hold back another; bad input gets a clear error
// and the job goes on; adding and removing a set many times leaks no file descriptor, shared
// memory mapping or memory. Every rank runs every test (mp_main.cc).
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "hora/gradient_reducer.h"
#include "hora/hora.h"

namespace hora {
namespace {

TensorView view(std::vector<float>& v, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  return TensorView::make(v.data(), DataType::kFloat32, shape).value();
}

bool contains(const std::vector<int>& ranks, int r) {
  return std::find(ranks.begin(), ranks.end(), r) != ranks.end();
}

// The shapes of set that fit a job of n ranks, without repeats or the whole job: {0}, the
// even ranks, the odd ranks, all but rank 0.
std::vector<std::vector<int>> shapes(int n) {
  std::vector<std::vector<int>> out;
  auto add = [&](std::vector<int> s) {
    if (s.empty() || static_cast<int>(s.size()) == n) return;
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  add({0});
  std::vector<int> even, odd, but_first;
  for (int r = 0; r < n; ++r) {
    (r % 2 == 0 ? even : odd).push_back(r);
    if (r > 0) but_first.push_back(r);
  }
  add(even);
  add(odd);
  add(but_first);
  return out;
}

std::vector<ProcessSet> add_all(const std::vector<std::vector<int>>& sets) {
  std::vector<ProcessSet> out;
  for (const auto& ranks : sets) {
    StatusOr<ProcessSet> set = add_process_set(ranks);
    EXPECT_TRUE(set.ok()) << set.status().to_string();
    if (set.ok()) out.push_back(set.value());
  }
  return out;
}

void remove_all(const std::vector<ProcessSet>& sets) {
  for (const ProcessSet& set : sets) EXPECT_TRUE(remove_process_set(set.id()).ok());
}

// Allreduce (sum and min), grouped allreduce, allgather, broadcast, alltoall, reducescatter,
// barrier and join on `set`, from one of its members.
void check_collectives(const ProcessSet& set) {
  const int k = set.size(), me = set.rank(), id = set.id();
  std::vector<float> x(5);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(rank() + 1) * (i + 1);
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  sum.process_set = id;
  ASSERT_TRUE(allreduce("t", view(x), view(x), sum).ok());
  int rank_sum = 0;
  for (int r : set.ranks()) rank_sum += r + 1;
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(x[i], static_cast<float>(rank_sum) * (i + 1));

  std::vector<float> a{static_cast<float>(rank())}, b{static_cast<float>(-rank())};
  AllreduceOptions min = sum;
  min.op = ReduceOp::kMin;
  ASSERT_TRUE(grouped_allreduce_async({"g.a", "g.b"}, {view(a), view(b)}, {view(a), view(b)}, min)
                  .wait()
                  .ok());
  EXPECT_EQ(a[0], static_cast<float>(set.ranks().front()));
  EXPECT_EQ(b[0], static_cast<float>(-set.ranks().back()));

  std::vector<float> rows(static_cast<size_t>(me + 1) * 2, static_cast<float>(rank()));
  auto gathered = allgather("t", view(rows, {me + 1, 2}), id);
  ASSERT_TRUE(gathered.ok()) << gathered.status().to_string();
  EXPECT_EQ(gathered->shape[0], static_cast<int64_t>(k * (k + 1) / 2));
  const float* g = reinterpret_cast<const float*>(gathered->data.data());
  for (int p = 0, at = 0; p < k; at += 2 * (p + 1), ++p)
    EXPECT_EQ(g[at], static_cast<float>(set.ranks()[p])) << "row block of set rank " << p;

  std::vector<float> bc{static_cast<float>(rank())};
  ASSERT_TRUE(broadcast("t", view(bc), set.ranks().back(), id).ok());
  EXPECT_EQ(bc[0], static_cast<float>(set.ranks().back()));

  std::vector<float> send(static_cast<size_t>(k));
  for (int p = 0; p < k; ++p) send[p] = static_cast<float>(rank() * 100 + set.ranks()[p]);
  auto swapped = alltoall("t", view(send, {k}), {}, id);
  ASSERT_TRUE(swapped.ok()) << swapped.status().to_string();
  const float* s = reinterpret_cast<const float*>(swapped->data.data());
  for (int p = 0; p < k; ++p) EXPECT_EQ(s[p], static_cast<float>(set.ranks()[p] * 100 + rank()));

  std::vector<float> blocks(static_cast<size_t>(k) * 3, 1.0f);
  auto scattered = reducescatter("t", view(blocks, {k * 3}), ReduceOp::kSum, 1.0, 1.0, id);
  ASSERT_TRUE(scattered.ok()) << scattered.status().to_string();
  EXPECT_EQ(scattered->shape[0], 3);
  EXPECT_EQ(reinterpret_cast<const float*>(scattered->data.data())[0], static_cast<float>(k));

  ASSERT_TRUE(barrier(std::chrono::seconds(60), id).ok());
  StatusOr<int> last = join(std::chrono::seconds(60), id);
  ASSERT_TRUE(last.ok()) << last.status().to_string();
  EXPECT_TRUE(contains(set.ranks(), last.value())) << "last joined " << last.value();
}

TEST(ProcessSets, EveryCollectiveOnEveryShape) {
  ASSERT_TRUE(dynamic_process_sets());
  std::vector<ProcessSet> sets = add_all(shapes(size()));
  for (const ProcessSet& set : sets) {
    SCOPED_TRACE("process set " + std::to_string(set.id()));
    EXPECT_GT(set.id(), 0);
    ASSERT_TRUE(get_process_set(set.id()).ok());
    if (set.included()) {
      check_collectives(set);
    } else {
      std::vector<float> x{1.0f};
      AllreduceOptions options;
      options.process_set = set.id();
      Status s = allreduce("t", view(x), view(x), options);
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(s.message().find("not a member of process set " + std::to_string(set.id())),
                std::string::npos)
          << s.to_string();
      EXPECT_EQ(allgather("t", view(x), set.id()).status().code(), StatusCode::kInvalidArgument);
    }
  }
  EXPECT_EQ(process_sets().size(), sets.size() + 1);
  remove_all(sets);
  EXPECT_EQ(process_sets().size(), 1u);
}

// One name in flight on two sets (and the global one) at once on a rank that is in both.
TEST(ProcessSets, OneNameInSeveralSetsAtOnce) {
  const int n = size();
  std::vector<ProcessSet> sets = add_all(shapes(n));
  std::vector<std::vector<float>> values(sets.size() + 1, std::vector<float>{1.0f});
  std::vector<Handle> handles;
  AllreduceOptions options;
  options.op = ReduceOp::kSum;
  handles.push_back(allreduce_async("same", view(values[0]), view(values[0]), options));
  std::vector<int> expected{n};
  for (size_t i = 0; i < sets.size(); ++i) {
    if (!sets[i].included()) continue;
    options.process_set = sets[i].id();
    handles.push_back(allreduce_async("same", view(values[handles.size()]),
                                      view(values[handles.size()]), options));
    expected.push_back(sets[i].size());
  }
  for (size_t i = 0; i < handles.size(); ++i) {
    ASSERT_TRUE(handles[i].wait().ok()) << handles[i].wait().to_string();
    EXPECT_EQ(values[i][0], static_cast<float>(expected[i]));
  }
  remove_all(sets);
}

// The ranks of set B sleep while set A runs many allreduces: A is not held back (had B's
// lateness delayed it, A could not finish before B wakes).
TEST(ProcessSets, LateSetDoesNotHoldBackAnother) {
  const int n = size();
  if (n < 2) GTEST_SKIP() << "needs two sets";
  std::vector<int> a_ranks, b_ranks;
  for (int r = 0; r < n; ++r) (r < (n + 1) / 2 ? a_ranks : b_ranks).push_back(r);
  std::vector<ProcessSet> sets = add_all({a_ranks, b_ranks});
  ASSERT_EQ(sets.size(), 2u);
  ASSERT_TRUE(barrier().ok());
  constexpr auto kSleep = std::chrono::seconds(4);
  const auto start = std::chrono::steady_clock::now();
  const ProcessSet& mine = sets[0].included() ? sets[0] : sets[1];
  if (&mine == &sets[1]) std::this_thread::sleep_for(kSleep);
  AllreduceOptions options;
  options.process_set = mine.id();
  for (int i = 0; i < 200; ++i) {
    std::vector<float> x{1.0f, 2.0f};
    ASSERT_TRUE(allreduce("step", view(x), view(x), options).ok());
  }
  if (&mine == &sets[0]) {
    EXPECT_LT(std::chrono::steady_clock::now() - start, kSleep)
        << "set A's 200 allreduces waited for set B's sleeping ranks";
  }
  remove_all(sets);
}

// A gradient reducer per set (two data-parallel groups): each averages over its own members.
TEST(ProcessSets, GradientReducerAveragesOverItsSet) {
  const int n = size();
  if (n < 2) GTEST_SKIP() << "needs two sets";
  std::vector<int> even, odd;
  for (int r = 0; r < n; ++r) (r % 2 == 0 ? even : odd).push_back(r);
  std::vector<ProcessSet> sets = add_all({even, odd});
  ASSERT_EQ(sets.size(), 2u);
  const ProcessSet& mine = sets[0].included() ? sets[0] : sets[1];
  GradientReducerOptions options;
  options.process_set = mine.id();
  auto reducer = GradientReducer::create({"w", "b"}, options);
  ASSERT_TRUE(reducer.ok()) << reducer.status().to_string();
  std::vector<float> w(4, static_cast<float>(rank() + 1)), b(1, static_cast<float>(2 * rank()));
  ASSERT_TRUE(reducer.value()->gradient_ready(0, view(w)).ok());
  ASSERT_TRUE(reducer.value()->gradient_ready(1, view(b)).ok());
  ASSERT_TRUE(reducer.value()->synchronize().ok());
  double mean = 0.0;
  for (int r : mine.ranks()) mean += r;
  mean /= mine.size();
  for (float v : w) EXPECT_FLOAT_EQ(v, static_cast<float>(mean + 1.0));
  EXPECT_FLOAT_EQ(b[0], static_cast<float>(2.0 * mean));
  reducer.value().reset();
  remove_all(sets);
}

// A mismatch inside a set fails on the set's ranks, naming the set; the set goes on.
TEST(ProcessSets, MismatchInsideASetNamesTheSet) {
  const int n = size();
  if (n < 3) GTEST_SKIP() << "needs a set of two ranks that is not the whole job";
  std::vector<ProcessSet> sets = add_all({{0, 1}});
  ASSERT_EQ(sets.size(), 1u);
  if (sets[0].included()) {
    std::vector<float> x(static_cast<size_t>(2 + rank()), 1.0f);  // 2 elements on 0, 3 on 1
    AllreduceOptions options;
    options.process_set = sets[0].id();
    Status s = allreduce("differs", view(x), view(x), options);
    EXPECT_EQ(s.code(), StatusCode::kMismatch) << s.to_string();
    EXPECT_NE(s.message().find("process set " + std::to_string(sets[0].id())), std::string::npos)
        << s.to_string();
    std::vector<float> y{1.0f};
    options.op = ReduceOp::kSum;
    ASSERT_TRUE(allreduce("after", view(y), view(y), options).ok());
    EXPECT_EQ(y[0], 2.0f);
  }
  remove_all(sets);
}

TEST(ProcessSets, BadInputIsRefusedAndTheJobGoesOn) {
  const int n = size();
  EXPECT_EQ(add_process_set({}).status().code(), StatusCode::kInvalidArgument);
  Status outside = add_process_set({0, n}).status();
  EXPECT_EQ(outside.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(outside.message().find("rank " + std::to_string(n) + " is not a rank of this job"),
            std::string::npos)
      << outside.to_string();
  EXPECT_EQ(add_process_set({0, 0}).status().code(), StatusCode::kInvalidArgument);
  std::vector<int> all;
  for (int r = 0; r < n; ++r) all.push_back(r);
  EXPECT_EQ(add_process_set(all).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(remove_process_set(kGlobalProcessSet).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(remove_process_set(12345).code(), StatusCode::kInvalidArgument);
  if (n >= 2) {
    // Ranks asking for different sets: every rank learns of it, nothing is registered.
    Status differ = add_process_set({rank() == 0 ? 0 : 1}).status();
    EXPECT_EQ(differ.code(), StatusCode::kMismatch) << differ.to_string();
    StatusOr<ProcessSet> set = add_process_set({0});
    ASSERT_TRUE(set.ok()) << set.status().to_string();
    EXPECT_EQ(add_process_set({0}).status().code(), StatusCode::kInvalidArgument);  // twice
    const int id = set->id();
    ASSERT_TRUE(remove_process_set(id).ok());
    EXPECT_EQ(remove_process_set(id).code(), StatusCode::kInvalidArgument);
    std::vector<float> x{1.0f};
    AllreduceOptions options;
    options.process_set = id;
    Status removed = allreduce("t", view(x), view(x), options);
    EXPECT_EQ(removed.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(removed.message().find("not registered"), std::string::npos) << removed.to_string();
  }
  std::vector<float> x{1.0f};
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  ASSERT_TRUE(allreduce("after", view(x), view(x), sum).ok());
  EXPECT_EQ(x[0], static_cast<float>(n));
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

int count_entries(const char* dir) {
  DIR* d = opendir(dir);
  if (d == nullptr) return -1;
  int n = 0;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

// Shared-memory segments this process has mapped (hora unlinks a segment's name once every
// local rank mapped it, so a leaked segment is a mapping, not a file in /dev/shm).
int shm_mappings() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  int n = 0;
  while (std::getline(maps, line))
    if (line.find("/dev/shm/") != std::string::npos) ++n;
  return n;
}

int64_t resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  return -1;
}

TEST(ProcessSets, AddAndRemoveInALoopLeaksNothing) {
  const int n = size();
  if (n < 2) GTEST_SKIP() << "a set other than the global one needs two ranks";
  std::vector<int> ranks;
  for (int r = 0; r + 1 < n; ++r) ranks.push_back(r);
  auto cycle = [&](int i) {
    StatusOr<ProcessSet> set = add_process_set(ranks);
    ASSERT_TRUE(set.ok()) << set.status().to_string();
    if (set->included()) {
      std::vector<float> x{1.0f};
      AllreduceOptions options;
      options.process_set = set->id();
      ASSERT_TRUE(allreduce("loop", view(x), view(x), options).ok()) << "cycle " << i;
    }
    ASSERT_TRUE(remove_process_set(set->id()).ok());
  };
  for (int i = 0; i < 20; ++i) cycle(i);  // warm-up: pools and caches at their steady size
  ASSERT_TRUE(barrier().ok());
  const int fds = count_entries("/proc/self/fd"), shm = shm_mappings();
  const int64_t rss = resident_kib();
  const int cycles = n <= 2 ? 1000 : 200;
  for (int i = 0; i < cycles; ++i) {
    cycle(i);
    if (HasFatalFailure()) return;
  }
  ASSERT_TRUE(barrier().ok());
  EXPECT_EQ(count_entries("/proc/self/fd"), fds);
  EXPECT_EQ(shm_mappings(), shm);
  // Under AddressSanitizer freed memory waits in its quarantine (hundreds of MiB), so resident
  // memory says nothing there; its leak checker covers that build at exit instead.
  if (!kAddressSanitizer) {
    EXPECT_LT(resident_kib() - rss, 16 * 1024) << "resident memory grew by more than 16 MiB";
  }
}

}  // namespace
}  // namespace hora
