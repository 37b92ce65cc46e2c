// GradientReducer without a running job: create's validation, misuse errors naming the
// parameter, pass counting (overlap off, so nothing is enqueued until synchronize), and what
// synchronize reports when the engine refuses (hora is not initialised here).
#include "hora/gradient_reducer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hora {
namespace {

std::vector<std::string> names() { return {"fc1.weight", "fc1.bias", "fc2.weight"}; }

Status create_error(std::vector<std::string> n, GradientReducerOptions o) {
  return GradientReducer::create(std::move(n), std::move(o)).status();
}

bool contains(const Status& s, const std::string& text) {
  return s.message().find(text) != std::string::npos;
}

TEST(GradientReducerCreate, RejectsBadNamesOptionsAndGroups) {
  GradientReducerOptions o;
  EXPECT_TRUE(GradientReducer::create(names(), o).ok());
  Status s = create_error({"a", ""}, o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(s, "parameter 1 of 2 has no name")) << s.to_string();
  s = create_error({"w", "w"}, o);
  EXPECT_TRUE(contains(s, "'w' appears twice")) << s.to_string();

  o.op = ReduceOp::kMax;
  EXPECT_TRUE(contains(create_error(names(), o), "op max, expected average, sum or adasum"));
  o = {};
  o.backward_passes_per_step = 0;
  EXPECT_TRUE(contains(create_error(names(), o), "backward_passes_per_step is 0"));
  o = {};
  o.gradient_predivide_factor = 0.0;
  EXPECT_EQ(create_error(names(), o).code(), StatusCode::kInvalidArgument);
  o = {};
  o.op = ReduceOp::kSum;
  o.gradient_predivide_factor = 2.0;
  EXPECT_TRUE(contains(create_error(names(), o), "needs op average"));
  o = {};
  o.compression = static_cast<Compression>(7);
  EXPECT_TRUE(contains(create_error(names(), o), "compression code 7"));

  o = {};
  o.groups = {{0, 3}};
  s = create_error(names(), o);
  EXPECT_TRUE(contains(s, "group 0 lists parameter 3 but there are 3 parameters")) << s.message();
  o.groups = {{0, 1}, {2, 1}};
  s = create_error(names(), o);
  EXPECT_TRUE(contains(s, "'fc1.bias' (index 1) is listed in group 0 and again in group 1"))
      << s.message();
  o.groups = {{0}, {}};
  EXPECT_TRUE(contains(create_error(names(), o), "group 1 is empty"));
}

TEST(GradientReducerMisuse, UnknownNamesIndicesAndDtypesNameTheParameter) {
  GradientReducerOptions o;
  o.compression = Compression::kFloat16;
  o.overlap_backward = false;
  auto r = GradientReducer::create(names(), o).value();
  EXPECT_EQ(r->parameter_count(), 3u);
  EXPECT_EQ(r->index_of("fc1.bias").value(), 1u);
  std::vector<float> g(4);
  TensorView grad = TensorView::flat(g.data(), DataType::kFloat32, 4).value();
  Status s = r->gradient_ready("conv.weight", grad);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(s, "'conv.weight'")) << s.message();
  s = r->gradient_ready(3, grad);
  EXPECT_TRUE(contains(s, "parameter index 3 is out of range")) << s.message();
  std::vector<double> d(4);
  TensorView wide = TensorView::flat(d.data(), DataType::kFloat64, 4).value();
  s = r->gradient_ready(2, wide);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(s, "'fc2.weight' is float64 but compression fp16 applies to float32"))
      << s.message();
  EXPECT_EQ(r->flush(2, wide).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(r->has_pending());
}

TEST(GradientReducerMisuse, APassPastTheStepIsAFailedPrecondition) {
  GradientReducerOptions o;
  o.backward_passes_per_step = 2;
  o.overlap_backward = false;  // only counts: nothing reaches the engine before synchronize
  auto r = GradientReducer::create(names(), o).value();
  std::vector<float> g(4);
  TensorView grad = TensorView::flat(g.data(), DataType::kFloat32, 4).value();
  EXPECT_TRUE(r->gradient_ready(0, grad).ok());
  EXPECT_TRUE(r->has_pending());
  EXPECT_TRUE(r->gradient_ready("fc1.weight", grad).ok());
  Status s = r->gradient_ready(0, grad);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(contains(s, "'fc1.weight' was computed more than backward_passes_per_step (2)"))
      << s.message();
  // Nothing was enqueued: every parameter is still unreported.
  EXPECT_EQ(r->unreported(), (std::vector<size_t>{0, 1, 2}));
}

TEST(GradientReducerSync, EngineRefusalIsReportedAtOnceAndBySynchronize) {
  // hora is not initialised: the enqueue fails, gradient_ready says so, and synchronize
  // returns that first error once, then the step is over.
  GradientReducerOptions o;
  auto r = GradientReducer::create(names(), o).value();
  std::vector<float> g(4);
  TensorView grad = TensorView::flat(g.data(), DataType::kFloat32, 4).value();
  Status s = r->gradient_ready(1, grad);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(contains(s, "grad/fc1.bias")) << s.message();
  EXPECT_EQ(r->unreported(), (std::vector<size_t>{0, 2}));
  EXPECT_TRUE(r->flush(0, grad).code() == StatusCode::kFailedPrecondition);
  EXPECT_TRUE(r->flush(0, grad).ok());  // already enqueued: a no-op
  s = r->synchronize();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(contains(s, "before hora::init()")) << s.message();
  EXPECT_FALSE(r->has_pending());
  EXPECT_TRUE(r->synchronize().ok());  // an empty step
  EXPECT_TRUE(r->synchronize(std::chrono::milliseconds(1)).ok());
}

TEST(GradientReducerSync, GroupWaitsForItsLastMember) {
  GradientReducerOptions o;
  o.groups = {{0, 2}};
  auto r = GradientReducer::create(names(), o).value();
  std::vector<float> g(4);
  TensorView grad = TensorView::flat(g.data(), DataType::kFloat32, 4).value();
  EXPECT_TRUE(r->gradient_ready(2, grad).ok());  // waits for parameter 0
  EXPECT_EQ(r->unreported(), (std::vector<size_t>{0, 1, 2}));
  Status s = r->gradient_ready(0, grad);  // completes the group: enqueued (and refused)
  EXPECT_TRUE(contains(s, "grouped allreduce")) << s.message();
  EXPECT_EQ(r->unreported(), (std::vector<size_t>{1}));
  EXPECT_EQ(r->synchronize().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace hora
