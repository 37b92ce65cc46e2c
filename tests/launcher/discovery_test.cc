// Unit tests of host discovery: the output format, and DiscoveryScript running real /bin/sh
// commands (success, a failing script, one that outlives its limit).
#include "launcher/discovery.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <thread>

#include "launcher/job_start.h"

namespace hora {
namespace launcher {
namespace {

TEST(ParseDiscovery, HostsSlotsCommentsAndBadLines) {
  DiscoveryResult r =
      parse_discovery_output("a:2\n\n# comment\n  b  \nc:x\nd:0\n:3\na:5\ne f:1\ng=1:2\n");
  ASSERT_TRUE(r.ok);
  ASSERT_EQ(r.hosts.size(), 2u);
  EXPECT_EQ(r.hosts[0].host, "a");
  EXPECT_EQ(r.hosts[0].slots, 2);
  EXPECT_EQ(r.hosts[1].host, "b");
  EXPECT_EQ(r.hosts[1].slots, 1);
  ASSERT_EQ(r.warnings.size(), 6u);
  EXPECT_EQ(r.warnings[0], "line 5 'c:x': expected host:slots (slots a positive integer)");
  EXPECT_NE(r.warnings[1].find("'d:0'"), std::string::npos);
  EXPECT_NE(r.warnings[2].find("':3'"), std::string::npos);
  EXPECT_EQ(r.warnings[3], "line 8 'a:5': host a listed twice, first kept");
  EXPECT_NE(r.warnings[4].find("'e f:1'"), std::string::npos);
  EXPECT_NE(r.warnings[5].find("'g=1:2'"), std::string::npos);
}

TEST(ParseDiscovery, EmptyOutputIsNoHosts) {
  DiscoveryResult r = parse_discovery_output("");
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(r.hosts.empty());
  EXPECT_TRUE(r.warnings.empty());
}

// Polls `script` until a run ends (10 s at most), reaping its shell.
std::optional<DiscoveryResult> run_once(DiscoveryScript& script) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const double now =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (auto r = script.poll(now + 100)) {
      while (::waitpid(-1, nullptr, WNOHANG) > 0) {
      }
      return r;
    }
    if (now > 10) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

TEST(DiscoveryScript, ReportsHostsWarningsAndStderr) {
  DiscoveryScript script("echo a:2; echo 'x y'; echo oops >&2; echo b:1", current_environment(),
                         10);
  auto r = run_once(script);
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->ok) << r->error;
  ASSERT_EQ(r->hosts.size(), 2u);
  EXPECT_EQ(r->hosts[1].host, "b");
  ASSERT_EQ(r->warnings.size(), 2u);
  EXPECT_EQ(r->warnings[0], "stderr: oops");
  EXPECT_NE(r->warnings[1].find("'x y'"), std::string::npos);
}

TEST(DiscoveryScript, FailingScriptIsAFailedRun) {
  DiscoveryScript script("echo a:2; exit 3", current_environment(), 10);
  auto r = run_once(script);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->ok);
  EXPECT_EQ(r->error, "failed (exit code 3)");
}

TEST(DiscoveryScript, RunPastItsLimitIsKilled) {
  DiscoveryScript script("sleep 30", current_environment(), 0.3);
  auto r = run_once(script);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->ok);
  EXPECT_NE(r->error.find("still running after 0.3 s"), std::string::npos) << r->error;
}

}  // namespace
}  // namespace launcher
}  // namespace hora
