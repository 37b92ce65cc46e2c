// Test fixtures that run a test once per kernel ISA: SetUp selects the ISA (and skips,
// visibly, when this CPU lacks it); TearDown restores the best one.
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <tuple>

#include "hora/data_type.h"
#include "hora/reduce_op.h"
#include "kernels/kernels.h"

namespace hora {
namespace kernels {
// Readable parameters in gtest messages ("avx2" rather than "1-byte object <01>").
inline void PrintTo(Isa isa, std::ostream* out) { *out << isa_name(isa); }
}  // namespace kernels
inline void PrintTo(DataType dtype, std::ostream* out) { *out << data_type_name(dtype); }
inline void PrintTo(ReduceOp op, std::ostream* out) { *out << reduce_op_name(op); }

namespace kernels_test {

inline const kernels::Isa kAllIsas[] = {kernels::Isa::kScalar, kernels::Isa::kAvx2,
                                        kernels::Isa::kAvx512};

// Selects `isa` for the current test; returns false (after GTEST_SKIP) when unsupported.
#define HORA_SELECT_ISA_OR_SKIP(isa)                                                      \
  do {                                                                                    \
    if (!::hora::kernels::select_isa(isa)) {                                              \
      GTEST_SKIP() << "this CPU lacks " << ::hora::kernels::isa_name(isa) << ": skipped"; \
    }                                                                                     \
  } while (0)

class IsaTest : public ::testing::TestWithParam<kernels::Isa> {
 protected:
  void SetUp() override { HORA_SELECT_ISA_OR_SKIP(GetParam()); }
  void TearDown() override { kernels::select_isa(kernels::best_isa()); }
};

inline std::string isa_param_name(const ::testing::TestParamInfo<kernels::Isa>& info) {
  return kernels::isa_name(info.param);
}

// A test run once per (ISA, dtype, op): SetUp selects the ISA as IsaTest does.
class IsaDtypeOpTest
    : public ::testing::TestWithParam<std::tuple<kernels::Isa, DataType, ReduceOp>> {
 protected:
  void SetUp() override { HORA_SELECT_ISA_OR_SKIP(std::get<0>(GetParam())); }
  void TearDown() override { kernels::select_isa(kernels::best_isa()); }
  DataType dtype() const { return std::get<1>(GetParam()); }
  ReduceOp op() const { return std::get<2>(GetParam()); }
  size_t elem() const { return data_type_bytes(dtype()); }
};

// Every dtype but bool, which has min, max and product only (no sum, average or scale).
inline const DataType kNonBoolDtypes[] = {
    DataType::kUint8,   DataType::kInt8,   DataType::kInt16,   DataType::kUint16,
    DataType::kInt32,   DataType::kInt64,  DataType::kFloat16, DataType::kBFloat16,
    DataType::kFloat32, DataType::kFloat64};

// (Isa, DataType, ReduceOp) for every ISA and the ops bool has: min (and), max (or) and
// product (and).
inline auto bool_reduce_params() {
  return ::testing::Combine(::testing::ValuesIn(kAllIsas), ::testing::Values(DataType::kBool),
                            ::testing::Values(ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct));
}

// "<isa>_<dtype>_<op>" for a test parameterised by (Isa, DataType, ReduceOp).
template <class Param>
std::string isa_dtype_op_name(const ::testing::TestParamInfo<Param>& info) {
  return std::string(kernels::isa_name(std::get<0>(info.param))) + "_" +
         data_type_name(std::get<1>(info.param)) + "_" + reduce_op_name(std::get<2>(info.param));
}

}  // namespace kernels_test
}  // namespace hora
