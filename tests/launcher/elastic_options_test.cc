// Unit tests of horarun's elastic flags: what turns elastic mode on, the sizes' defaults and
// checks, and the errors for bad values.
#include <gtest/gtest.h>

#include "launcher/options.h"

namespace hora {
namespace launcher {
namespace {

LauncherOptions parse_ok(const std::vector<std::string>& args) {
  auto o = parse_options(args);
  EXPECT_TRUE(o.ok()) << o.status().message();
  return o.ok() ? o.value() : LauncherOptions{};
}

std::string parse_error(const std::vector<std::string>& args) {
  auto o = parse_options(args);
  return o.ok() ? "(parsed)" : o.status().message();
}

TEST(ElasticOptions, OffWithoutItsFlags) {
  EXPECT_FALSE(parse_ok({"-np", "2", "prog"}).elastic.enabled);
}

TEST(ElasticOptions, SizesDefaultAsHorovods) {
  LauncherOptions o = parse_ok({"--min-np", "2", "prog"});
  EXPECT_TRUE(o.elastic.enabled);
  EXPECT_EQ(o.np, 2);  // -np defaults to --min-np
  EXPECT_EQ(o.elastic.max_np, 0);
  o = parse_ok({"-np", "4", "--max-np", "8", "prog"});
  EXPECT_EQ(o.elastic.min_np, 4);  // --min-np defaults to -np
  EXPECT_EQ(o.elastic.max_np, 8);
  EXPECT_EQ(o.elastic.timeout_s, 600);
  EXPECT_EQ(o.elastic.reset_limit, -1);
  EXPECT_FALSE(o.elastic.cooldown_range);
}

TEST(ElasticOptions, AllFlags) {
  LauncherOptions o =
      parse_ok({"-np", "3", "--min-np", "2", "--max-np", "5", "--host-discovery-script",
                "./hosts.sh --all", "--elastic-timeout=30", "--reset-limit", "4",
                "--blacklist-cooldown-range", "10", "100", "prog", "arg"});
  EXPECT_EQ(o.elastic.discovery_script, "./hosts.sh --all");
  EXPECT_EQ(o.elastic.timeout_s, 30);
  EXPECT_EQ(o.elastic.reset_limit, 4);
  ASSERT_TRUE(o.elastic.cooldown_range);
  EXPECT_EQ(o.elastic.cooldown_range->first, 10);
  EXPECT_EQ(o.elastic.cooldown_range->second, 100);
  EXPECT_EQ(o.command, (std::vector<std::string>{"prog", "arg"}));
  EXPECT_TRUE(parse_ok({"--host-discovery-script", "d.sh", "-np", "1", "prog"}).elastic.enabled);
}

TEST(ElasticOptions, BadValuesAreNamed) {
  EXPECT_EQ(parse_error({"-np", "2", "--min-np", "3", "prog"}), "-np 2 is below --min-np 3");
  EXPECT_NE(parse_error({"-np", "4", "--max-np", "3", "prog"}).find("--max-np 3 is below -np 4"),
            std::string::npos);
  EXPECT_NE(parse_error({"-np", "2", "--min-np", "x", "prog"}).find("--min-np 'x'"),
            std::string::npos);
  EXPECT_NE(parse_error({"--min-np", "1", "--elastic-timeout", "0", "prog"})
                .find("expected a number of seconds > 0"),
            std::string::npos);
  EXPECT_NE(parse_error({"--min-np", "1", "--reset-limit", "-1", "prog"}).find("--reset-limit"),
            std::string::npos);
  EXPECT_NE(parse_error({"--min-np", "1", "--blacklist-cooldown-range", "5", "prog"})
                .find("--blacklist-cooldown-range 'prog': expected a number of seconds >= 0"),
            std::string::npos);
  EXPECT_EQ(parse_error({"--min-np", "1", "prog", "--blacklist-cooldown-range", "5"}),
            "(parsed)");  // after the program: its own arguments
  EXPECT_NE(parse_error({"--min-np", "1", "--blacklist-cooldown-range", "5"}).find("needs two"),
            std::string::npos);
  EXPECT_NE(
      parse_error({"--min-np", "1", "--host-discovery-script", " ", "prog"}).find("empty command"),
      std::string::npos);
  EXPECT_NE(parse_error({"-np", "2", "--elastic-timeout", "5", "prog"}).find("need elastic mode"),
            std::string::npos);
  EXPECT_NE(parse_error({"--min-np", "2", "--mpi", "prog"}).find("cannot be used with --mpi"),
            std::string::npos);
}

}  // namespace
}  // namespace launcher
}  // namespace hora
