// Process-level tests of horarun's edges: bad invocations fail at once with one line, remote
// hosts through a local stand-in for ssh (fake_rsh.sh), unreachable hosts, and the hand-off to
// mpirun (a fake mpirun that prints its arguments).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/launcher/process_harness.h"

namespace hora {
namespace launcher_test {
namespace {

struct BadCase {
  const char* name;
  std::vector<std::string> args;
  const char* message_part;
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class HorarunBadInvocation : public ::testing::TestWithParam<BadCase> {};

TEST_P(HorarunBadInvocation, FailsAtOnceWithOneLine) {
  TempDir dir;
  const std::string marker = dir.file("started");
  std::vector<std::string> args = GetParam().args;
  for (std::string& a : args) {
    if (a == "NOT_EXECUTABLE") {
      a = dir.file("plain_file");
      write_file(a, "#!/bin/sh\ntouch " + marker + "\n", false);
    }
  }
  RunResult r = run_horarun(args, dir);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const std::vector<std::string> lines = split_lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_EQ(lines[0].rfind("horarun: ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(GetParam().message_part), std::string::npos) << lines[0];
  EXPECT_EQ(lines[0].find("(at "), std::string::npos) << "no source location for users";
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE(read_file(marker).empty() && ::access(marker.c_str(), F_OK) != 0);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HorarunBadInvocation,
    ::testing::Values(
        BadCase{"NpZero", {"-np", "0", "/bin/true"}, "-np 0"},
        BadCase{"NpNegative", {"-np", "-2", "/bin/true"}, "-np -2"},
        BadCase{"NpNotANumber", {"-np", "four", "/bin/true"}, "'four'"},
        BadCase{"NpMissing", {"/bin/true"}, "missing -np"},
        BadCase{"NpWithoutValue", {"-np"}, "-np needs a value"},
        BadCase{"MoreRanksThanSlots",
                {"-np", "5", "-H", "localhost:2,127.0.0.1:2", "/bin/true"},
                "needs 5 slots but the hosts have 4"},
        BadCase{"BadSlotCount", {"-np", "1", "-H", "localhost:x", "/bin/true"}, "slot count"},
        BadCase{"HostTwice", {"-np", "1", "-H", "a:1,a:1", "/bin/true"}, "listed twice"},
        BadCase{"MissingHostfile",
                {"-np", "1", "--hostfile", "/nonexistent/hosts", "/bin/true"},
                "/nonexistent/hosts"},
        BadCase{"MissingProgram", {"-np", "2", "/nonexistent/prog"}, "does not exist"},
        BadCase{"ProgramNotInPath", {"-np", "2", "hora_no_such_program_xyz"}, "not found in PATH"},
        BadCase{"ProgramNotExecutable", {"-np", "2", "NOT_EXECUTABLE"}, "not executable"},
        BadCase{"ProgramIsDirectory", {"-np", "2", "/tmp/"}, "is a directory"},
        BadCase{"NoProgram", {"-np", "2"}, "missing the program"},
        BadCase{"UnknownFlag", {"--frobnicate", "-np", "2", "/bin/true"}, "'--frobnicate'"},
        BadCase{"UnknownBackend",
                {"-np", "2", "--backend", "carrier-pigeon", "/bin/true"},
                "carrier-pigeon"},
        BadCase{"BadStartTimeout",
                {"-np", "2", "--start-timeout", "-1", "/bin/true"},
                "--start-timeout"},
        BadCase{"MissingRsh",
                {"-np", "2", "-H", "fakehost1:2", "--rsh", "/nonexistent/ssh", "/bin/true"},
                "--rsh"},
        BadCase{"HostsAndHostfile",
                {"-np", "1", "-H", "a:1", "--hostfile", "f", "/bin/true"},
                "not both"},
        BadCase{"OutputDirWithMpi",
                {"--mpi", "-np", "2", "--output-dir", "out", "/bin/true"},
                "--output-dir cannot be used with --mpi"},
        BadCase{"GlooBackendWithMpi",
                {"--mpi", "-np", "2", "--backend", "gloo", "/bin/true"},
                "--backend gloo cannot be used with --mpi"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

const char* kPrintLayout =
    "echo $HORA_RANK $HORA_SIZE $HORA_LOCAL_RANK $HORA_LOCAL_SIZE $HORA_CROSS_RANK "
    "$HORA_CROSS_SIZE $HORA_HOSTNAME ${#HORA_SECRET} ${HORA_PASSED:-none} "
    "${HORA_RENDEZVOUS_ADDR:-none} $(pwd)";

std::map<int, std::vector<std::string>> layout_lines(const std::string& out) {
  std::map<int, std::vector<std::string>> by_rank;
  for (const std::string& line : split_lines(out)) {
    const size_t colon = line.find(": ");
    if (colon == std::string::npos) continue;
    std::vector<std::string> fields;
    std::stringstream words(line.substr(colon + 2));
    std::string w;
    while (words >> w) fields.push_back(w);
    if (!fields.empty()) by_rank[std::stoi(fields[0])] = fields;
  }
  return by_rank;
}

std::string fake_rsh() { return test_source_dir() + "/fake_rsh.sh"; }

TEST(HorarunRemote, TwoFakeHostsGetTheirLayoutThroughRsh) {
  TempDir dir;
  const std::string log = dir.file("rsh.log");
  RunResult r = run_horarun({"-np", "4", "-H", "fakehost1:2,fakehost2:2", "--rsh", fake_rsh(),
                             "/bin/sh", "-c", kPrintLayout},
                            dir, {"FAKE_RSH_LOG=" + log, "HORA_PASSED=yes it'works"});
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto by_rank = layout_lines(r.out);
  ASSERT_EQ(by_rank.size(), 4u) << r.out << r.err;
  char cwd[4096];
  ASSERT_NE(::getcwd(cwd, sizeof(cwd)), nullptr);
  for (int rank = 0; rank < 4; ++rank) {
    const auto& f = by_rank[rank];
    ASSERT_EQ(f.size(), 12u) << r.out;
    EXPECT_EQ(f[1], "4");
    EXPECT_EQ(f[2], std::to_string(rank % 2));  // local rank
    EXPECT_EQ(f[3], "2");                       // local size
    EXPECT_EQ(f[4], std::to_string(rank / 2));  // cross rank = host index
    EXPECT_EQ(f[5], "2");                       // cross size
    EXPECT_EQ(f[6], rank < 2 ? "fakehost1" : "fakehost2");
    EXPECT_EQ(f[7], "64") << "the secret arrives through the rsh's stdin";
    EXPECT_EQ(f[8], "yes");  // HORA_* of horarun's environment go along, quoted
    EXPECT_EQ(f[9], "it'works");
    EXPECT_NE(f[10], "none");
    EXPECT_EQ(f[11], cwd);
  }
  std::vector<std::string> hosts = split_lines(read_file(log));
  std::sort(hosts.begin(), hosts.end());
  EXPECT_EQ(hosts, (std::vector<std::string>{"fakehost1", "fakehost1", "fakehost2", "fakehost2"}));
  EXPECT_EQ(count_lines_with(r.err, "HORA_SECRET="), 0);
}

TEST(HorarunRemote, UnevenHostsGiveHorovodCrossRanks) {
  TempDir dir;
  RunResult r = run_horarun({"-np", "4", "-H", "fakehost1:3,fakehost2:3", "--rsh", fake_rsh(),
                             "--rendezvous-addr", "10.1.2.3", "/bin/sh", "-c", kPrintLayout},
                            dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto by_rank = layout_lines(r.out);
  ASSERT_EQ(by_rank.size(), 4u) << r.out << r.err;
  // fakehost1 runs ranks 0-2, fakehost2 rank 3: local rank 0 exists on both hosts.
  EXPECT_EQ(by_rank[0][4] + "/" + by_rank[0][5], "0/2");
  EXPECT_EQ(by_rank[1][4] + "/" + by_rank[1][5], "0/1");
  EXPECT_EQ(by_rank[2][4] + "/" + by_rank[2][5], "0/1");
  EXPECT_EQ(by_rank[3][4] + "/" + by_rank[3][5], "1/2");
  EXPECT_EQ(by_rank[3][2] + "/" + by_rank[3][3], "0/1");
  EXPECT_EQ(by_rank[3][9], "10.1.2.3");
}

TEST(HorarunRemote, FailureBehindRshTearsDownTheOthers) {
  TempDir dir;
  const std::string d = dir.path();
  Horarun h({"--grace", "0.3", "-np", "4", "-H", "fakehost1:2,fakehost2:2", "--rsh", fake_rsh(),
             "/bin/sh", "-c",
             "echo $$ > " + d +
                 "/pid.$HORA_RANK; "
                 "if [ $HORA_RANK = 3 ]; then while [ ! -s " +
                 d + "/pid.0 ] || [ ! -s " + d + "/pid.1 ] || [ ! -s " + d +
                 "/pid.2 ]; do :; done; exit 4; fi; exec sleep 1000"},
            dir);
  RunResult r = h.wait(30.0);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_EQ(count_lines_with(r.err, "horarun: rank 3 (host fakehost2) exited with code 4"), 1)
      << r.err;
  for (int rank = 0; rank < 3; ++rank) {
    const long pid = wait_for_pidfile(dir.file("pid." + std::to_string(rank)), 1.0);
    EXPECT_FALSE(process_alive(static_cast<pid_t>(pid))) << "rank " << rank;
  }
}

TEST(HorarunRemote, UnreachableHostIsReportedAsThatRankFailing) {
  TempDir dir;
  const std::string rsh = dir.file("unreachable_rsh");
  write_file(
      rsh, "#!/bin/sh\necho \"ssh: connect to host $1 port 22: No route to host\" >&2\nexit 255\n",
      true);
  RunResult r = run_horarun({"-np", "1", "-H", "deadhost:1", "--rsh", rsh, "/bin/true"}, dir);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 255);
  EXPECT_EQ(count_lines_with(r.err,
                             "horarun: rank 0 (host deadhost) exited with code 255 "
                             "(the --rsh command failed: is the host reachable?)"),
            1)
      << r.err;
  EXPECT_EQ(count_lines_with(r.err, "[0]<stderr>: ssh: connect to host deadhost"), 1) << r.err;
}

TEST(HorarunMpi, HandsTheJobToMpirun) {
  TempDir dir;
  write_file(
      dir.file("mpirun"),
      "#!/bin/sh\nfor a in \"$@\"; do echo \"arg:$a\"; done\n"
      "echo \"env:HORA_BACKEND=$HORA_BACKEND\"\necho \"env:HORA_RANK=${HORA_RANK:-unset}\"\n",
      true);
  const char* path = std::getenv("PATH");
  RunResult r = run_horarun(
      {"--mpi", "--verbose", "-np", "2", "--timeline", "/tmp/t.json", "/bin/echo", "hi there"}, dir,
      {"PATH=" + dir.path() + ":" + (path ? path : "/usr/bin:/bin"), "HORA_RANK=7",
       "HORA_FUSION_THRESHOLD=1M"});
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> args;
  for (const std::string& line : split_lines(r.out))
    if (line.rfind("arg:", 0) == 0) args.push_back(line.substr(4));
  ASSERT_GE(args.size(), 4u) << r.out;
  EXPECT_EQ(args[0], "-np");
  EXPECT_EQ(args[1], "2");
  auto has_pair = [&](const std::string& a, const std::string& b) {
    for (size_t i = 0; i + 1 < args.size(); ++i)
      if (args[i] == a && args[i + 1] == b) return true;
    return false;
  };
  EXPECT_TRUE(has_pair("-x", "HORA_BACKEND"));
  EXPECT_TRUE(has_pair("-x", "HORA_TIMELINE"));
  EXPECT_TRUE(has_pair("-x", "HORA_FUSION_THRESHOLD"));
  EXPECT_FALSE(has_pair("-x", "HORA_RANK"));
  EXPECT_TRUE(has_pair("--tag-output", "/bin/echo"));
  EXPECT_EQ(args.back(), "hi there");
  EXPECT_EQ(count_lines_with(r.out, "env:HORA_BACKEND=mpi"), 1);
  EXPECT_EQ(count_lines_with(r.out, "env:HORA_RANK=unset"), 1);
  EXPECT_EQ(count_lines_with(r.err, "horarun: exec mpirun -np 2"), 1) << r.err;
}

}  // namespace
}  // namespace launcher_test
}  // namespace hora
