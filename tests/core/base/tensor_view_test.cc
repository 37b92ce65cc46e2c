#include "hora/tensor_view.h"

#include <gtest/gtest.h>

#include <limits>

namespace hora {
namespace {

TEST(TensorViewTest, CountsElementsAndBytes) {
  float data[20];
  auto v = TensorView::make(data, DataType::kFloat32, {4, 5});
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->element_count(), 20);
  EXPECT_EQ(v->byte_count(), 80);
  EXPECT_EQ(v->shape_string(), "[4,5]");
  EXPECT_TRUE(v->device().is_cpu());
}

TEST(TensorViewTest, ScalarAndEmpty) {
  double x = 1;
  EXPECT_EQ(TensorView::make(&x, DataType::kFloat64, {}).value().element_count(), 1);
  auto empty = TensorView::make(nullptr, DataType::kInt8, {3, 0});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->element_count(), 0);
  EXPECT_EQ(empty->byte_count(), 0);
}

TEST(TensorViewTest, NegativeDimensionIsError) {
  float x;
  auto v = TensorView::make(&x, DataType::kFloat32, {2, -5});
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(v.status().message().find("-5"), std::string::npos);
}

TEST(TensorViewTest, OverflowIsError) {
  float x;
  const int64_t big = int64_t{1} << 40;
  EXPECT_FALSE(TensorView::make(&x, DataType::kFloat32, {big, big}).ok());
  const int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_FALSE(TensorView::flat(&x, DataType::kFloat64, max / 4).ok());
  EXPECT_TRUE(TensorView::flat(&x, DataType::kUint8, max).ok());
}

TEST(TensorViewTest, NullDataWithElementsIsError) {
  EXPECT_FALSE(TensorView::flat(nullptr, DataType::kFloat32, 3).ok());
}

TEST(TensorViewTest, ShapeInlineAndBeyondSurvivesCopiesAndMoves) {
  float x[1];
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{1, 1, 1}, std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 1}}) {
    auto v = TensorView::make(x, DataType::kFloat32, dims);
    ASSERT_TRUE(v.ok());
    const TensorView a = v.value();
    TensorView b;
    b = a;
    EXPECT_EQ(b.shape(), dims);
    EXPECT_EQ(std::vector<int64_t>(b.shape()), dims);
    TensorView c = std::move(b);
    EXPECT_EQ(c.shape(), dims);
    c = a;  // into a view that held the same shape
    EXPECT_EQ(c.shape().size(), dims.size());
    TensorView d = TensorView::flat(x, DataType::kFloat32, 1).value();
    d = std::move(c);  // inline -> inline or heap
    EXPECT_EQ(d.shape(), dims);
    d = TensorView::flat(x, DataType::kFloat32, 1).value();  // back to inline
    EXPECT_EQ(d.shape_string(), "[1]");
    EXPECT_EQ(a.shape_string(), shape_to_string(dims));
  }
}

}  // namespace
}  // namespace hora
