// HORA_HIERARCHICAL_ALLREDUCE / _ALLGATHER: 0, 1, auto; HORA_ALLREDUCE_ALGO=hierarchical and
// the combinations that contradict each other.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/config.h"

namespace hora {
namespace {

StatusOr<Config> parse(const std::map<std::string, std::string>& env) {
  return Config::from_lookup([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(HierarchicalConfigTest, DefaultsToAuto) {
  Config c = parse({}).value();
  EXPECT_EQ(c.hierarchical_allreduce, HierarchicalMode::kAuto);
  EXPECT_EQ(c.hierarchical_allgather, HierarchicalMode::kAuto);
}

TEST(HierarchicalConfigTest, ZeroOneAutoAndBooleans) {
  const std::pair<const char*, HierarchicalMode> cases[] = {{"0", HierarchicalMode::kOff},
                                                            {"1", HierarchicalMode::kOn},
                                                            {"auto", HierarchicalMode::kAuto},
                                                            {"true", HierarchicalMode::kOn},
                                                            {"off", HierarchicalMode::kOff}};
  for (const auto& [value, mode] : cases) {
    auto c =
        parse({{"HORA_HIERARCHICAL_ALLREDUCE", value}, {"HORA_HIERARCHICAL_ALLGATHER", value}});
    ASSERT_TRUE(c.ok()) << value << ": " << c.status().to_string();
    EXPECT_EQ(c.value().hierarchical_allreduce, mode) << value;
    EXPECT_EQ(c.value().hierarchical_allgather, mode) << value;
  }
}

TEST(HierarchicalConfigTest, BadValueNamesVariableValueAndForm) {
  auto c = parse({{"HORA_HIERARCHICAL_ALLGATHER", "sometimes"}});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("HORA_HIERARCHICAL_ALLGATHER='sometimes'"), std::string::npos)
      << c.status().to_string();
  EXPECT_NE(c.status().message().find("0, 1 or auto"), std::string::npos);
}

TEST(HierarchicalConfigTest, AlgoHierarchicalMeansOnAndConflictsAreErrors) {
  auto on = parse({{"HORA_ALLREDUCE_ALGO", "hierarchical"}});
  ASSERT_TRUE(on.ok());
  EXPECT_EQ(on.value().allreduce_algo, AllreduceAlgo::kHierarchical);
  EXPECT_EQ(on.value().hierarchical_allreduce, HierarchicalMode::kOn);
  EXPECT_STREQ(allreduce_algo_name(AllreduceAlgo::kHierarchical), "hierarchical");

  auto off = parse({{"HORA_ALLREDUCE_ALGO", "hierarchical"}, {"HORA_HIERARCHICAL_ALLREDUCE", "0"}});
  ASSERT_FALSE(off.ok());
  EXPECT_NE(off.status().message().find("HORA_HIERARCHICAL_ALLREDUCE=0"), std::string::npos);

  auto ring = parse({{"HORA_ALLREDUCE_ALGO", "ring"}, {"HORA_HIERARCHICAL_ALLREDUCE", "1"}});
  ASSERT_FALSE(ring.ok());
  EXPECT_NE(ring.status().message().find("HORA_ALLREDUCE_ALGO=ring"), std::string::npos)
      << ring.status().to_string();
  // A fixed flat algorithm with hierarchical left on auto is that algorithm, flat.
  EXPECT_TRUE(parse({{"HORA_ALLREDUCE_ALGO", "ring"}}).ok());
}

}  // namespace
}  // namespace hora
