// Process-level tests of the real horarun binary: exit status, the first-failure report,
// teardown without orphans, signal forwarding, output tagging and the environment of ranks.
// Ranks are small /bin/sh scripts; they announce themselves through pidfiles, which the tests
// poll with a deadline (no sleeps for synchronisation).
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/launcher/process_harness.h"

namespace hora {
namespace launcher_test {
namespace {

constexpr double kPidfileTimeoutS = 20.0;

// Reads the pidfiles "<prefix>.<rank>" for `np` ranks; fails the test on a timeout.
std::vector<long> read_pids(const TempDir& dir, const std::string& prefix, int np) {
  std::vector<long> pids;
  for (int r = 0; r < np; ++r) {
    const long pid = wait_for_pidfile(dir.file(prefix + "." + std::to_string(r)), kPidfileTimeoutS);
    EXPECT_GT(pid, 0) << "no pidfile " << prefix << "." << r;
    pids.push_back(pid);
  }
  return pids;
}

void expect_all_gone(const std::vector<long>& pids) {
  for (long pid : pids)
    EXPECT_FALSE(process_alive(static_cast<pid_t>(pid))) << "pid " << pid << " survived";
}

TEST(HorarunExit, AllRanksSucceedGivesZero) {
  TempDir dir;
  RunResult r = run_horarun({"-np", "3", "/bin/sh", "-c", "exit 0"}, dir);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count_lines_with(r.err, "horarun:"), 0) << r.err;
}

TEST(HorarunExit, FailingRankIsNamedAndItsCodeReturned) {
  TempDir dir;
  RunResult r = run_horarun({"--grace", "0.5", "-np", "3", "/bin/sh", "-c",
                             "if [ \"$HORA_RANK\" = 1 ]; then exit 3; fi; exec sleep 1000"},
                            dir);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(count_lines_with(r.err, "horarun: rank 1 (host localhost) exited with code 3"), 1)
      << r.err;
  EXPECT_EQ(count_lines_with(r.err, "horarun: rank"), 1) << r.err;
}

TEST(HorarunExit, OnlyTheFirstFailureIsReported) {
  TempDir dir;
  // Rank 2 fails; the others exit 7 when horarun's SIGTERM reaches them: a later failure
  // that must not be reported as the cause.
  RunResult r = run_horarun(
      {"-np", "3", "/bin/sh", "-c",
       "if [ \"$HORA_RANK\" = 2 ]; then exit 5; fi; trap 'exit 7' TERM; sleep 1000 & wait"},
      dir);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 5);
  EXPECT_EQ(count_lines_with(r.err, "horarun: rank 2 (host localhost) exited with code 5"), 1)
      << r.err;
  EXPECT_EQ(count_lines_with(r.err, "code 7"), 0) << r.err;
}

TEST(HorarunExit, KilledRankIsReportedWithItsSignal) {
  TempDir dir;
  RunResult r = run_horarun({"--grace", "0.5", "-np", "2", "/bin/sh", "-c",
                             "if [ \"$HORA_RANK\" = 1 ]; then kill -KILL $$; fi; exec sleep 1000"},
                            dir);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_EQ(
      count_lines_with(r.err, "horarun: rank 1 (host localhost) was killed by signal SIGKILL"), 1)
      << r.err;
}

// Each rank ignores SIGTERM and starts two grandchildren that ignore it too: one in its
// process group and one that left it with setsid. Only SIGKILL after the grace period and
// horarun's subreaping can end them all.
std::string stubborn_rank(const TempDir& dir) {
  const std::string d = dir.path();
  return "trap '' TERM; "
         "sh -c 'trap \"\" TERM; echo $$ > " +
         d +
         "/gc.'$HORA_RANK'; exec sleep 1000' & "
         "setsid sh -c 'trap \"\" TERM; echo $$ > " +
         d +
         "/sid.'$HORA_RANK'; exec sleep 1000' "
         "</dev/null >/dev/null 2>&1 & "
         "echo $$ > " +
         d + "/pid.$HORA_RANK; wait";
}

TEST(HorarunTeardown, RankFailureLeavesNoOrphans) {
  TempDir dir;
  Horarun h({"--grace", "0.3", "-np", "3", "/bin/sh", "-c", stubborn_rank(dir)}, dir);
  const std::vector<long> ranks = read_pids(dir, "pid", 3);
  const std::vector<long> grandchildren = read_pids(dir, "gc", 3);
  const std::vector<long> escaped = read_pids(dir, "sid", 3);
  ASSERT_EQ(::kill(static_cast<pid_t>(ranks[1]), SIGKILL), 0);
  RunResult r = h.wait(30.0);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_EQ(
      count_lines_with(r.err, "horarun: rank 1 (host localhost) was killed by signal SIGKILL"), 1)
      << r.err;
  expect_all_gone(ranks);
  expect_all_gone(grandchildren);
  expect_all_gone(escaped);
}

TEST(HorarunTeardown, SuccessfulJobLeavesNoBackgroundProcess) {
  TempDir dir;
  const std::string d = dir.path();
  // The rank exits 0 but leaves a child behind that still holds its stdout.
  RunResult r = run_horarun({"--grace", "0.3", "-np", "2", "/bin/sh", "-c",
                             "sleep 1000 & echo $! > " + d + "/bg.$HORA_RANK; exit 0"},
                            dir);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  expect_all_gone(read_pids(dir, "bg", 2));
}

void expect_signal_ends_job(int sig) {
  TempDir dir;
  Horarun h({"--grace", "0.3", "-np", "3", "/bin/sh", "-c", stubborn_rank(dir)}, dir);
  const std::vector<long> ranks = read_pids(dir, "pid", 3);
  const std::vector<long> grandchildren = read_pids(dir, "gc", 3);
  const std::vector<long> escaped = read_pids(dir, "sid", 3);
  ASSERT_EQ(::kill(h.pid(), sig), 0);
  RunResult r = h.wait(30.0);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + sig) << "horarun's own signal: " << r.term_signal << "\n" << r.err;
  EXPECT_EQ(count_lines_with(r.err, "horarun: received SIG"), 1) << r.err;
  expect_all_gone(ranks);
  expect_all_gone(grandchildren);
  expect_all_gone(escaped);
}

TEST(HorarunSignals, SigtermEndsEveryRank) { expect_signal_ends_job(SIGTERM); }
TEST(HorarunSignals, SigintEndsEveryRank) { expect_signal_ends_job(SIGINT); }

TEST(HorarunSignals, ForwardedSigtermEndsCooperativeRanksWithoutWaitingForGrace) {
  TempDir dir;
  const std::string d = dir.path();
  // Grace of 600 s: the test can only finish in time if the forwarded SIGTERM ends the ranks.
  Horarun h({"--grace", "600", "-np", "2", "/bin/sh", "-c",
             "echo $$ > " + d + "/pid.$HORA_RANK; exec sleep 1000"},
            dir);
  const std::vector<long> ranks = read_pids(dir, "pid", 2);
  ASSERT_EQ(::kill(h.pid(), SIGTERM), 0);
  RunResult r = h.wait(30.0);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM);
  EXPECT_EQ(count_lines_with(r.err, "horarun: rank"), 0) << "no rank failed first: " << r.err;
  expect_all_gone(ranks);
}

TEST(HorarunOutput, LinesAreTaggedWholeAndPartialLinesFlushed) {
  TempDir dir;
  RunResult r =
      run_horarun({"-np", "2", "/bin/sh", "-c",
                   "echo out$HORA_RANK; echo err$HORA_RANK >&2; echo; printf partial$HORA_RANK"},
                  dir);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const std::string rank : {"0", "1"}) {
    EXPECT_EQ(count_lines_with(r.out, "[" + rank + "]<stdout>: out" + rank), 1) << r.out;
    EXPECT_EQ(count_lines_with(r.out, "[" + rank + "]<stdout>: partial" + rank), 1) << r.out;
    EXPECT_EQ(count_lines_with(r.err, "[" + rank + "]<stderr>: err" + rank), 1) << r.err;
  }
  EXPECT_EQ(count_lines_with(r.out, "<stderr>"), 0);
  for (const std::string& line : split_lines(r.out))
    EXPECT_TRUE(std::regex_match(line, std::regex(R"(\[[01]\]<stdout>: .*)"))) << line;
  EXPECT_EQ(r.out.back(), '\n');
}

TEST(HorarunOutput, ManyPiecewiseLinesNeverInterleave) {
  TempDir dir;
  // Every line is written in three pieces (three write() calls by printf).
  RunResult r = run_horarun(
      {"-np", "3", "/bin/sh", "-c",
       "i=0; while [ $i -lt 300 ]; do printf r$HORA_RANK-; printf line; printf \"$i\\n\"; "
       "i=$((i+1)); done"},
      dir);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, int> per_rank;
  const std::regex form(R"(\[(\d)\]<stdout>: r(\d)-line(\d+))");
  for (const std::string& line : split_lines(r.out)) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, form)) << "interleaved line: " << line;
    EXPECT_EQ(m[1], m[2]) << line;
    EXPECT_EQ(std::stoi(m[3]), per_rank[m[1]]++) << "lines of a rank out of order: " << line;
  }
  for (const std::string rank : {"0", "1", "2"}) EXPECT_EQ(per_rank[rank], 300);
}

TEST(HorarunOutput, OutputDirGetsRawPerRankFiles) {
  TempDir dir;
  const std::string out_dir = dir.file("logs/job");
  RunResult r = run_horarun({"--output-dir", out_dir, "-np", "2", "/bin/sh", "-c",
                             "echo hello $HORA_RANK; echo oops >&2; printf tail"},
                            dir);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_file(out_dir + "/rank.0.stdout"), "hello 0\ntail");
  EXPECT_EQ(read_file(out_dir + "/rank.1.stdout"), "hello 1\ntail");
  EXPECT_EQ(read_file(out_dir + "/rank.1.stderr"), "oops\n");
  EXPECT_EQ(count_lines_with(r.out, "[1]<stdout>: hello 1"), 1);  // still on the terminal too
}

// Each rank prints its HORA_* layout as one line; returns rank -> fields.
std::map<int, std::vector<std::string>> layout_lines(const std::string& out) {
  std::map<int, std::vector<std::string>> by_rank;
  for (const std::string& line : split_lines(out)) {
    const size_t colon = line.find(": ");
    if (colon == std::string::npos) continue;
    std::vector<std::string> fields;
    std::stringstream words(line.substr(colon + 2));
    std::string w;
    while (words >> w) fields.push_back(w);
    if (fields.size() >= 1) by_rank[std::stoi(fields[0])] = fields;
  }
  return by_rank;
}

const char* kPrintLayout =
    "echo $HORA_RANK $HORA_SIZE $HORA_LOCAL_RANK $HORA_LOCAL_SIZE $HORA_CROSS_RANK "
    "$HORA_CROSS_SIZE $HORA_HOSTNAME $HORA_RENDEZVOUS_ADDR $HORA_RENDEZVOUS_PORT $HORA_SECRET "
    "${HORA_BACKEND:-none} ${HORA_TIMELINE:-none} ${HORA_START_TIMEOUT_S:-none}";

TEST(HorarunEnvironment, EachRankSeesItsLayoutAndTheJobSettings) {
  TempDir dir;
  RunResult r = run_horarun({"-np", "3", "--backend", "gloo", "--timeline-filename", "/tmp/tl.json",
                             "--start-timeout", "5", "/bin/sh", "-c", kPrintLayout},
                            dir);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto by_rank = layout_lines(r.out);
  ASSERT_EQ(by_rank.size(), 3u) << r.out;
  const std::string secret = by_rank[0][9];
  EXPECT_TRUE(std::regex_match(secret, std::regex("[0-9a-f]{64}"))) << secret;
  for (int rank = 0; rank < 3; ++rank) {
    const auto& f = by_rank[rank];
    ASSERT_EQ(f.size(), 13u);
    EXPECT_EQ(f[1], "3");
    EXPECT_EQ(f[2], std::to_string(rank));  // local rank
    EXPECT_EQ(f[3], "3");
    EXPECT_EQ(f[4], "0");  // cross rank: one host
    EXPECT_EQ(f[5], "1");
    EXPECT_EQ(f[6], "localhost");
    EXPECT_EQ(f[7], "127.0.0.1");
    EXPECT_GT(std::stoi(f[8]), 0);
    EXPECT_EQ(f[8], by_rank[0][8]);
    EXPECT_EQ(f[9], secret);
    EXPECT_EQ(f[10], "gloo");
    EXPECT_EQ(f[11], "/tmp/tl.json");
    EXPECT_EQ(f[12], "5");
  }
  RunResult again = run_horarun({"-np", "1", "/bin/sh", "-c", kPrintLayout}, dir);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  auto second = layout_lines(again.out);
  EXPECT_NE(second[0][9], secret) << "each job gets a fresh secret";
  EXPECT_EQ(second[0][10], "none");  // not set by horarun unless asked
}

TEST(HorarunEnvironment, EachRankSeesHorovodsLayoutVariables) {
  TempDir dir;
  RunResult r = run_horarun(
      {"-np", "3", "-H", "127.0.0.1:2,localhost:2", "/bin/sh", "-c",
       "echo $HOROVOD_RANK $HOROVOD_SIZE $HOROVOD_LOCAL_RANK $HOROVOD_LOCAL_SIZE "
       "$HOROVOD_CROSS_RANK $HOROVOD_CROSS_SIZE $HOROVOD_HOSTNAME; echo $HORA_RANK $HORA_SIZE "
       "$HORA_LOCAL_RANK $HORA_LOCAL_SIZE $HORA_CROSS_RANK $HORA_CROSS_SIZE $HORA_HOSTNAME >&2"},
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto horovod = layout_lines(r.out);
  auto hora = layout_lines(r.err);
  ASSERT_EQ(horovod.size(), 3u) << r.out;
  ASSERT_EQ(hora.size(), 3u) << r.err;
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_EQ(horovod[rank].size(), 7u) << r.out;
    EXPECT_EQ(horovod[rank], hora[rank]) << "rank " << rank;
  }
  EXPECT_EQ(horovod[2][6], "localhost");
  EXPECT_EQ(horovod[2][4], "1");  // cross rank on the second host
}

TEST(HorarunEnvironment, LocalHostListGivesLocalAndCrossRanks) {
  TempDir dir;
  // Two names for this machine count as two hosts: 127.0.0.1:2 then localhost:1.
  RunResult r = run_horarun(
      {"-np", "3", "-H", "127.0.0.1:2,localhost:2", "/bin/sh", "-c", kPrintLayout}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto by_rank = layout_lines(r.out);
  ASSERT_EQ(by_rank.size(), 3u) << r.out;
  EXPECT_EQ(by_rank[0][6], "127.0.0.1");
  EXPECT_EQ(by_rank[2][6], "localhost");
  EXPECT_EQ(by_rank[2][2], "0");  // local rank on the second host
  EXPECT_EQ(by_rank[2][4], "1");  // cross rank
  EXPECT_EQ(by_rank[0][5], "2");  // local rank 0 exists on both hosts
  EXPECT_EQ(by_rank[1][5], "1");  // local rank 1 only on the first
}

}  // namespace
}  // namespace launcher_test
}  // namespace hora
