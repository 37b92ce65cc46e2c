#include "hora/status.h"

#include <gtest/gtest.h>

namespace hora {
namespace {

Status fails() { return Status::timeout("waiting for rank 3"); }
Status passes_through() {
  HORA_RETURN_IF_ERROR(fails());
  return Status::OK();
}
StatusOr<int> maybe(bool ok) {
  if (ok) return 7;
  return Status::invalid_argument("no value");
}
Status uses_assign(bool ok, int* out) {
  HORA_ASSIGN_OR_RETURN(int v, maybe(ok));
  *out = v;
  return Status::OK();
}

TEST(StatusTest, OkIsDefaultAndCheap) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.to_string(), "OK");
  EXPECT_EQ(sizeof(Status), sizeof(void*));
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  Status s = Status::mismatch("shape [4,5] on rank 0 but [4,6] on rank 1");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kMismatch);
  EXPECT_EQ(s.to_string(), "Mismatch: shape [4,5] on rank 0 but [4,6] on rank 1");
}

TEST(StatusTest, CopyIsDeep) {
  Status a = Status::io("disk");
  Status b = a;
  a = Status::OK();
  EXPECT_TRUE(a.ok());
  EXPECT_EQ(b.code(), StatusCode::kIo);
  EXPECT_EQ(b.message(), "disk");
}

TEST(StatusTest, ReturnIfErrorAddsLocation) {
  Status s = passes_through();
  EXPECT_EQ(s.code(), StatusCode::kTimeout);
  EXPECT_NE(s.message().find("waiting for rank 3"), std::string::npos);
  EXPECT_NE(s.message().find("status_test.cc:"), std::string::npos) << s.message();
}

TEST(StatusTest, StatusOrValueAndError) {
  int out = 0;
  EXPECT_TRUE(uses_assign(true, &out).ok());
  EXPECT_EQ(out, 7);
  Status s = uses_assign(false, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  StatusOr<int> from_ok{Status::OK()};
  EXPECT_EQ(from_ok.status().code(), StatusCode::kInternal);
}

TEST(StatusDeathTest, ValueOfErrorAborts) {
  StatusOr<int> bad = Status::remote("rank 2 left");
  EXPECT_DEATH(bad.value(), "rank 2 left");
}

TEST(StatusTest, EveryCodeHasAName) {
  for (int c = 0; c <= static_cast<int>(StatusCode::kInternal); ++c)
    EXPECT_STRNE(status_code_name(static_cast<StatusCode>(c)), "Unknown");
}

}  // namespace
}  // namespace hora
