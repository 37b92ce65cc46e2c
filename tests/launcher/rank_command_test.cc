// Unit tests of what ranks are started with: their HORA_* environment, the local and remote
// (rsh) command lines, quoting, program lookup and the mpirun hand-off command.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "launcher/mpirun_command.h"
#include "launcher/rank_process.h"

namespace hora {
namespace launcher {
namespace {

RankPlacement placement() {
  RankPlacement p;
  p.rank = 5;
  p.size = 8;
  p.local_rank = 1;
  p.local_size = 4;
  p.cross_rank = 1;
  p.cross_size = 2;
  p.host = "node2";
  p.is_local = false;
  return p;
}

JobEnvironment job() {
  JobEnvironment j;
  j.rendezvous_addr = "10.0.0.1";
  j.rendezvous_port = 4242;
  j.secret = "s3cr3t";
  return j;
}

std::string value_of(const EnvVars& vars, const std::string& key) {
  for (const auto& kv : vars)
    if (kv.first == key) return kv.second;
  return "<unset>";
}

TEST(RankEnvironment, HasTheLayoutAndRendezvous) {
  const EnvVars vars = rank_environment(placement(), job());
  EXPECT_EQ(value_of(vars, "HORA_RANK"), "5");
  EXPECT_EQ(value_of(vars, "HORA_SIZE"), "8");
  EXPECT_EQ(value_of(vars, "HORA_LOCAL_RANK"), "1");
  EXPECT_EQ(value_of(vars, "HORA_LOCAL_SIZE"), "4");
  EXPECT_EQ(value_of(vars, "HORA_CROSS_RANK"), "1");
  EXPECT_EQ(value_of(vars, "HORA_CROSS_SIZE"), "2");
  EXPECT_EQ(value_of(vars, "HORA_HOSTNAME"), "node2");
  EXPECT_EQ(value_of(vars, "HORA_RENDEZVOUS_ADDR"), "10.0.0.1");
  EXPECT_EQ(value_of(vars, "HORA_RENDEZVOUS_PORT"), "4242");
  EXPECT_EQ(value_of(vars, "HORA_SECRET"), "s3cr3t");
  EXPECT_EQ(value_of(vars, "HORA_BACKEND"), "<unset>");
  EXPECT_EQ(value_of(vars, "HORA_TIMELINE"), "<unset>");
  EXPECT_EQ(value_of(vars, "HORA_START_TIMEOUT_S"), "<unset>");
}

TEST(RankEnvironment, HasOptionalSettingsWhenGiven) {
  JobEnvironment j = job();
  j.backend = "gloo";
  j.timeline = "/tmp/t.json";
  j.start_timeout_s = 2.5;
  const EnvVars vars = rank_environment(placement(), j);
  EXPECT_EQ(value_of(vars, "HORA_BACKEND"), "gloo");
  EXPECT_EQ(value_of(vars, "HORA_TIMELINE"), "/tmp/t.json");
  EXPECT_EQ(value_of(vars, "HORA_START_TIMEOUT_S"), "2.5");
}

TEST(ShellQuote, QuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(shell_quote("plain/path-1.0"), "plain/path-1.0");
  EXPECT_EQ(shell_quote("K=V"), "K=V");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("two words"), "'two words'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("$HOME;rm -rf /"), "'$HOME;rm -rf /'");
}

TEST(SplitWords, HandlesQuotesAndEscapes) {
  auto w = split_words("ssh -p 2222  -o 'ProxyCommand=ssh gw nc %h %p' \"a b\" c\\ d");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(*w, (std::vector<std::string>{"ssh", "-p", "2222", "-o", "ProxyCommand=ssh gw nc %h %p",
                                          "a b", "c d"}));
  EXPECT_FALSE(split_words("ssh 'unterminated").ok());
  EXPECT_FALSE(split_words("   ").ok());
}

TEST(FindExecutable, SearchesPathAndChecksPermissions) {
  auto sh = find_executable("sh", "/nonexistent:/bin:/usr/bin");
  ASSERT_TRUE(sh.ok()) << sh.status().to_string();
  EXPECT_EQ(*sh, "/bin/sh");
  EXPECT_TRUE(find_executable("/bin/sh", "").ok());
  auto missing = find_executable("hora_no_such_prog", "/bin:/usr/bin");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("not found in PATH (/bin:/usr/bin)"),
            std::string::npos);
  char plain[] = "/tmp/horarun_plain.XXXXXX";
  const int fd = ::mkstemp(plain);
  ASSERT_GE(fd, 0);
  ::close(fd);
  EXPECT_FALSE(find_executable(plain, "").ok());  // mode 0600: not executable
  ::unlink(plain);
  EXPECT_FALSE(find_executable("/bin", "").ok());  // a directory
  EXPECT_FALSE(find_executable("", "/bin").ok());
}

TEST(LocalLaunch, OverridesInheritedVariablesAndHidesTheSecret) {
  const std::vector<std::string> base = {"PATH=/bin", "HORA_RANK=99", "HORA_FUSION_THRESHOLD=1M"};
  const RankLaunch l =
      local_launch("/bin/prog", {"prog", "a b"}, base, rank_environment(placement(), job()));
  EXPECT_EQ(l.exe_path, "/bin/prog");
  EXPECT_EQ(l.argv, (std::vector<std::string>{"prog", "a b"}));
  EXPECT_EQ(std::count(l.envp.begin(), l.envp.end(), "HORA_RANK=5"), 1);
  EXPECT_EQ(std::count(l.envp.begin(), l.envp.end(), "HORA_RANK=99"), 0);
  EXPECT_EQ(std::count(l.envp.begin(), l.envp.end(), "HORA_FUSION_THRESHOLD=1M"), 1);
  EXPECT_EQ(std::count(l.envp.begin(), l.envp.end(), "PATH=/bin"), 1);
  EXPECT_TRUE(l.stdin_data.empty());
  EXPECT_EQ(l.display.find("s3cr3t"), std::string::npos) << l.display;
  EXPECT_NE(l.display.find("'a b'"), std::string::npos) << l.display;
}

TEST(RemoteLaunch, BuildsAQuotedRshCommandWithTheSecretOnStdin) {
  const std::vector<std::string> base = {"PATH=/bin", "HORA_FUSION_THRESHOLD=1 M", "HORA_RANK=99"};
  const RankLaunch l =
      remote_launch("/usr/bin/ssh", {"ssh", "-p", "22"}, "node2", "/work dir",
                    {"./train", "--lr", "0.1 x"}, base, rank_environment(placement(), job()));
  EXPECT_EQ(l.exe_path, "/usr/bin/ssh");
  ASSERT_EQ(l.argv.size(), 5u);
  EXPECT_EQ(l.argv[0], "ssh");
  EXPECT_EQ(l.argv[3], "node2");
  const std::string& script = l.argv[4];
  EXPECT_EQ(
      script.rfind(
          "cd '/work dir' >/dev/null 2>&1; read -r HORA_SECRET && export HORA_SECRET && exec env ",
          0),
      0u)
      << script;
  EXPECT_NE(script.find(" 'HORA_FUSION_THRESHOLD=1 M' "), std::string::npos) << script;
  EXPECT_NE(script.find(" HORA_RANK=5 "), std::string::npos) << script;
  EXPECT_EQ(script.find("HORA_RANK=99"), std::string::npos) << script;
  EXPECT_EQ(script.find("s3cr3t"), std::string::npos) << "the secret never goes on a command line";
  EXPECT_NE(script.find(" ./train --lr '0.1 x'"), std::string::npos) << script;
  EXPECT_EQ(l.stdin_data, "s3cr3t\n");
}

TEST(MpirunCommand, BuildsTheHandOff) {
  MpirunRequest r;
  r.np = 4;
  r.local_cpus = 8;
  r.env_names = {"HORA_BACKEND", "HORA_TIMELINE"};
  r.command = {"./prog", "x"};
  EXPECT_EQ(mpirun_command(r),
            (std::vector<std::string>{"mpirun", "-np", "4", "-x", "HORA_BACKEND", "-x",
                                      "HORA_TIMELINE", "--tag-output", "./prog", "x"}));
}

TEST(MpirunCommand, AddsHostsRootAndOversubscribe) {
  MpirunRequest r;
  r.np = 4;
  r.local_cpus = 2;
  r.is_root = true;
  r.command = {"p"};
  auto cmd = mpirun_command(r);
  EXPECT_EQ(cmd, (std::vector<std::string>{"mpirun", "-np", "4", "--allow-run-as-root",
                                           "--oversubscribe", "--tag-output", "p"}));
  r.hosts = {{"a", 2}, {"b", 2}};
  r.all_hosts_local = false;
  r.is_root = false;
  cmd = mpirun_command(r);
  EXPECT_EQ(cmd,
            (std::vector<std::string>{"mpirun", "-np", "4", "-H", "a:2,b:2", "--tag-output", "p"}));
  r.oversubscribe = true;
  cmd = mpirun_command(r);
  EXPECT_NE(std::find(cmd.begin(), cmd.end(), "--oversubscribe"), cmd.end());
}

TEST(MpirunCommand, ExportsOnlyJobWideHoraVariables) {
  const std::vector<std::string> env = {"PATH=/bin",
                                        "HORA_RANK=1",
                                        "HORA_SECRET=x",
                                        "HORA_BACKEND=mpi",
                                        "HORA_RENDEZVOUS_PORT=1",
                                        "HORA_FUSION_THRESHOLD=1M",
                                        "HORAX=1"};
  EXPECT_EQ(exportable_hora_names(env),
            (std::vector<std::string>{"HORA_BACKEND", "HORA_FUSION_THRESHOLD"}));
}

}  // namespace
}  // namespace launcher
}  // namespace hora
