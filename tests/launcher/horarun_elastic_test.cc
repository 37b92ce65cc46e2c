// End-to-end tests of horarun's elastic mode: the real horarun with elastic_test_worker, a
// worker that speaks the elastic protocol through the store (no hora runtime). Each checks
// horarun's exit status and message, the generations the workers saw (their log), and that no
// worker process or shared-memory segment outlives the job.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/launcher/process_harness.h"

namespace hora {
namespace launcher_test {
namespace {

const std::string kWorker = ELASTIC_WORKER_PATH;

// One line of the workers' log.
struct Seen {
  long worker, generation, rank, size, pid;
};

std::vector<Seen> read_log(const std::string& path) {
  std::vector<Seen> seen;
  const std::regex line("worker=(\\d+) generation=(\\d+) rank=(\\d+) size=(\\d+) pid=(\\d+)");
  for (const std::string& l : split_lines(read_file(path))) {
    std::smatch m;
    if (std::regex_match(l, m, line))
      seen.push_back(
          {std::stol(m[1]), std::stol(m[2]), std::stol(m[3]), std::stol(m[4]), std::stol(m[5])});
  }
  return seen;
}

// The workers of `generation` as "worker:rank/size" words, in rank order.
std::string generation_of(const std::vector<Seen>& seen, long generation) {
  std::map<long, std::string> by_rank;
  for (const Seen& s : seen)
    if (s.generation == generation)
      by_rank[s.rank] =
          std::to_string(s.worker) + ":" + std::to_string(s.rank) + "/" + std::to_string(s.size);
  std::string out;
  for (const auto& [rank, word] : by_rank) out += (out.empty() ? "" : " ") + word;
  return out;
}

void expect_all_gone(const std::vector<Seen>& seen) {
  for (const Seen& s : seen)
    EXPECT_FALSE(process_alive(static_cast<pid_t>(s.pid))) << "worker pid " << s.pid;
}

// Waits until the log has `lines` lines (20 s at most).
bool wait_for_log(const std::string& path, size_t lines) {
  for (int i = 0; i < 400; ++i) {
    if (read_log(path).size() >= lines) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST(HorarunElastic, SurvivorsOfAFailureGoOnInGenerationOne) {
  TempDir dir;
  const std::string log = dir.file("log");
  RunResult r =
      run_horarun({"-np", "3", "--min-np", "2", kWorker, log, "2", "fail=1:0", "shm=1:0"}, dir);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::vector<Seen> seen = read_log(log);
  EXPECT_EQ(generation_of(seen, 0), "0:0/3 1:1/3 2:2/3");
  EXPECT_EQ(generation_of(seen, 1), "0:0/2 2:1/2");
  // The survivors went on in the same processes.
  std::map<long, long> pid_of;
  for (const Seen& s : seen) {
    if (pid_of.count(s.worker)) {
      EXPECT_EQ(pid_of[s.worker], s.pid) << "worker " << s.worker;
    }
    pid_of[s.worker] = s.pid;
  }
  EXPECT_EQ(count_lines_with(r.err,
                             "horarun: worker 1 (host localhost, rank 1 of generation 0) "
                             "exited with code 1"),
            1)
      << r.err;
  EXPECT_EQ(count_lines_with(r.err, "generation 1: 2 worker(s) [0,2]"), 1) << r.err;
  expect_all_gone(seen);
  // The failed worker's shared-memory segment was unlinked.
  const std::string segment = "/dev/shm/hora-" + std::to_string(pid_of[1]) + "-0-elastic-test";
  EXPECT_NE(::access(segment.c_str(), F_OK), 0) << segment << " left behind";
}

TEST(HorarunElastic, StoppedWorkerNamedByAReportIsKilled) {
  TempDir dir;
  const std::string log = dir.file("log");
  RunResult r = run_horarun({"-np", "3", "--min-np", "2", kWorker, log, "2", "stop=2:0"}, dir);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::vector<Seen> seen = read_log(log);
  EXPECT_EQ(generation_of(seen, 1), "0:0/2 1:1/2");
  EXPECT_EQ(count_lines_with(r.err,
                             "worker 2 (host localhost, rank 2 of generation 0) was named "
                             "failed by worker"),
            1)
      << r.err;
  expect_all_gone(seen);
}

TEST(HorarunElastic, SlotAddedByDiscoveryBringsANewWorker) {
  TempDir dir;
  const std::string log = dir.file("log"), hosts = dir.file("hosts");
  write_file(hosts, "localhost:2\n");
  Horarun h(
      {"-np", "2", "--max-np", "3", "--host-discovery-script", "cat " + hosts, kWorker, log, "3"},
      dir);
  ASSERT_TRUE(wait_for_log(log, 2));
  write_file(hosts, "localhost:3\n");
  RunResult r = h.wait(30);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::vector<Seen> seen = read_log(log);
  EXPECT_EQ(generation_of(seen, 0), "0:0/2 1:1/2");
  EXPECT_EQ(generation_of(seen, 1), "0:0/3 1:1/3 2:2/3");
  EXPECT_EQ(count_lines_with(r.err, "discovery offers 1 more slot(s)"), 1) << r.err;
  expect_all_gone(seen);
}

TEST(HorarunElastic, HostRemovedByDiscoveryEndsItsWorker) {
  TempDir dir;
  const std::string log = dir.file("log"), hosts = dir.file("hosts");
  write_file(hosts, "localhost:2\nfakehost:1\n");
  Horarun h({"-np", "3", "--min-np", "2", "--rsh", test_source_dir() + "/fake_rsh.sh",
             "--host-discovery-script", "cat " + hosts, kWorker, log, "2"},
            dir);
  ASSERT_TRUE(wait_for_log(log, 3));
  write_file(hosts, "localhost:2\n");
  RunResult r = h.wait(30);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::vector<Seen> seen = read_log(log);
  EXPECT_EQ(generation_of(seen, 0), "0:0/3 1:1/3 2:2/3");
  EXPECT_EQ(generation_of(seen, 1), "0:0/2 1:1/2");
  EXPECT_EQ(count_lines_with(r.err,
                             "worker 2 (host fakehost, rank 2 of generation 0) is on a "
                             "host that discovery offers 0 slots now"),
            1)
      << r.err;
  EXPECT_EQ(count_lines_with(r.err, "blacklisted"), 0) << r.err;
  expect_all_gone(seen);
}

TEST(HorarunElastic, BelowMinNpFailsAfterTheElasticTimeout) {
  TempDir dir;
  const std::string log = dir.file("log");
  const auto start = std::chrono::steady_clock::now();
  RunResult r =
      run_horarun({"-np", "3", "--min-np", "3", "--elastic-timeout", "2", "--host-discovery-script",
                   "echo localhost:3", kWorker, log, "2", "fail=1:0"},
                  dir);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_GE(took, 2.0);
  EXPECT_EQ(count_lines_with(r.err,
                             "horarun: only 2 worker(s) available, below --min-np 3 after "
                             "waiting 2 s (--elastic-timeout); discovery offers "
                             "localhost:3"),
            1)
      << r.err;
  expect_all_gone(read_log(log));
}

TEST(HorarunElastic, ResetLimitEndsTheJob) {
  TempDir dir;
  const std::string log = dir.file("log");
  RunResult r = run_horarun({"-np", "3", "--min-np", "1", "--reset-limit", "1", kWorker, log, "1",
                             "fail=1:0", "fail=2:1"},
                            dir);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(generation_of(read_log(log), 1), "0:0/2 2:1/2");
  EXPECT_EQ(count_lines_with(r.err, "the reset limit is reached (--reset-limit 1)"), 1) << r.err;
  expect_all_gone(read_log(log));
}

TEST(HorarunElastic, BadElasticFlagsAreRejected) {
  TempDir dir;
  RunResult r = run_horarun({"-np", "2", "--min-np", "3", kWorker}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-np 2 is below --min-np 3"), std::string::npos) << r.err;
  r = run_horarun({"-np", "2", "--reset-limit", "1", kWorker}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("need elastic mode"), std::string::npos) << r.err;
  r = run_horarun({"-np", "2", "--min-np", "1", "--blacklist-cooldown-range", "5", "1", kWorker},
                  dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("MAX must not be below MIN"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace launcher_test
}  // namespace hora
