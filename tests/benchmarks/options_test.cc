// hora-bench's argument validation: defaults, nccl-tests' flags, and one clear error for each
// bad argument.
#include "benchmarks/hora_bench/options.h"

#include <gtest/gtest.h>

namespace hora {
namespace bench {
namespace {

Status error_of(const std::vector<std::string>& args) {
  auto o = parse_options(args);
  return o.ok() ? Status::OK() : o.status();
}

void expect_bad(const std::vector<std::string>& args, const std::string& needle) {
  Status s = error_of(args);
  ASSERT_FALSE(s.ok()) << "accepted: " << args.size() << " args";
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << "not one line: " << s.message();
}

TEST(OptionsTest, Defaults) {
  auto o = parse_options({"allreduce"});
  ASSERT_TRUE(o.ok()) << o.status().to_string();
  EXPECT_EQ(o->collective, Collective::kAllreduce);
  EXPECT_EQ(o->min_bytes, 32u << 20);
  EXPECT_EQ(o->max_bytes, 32u << 20);
  EXPECT_EQ(o->dtype, DataType::kFloat32);
  EXPECT_EQ(o->op, ReduceOp::kSum);
  EXPECT_FALSE(o->op_given);
  EXPECT_TRUE(o->check);
  EXPECT_EQ(o->algo, collectives::Algorithm::kAuto);
  EXPECT_TRUE(o->compare.empty());
}

TEST(OptionsTest, DeviceCudaRunsHoraOverNcclBesideNccl) {
  auto o = parse_options({"allreduce", "--device", "cuda", "--compare", "nccl"});
  ASSERT_TRUE(o.ok()) << o.status().to_string();
  EXPECT_TRUE(o->device.is_cuda());
  EXPECT_EQ(o->device.index, -1);  // this rank's GPU, chosen from its local rank
  EXPECT_EQ(o->backend, "nccl");
  EXPECT_EQ(o->compare, std::vector<std::string>{"nccl"});
  auto explicit_gpu = parse_options({"allgather", "--device", "cuda:3", "--backend", "nccl"});
  ASSERT_TRUE(explicit_gpu.ok()) << explicit_gpu.status().to_string();
  EXPECT_EQ(explicit_gpu->device, Device::cuda(3));
  auto host = parse_options({"allreduce"});
  ASSERT_TRUE(host.ok());
  EXPECT_TRUE(host->device.is_cpu());
}

TEST(OptionsTest, DeviceCudaRefusesWhatCannotTouchGpuBuffers) {
  expect_bad({"allreduce", "--compare", "nccl"}, "--compare nccl needs --device cuda");
  expect_bad({"allreduce", "--device", "cuda", "--compare", "gloo"}, "only hora and nccl");
  expect_bad({"allreduce", "--device", "cuda", "--backend", "gloo"}, "nccl only");
  expect_bad({"allreduce", "--device", "gpu"}, "--device");
}

TEST(OptionsTest, NcclTestsFlags) {
  auto o =
      parse_options({"allreduce", "-b",     "8",     "-e",     "128M",   "-f",        "4",
                     "-d",        "half",   "-o",    "max",    "-n",     "7",         "-w",
                     "0",         "-c",     "0",     "--algo", "ring",   "--compare", "hora,gloo",
                     "--json",    "r.json", "--csv", "r.csv",  "--plot", "p.svg"});
  ASSERT_TRUE(o.ok()) << o.status().to_string();
  EXPECT_EQ(o->min_bytes, 8u);
  EXPECT_EQ(o->max_bytes, 128u << 20);
  EXPECT_EQ(o->step_factor, 4.0);
  EXPECT_EQ(o->dtype, DataType::kFloat16);
  EXPECT_EQ(o->op, ReduceOp::kMax);
  EXPECT_EQ(o->iters, 7);
  EXPECT_EQ(o->warmup, 0);
  EXPECT_FALSE(o->check);
  EXPECT_EQ(o->algo, collectives::Algorithm::kRing);
  EXPECT_EQ(o->compare, (std::vector<std::string>{"hora", "gloo"}));
  EXPECT_EQ(o->plot_path, "p.svg");
  auto prod = parse_options({"reducescatter", "-o", "prod", "-d", "int32"});
  ASSERT_TRUE(prod.ok()) << prod.status().to_string();
  EXPECT_EQ(prod->op, ReduceOp::kProduct);
  auto step = parse_options({"broadcast", "-b", "1K", "-e", "4K", "-i", "1K", "-r", "1"});
  ASSERT_TRUE(step.ok()) << step.status().to_string();
  EXPECT_EQ(step->step_bytes, 1024u);
  EXPECT_EQ(step->root, 1);
  EXPECT_EQ(step->rounds, 1);
  auto rounds = parse_options({"allreduce", "--rounds", "3"});
  ASSERT_TRUE(rounds.ok()) << rounds.status().to_string();
  EXPECT_EQ(rounds->rounds, 3);
  EXPECT_EQ(rounds->min_ms, 0);
  auto min_ms = parse_options({"allreduce", "--min-ms", "2.5"});
  ASSERT_TRUE(min_ms.ok()) << min_ms.status().to_string();
  EXPECT_DOUBLE_EQ(min_ms->min_ms, 2.5);
}

TEST(OptionsTest, BadArguments) {
  expect_bad({"allreduce", "-b", "1M", "-e", "1K"}, "larger than -e");
  expect_bad({"allreduce", "-d", "float128"}, "float128");
  expect_bad({"allreduce", "-o", "xor"}, "xor");
  expect_bad({"allgather", "-o", "sum"}, "not valid for allgather");
  expect_bad({"broadcast", "-o", "max"}, "not valid for broadcast");
  expect_bad({"allreduce", "-o", "avg", "-d", "int32"}, "floating");
  expect_bad({"allreduce", "-f", "1"}, "greater than 1");
  expect_bad({"allreduce", "-f", "2", "-i", "1K"}, "exclude");
  expect_bad({"allreduce", "-n", "0"}, "-n 0");
  expect_bad({"allreduce", "-w", "-1"}, "-w -1");
  expect_bad({"allreduce", "--rounds", "0"}, "--rounds 0");
  expect_bad({"allreduce", "--min-ms", "-1"}, "--min-ms -1");
  expect_bad({"allreduce", "--min-ms", "1e9"}, "60000");
  expect_bad({"allreduce", "--min-ms", "nan"}, "--min-ms");
  expect_bad({"allreduce", "-c", "2"}, "-c 2");
  expect_bad({"allreduce", "--algo", "bogus"}, "bogus");
  expect_bad({"allgather", "--algo", "ring"}, "allreduce only");
  expect_bad({"allreduce", "--backend", "nccl"}, "nccl");
  expect_bad({"allreduce", "--compare", "hora,ucc"}, "ucc");
  expect_bad({"allgather", "--compare", "wire"}, "allreduce only");
  expect_bad({"allreduce", "--plot", "p.png"}, ".svg");
  expect_bad({"alltoall", "--through-engine"}, "allreduce only");
  expect_bad({"gatherall"}, "gatherall");
  expect_bad({}, "collective");
  expect_bad({"allreduce", "--frobnicate"}, "frobnicate");
  expect_bad({"allreduce", "-b", "12Q"}, "12Q");
}

TEST(OptionsTest, Int16Uint16AndBool) {
  auto b = parse_options({"allreduce", "-d", "bool", "-o", "min"});
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ(b->dtype, DataType::kBool);
  EXPECT_EQ(b->op, ReduceOp::kMin);
  EXPECT_TRUE(parse_options({"allgather", "-d", "bool"}).ok());
  EXPECT_TRUE(parse_options({"reducescatter", "-d", "bool", "-o", "prod"}).ok());
  EXPECT_EQ(parse_options({"allreduce", "-d", "int16"})->dtype, DataType::kInt16);
  EXPECT_EQ(parse_options({"allreduce", "-d", "u16", "-o", "max"})->dtype, DataType::kUint16);
  expect_bad({"allreduce", "-d", "bool"}, "-o min, max or prod");  // the default -o sum
  expect_bad({"reducescatter", "-d", "bool", "-o", "avg"}, "reducescatter of bool");
}

TEST(OptionsTest, RootMustBeARank) {
  auto o = parse_options({"broadcast", "-r", "3"});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(validate_for_job(o.value(), 4).ok());
  Status s = validate_for_job(o.value(), 3);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("0..2"), std::string::npos) << s.message();
}

TEST(OptionsTest, SweepSizes) {
  auto o = parse_options({"allreduce", "-b", "8", "-e", "64", "-f", "2"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(sweep_sizes(o.value()), (std::vector<size_t>{8, 16, 32, 64}));
  auto i = parse_options({"allreduce", "-b", "1K", "-e", "3500", "-i", "1K"});
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(sweep_sizes(i.value()), (std::vector<size_t>{1024, 2048, 3072}));
  auto one = parse_options({"allreduce", "-b", "1M", "-e", "1M"});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(sweep_sizes(one.value()), (std::vector<size_t>{1u << 20}));
  auto zero = parse_options({"allreduce", "-b", "0", "-e", "4"});
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(sweep_sizes(zero.value()), (std::vector<size_t>{0, 1, 2, 4}));
}

}  // namespace
}  // namespace bench
}  // namespace hora
