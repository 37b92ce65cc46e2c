#include "launcher/options.h"

#include <gtest/gtest.h>

namespace hora {
namespace launcher {
namespace {

TEST(Options, ParsesEveryFlag) {
  auto o = parse_options({"-np",
                          "4",
                          "-H",
                          "a:2,b:2",
                          "--rsh",
                          "ssh -p 2",
                          "--backend",
                          "gloo",
                          "--timeline-filename",
                          "t.json",
                          "--output-dir=logs",
                          "--start-timeout",
                          "7.5",
                          "--grace",
                          "0",
                          "--verbose",
                          "--rendezvous-addr",
                          "10.0.0.1",
                          "--",
                          "prog",
                          "-np",
                          "x"});
  ASSERT_TRUE(o.ok()) << o.status().to_string();
  EXPECT_EQ(o->np, 4);
  EXPECT_EQ(o->hosts, "a:2,b:2");
  EXPECT_EQ(o->rsh, "ssh -p 2");
  EXPECT_EQ(o->backend, "gloo");
  EXPECT_FALSE(o->use_mpirun);
  EXPECT_EQ(o->timeline, "t.json");
  EXPECT_EQ(o->output_dir, "logs");
  EXPECT_DOUBLE_EQ(*o->start_timeout_s, 7.5);
  EXPECT_DOUBLE_EQ(o->grace_s, 0.0);
  EXPECT_TRUE(o->verbose);
  EXPECT_EQ(o->rendezvous_addr, "10.0.0.1");
  EXPECT_EQ(o->command, (std::vector<std::string>{"prog", "-np", "x"}));
}

TEST(Options, ProgramEndsTheOptionsWithoutDoubleDash) {
  auto o = parse_options({"-np", "2", "python3", "train.py", "--verbose"});
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(o->verbose);
  EXPECT_EQ(o->command, (std::vector<std::string>{"python3", "train.py", "--verbose"}));
}

TEST(Options, MpiSpellings) {
  EXPECT_TRUE(parse_options({"-np", "2", "--mpi", "p"})->use_mpirun);
  EXPECT_TRUE(parse_options({"-np", "2", "--backend", "mpi", "p"})->use_mpirun);
  EXPECT_TRUE(parse_options({"-n", "2", "--timeline", "t", "p"}).ok());
  EXPECT_TRUE(parse_options({"--help"})->help);
}

TEST(Options, RejectsBadInvocations) {
  const std::vector<std::vector<std::string>> bad = {
      {"-np", "0", "p"},
      {"-np", "-1", "p"},
      {"-np", "1.5", "p"},
      {"-np", "", "p"},
      {"-np"},
      {"p"},
      {"-np", "2"},
      {"--bogus", "-np", "2", "p"},
      {"-np", "2", "--backend", "x", "p"},
      {"-np", "2", "--start-timeout", "0", "p"},
      {"-np", "2", "--grace", "abc", "p"},
      {"-np", "2", "--verbose=1", "p"},
      {"-np", "2", "-H", "a", "--hostfile", "f", "p"},
      {"-np", "2", "--rsh", " ", "p"},
      {"-np", "99999999999", "p"}};
  for (const auto& args : bad) {
    auto o = parse_options(args);
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_FALSE(o.ok()) << "accepted: " << joined;
    if (!o.ok()) {
      EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(o.status().message().find("(at "), std::string::npos) << o.status().message();
    }
  }
}

}  // namespace
}  // namespace launcher
}  // namespace hora
