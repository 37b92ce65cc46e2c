// A program built against an installed hora (tests/packaging/consumer_test.sh runs it under
// the installed horarun): init, an allreduce of a formula over every rank, an exact check,
// shutdown. Exits non-zero on any error or wrong element.
#include <hora/distributed_optimizer.h>  // compiled only: the adapter's headers install
#include <hora/hora.h>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

int fail(const char* what, const hora::Status& status) {
  std::fprintf(stderr, "hora_consumer: %s: %s\n", what, status.to_string().c_str());
  return 1;
}

}  // namespace

int main() {
  hora::Status status = hora::init();
  if (!status.ok()) return fail("init", status);
  const int rank = hora::rank();
  const int size = hora::size();

  // x[i] = (rank + 1) * i on each rank, so the sum is i * size * (size + 1) / 2: integers
  // well inside float's exact range, compared exactly.
  constexpr int64_t kCount = 1000;
  std::vector<float> x(kCount);
  for (int64_t i = 0; i < kCount; ++i) x[i] = static_cast<float>((rank + 1) * i);
  auto view = hora::TensorView::flat(x.data(), hora::DataType::kFloat32, kCount);
  if (!view.ok()) return fail("TensorView::flat", view.status());
  status = hora::allreduce("consumer.x", view.value(), view.value(), hora::ReduceOp::kSum);
  if (!status.ok()) return fail("allreduce", status);

  int64_t wrong = 0;
  for (int64_t i = 0; i < kCount; ++i) {
    const float expected = static_cast<float>(i * size * (size + 1) / 2);
    if (x[i] != expected && wrong++ == 0) {
      std::fprintf(stderr, "hora_consumer: rank %d: x[%lld] = %g, expected %g\n", rank,
                   static_cast<long long>(i), x[i], expected);
    }
  }
  status = hora::shutdown();
  if (!status.ok()) return fail("shutdown", status);
  if (wrong != 0) return 1;
  std::printf("hora_consumer: rank %d of %d: allreduce of %lld floats ok\n", rank, size,
              static_cast<long long>(kCount));
  return 0;
}
