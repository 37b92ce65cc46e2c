// main() of every multi-process GoogleTest binary (see mp_env.h).
//
// Exit status: 0 when every test passed on this rank; 1 when a test failed or init/shutdown
// failed (the message is printed); 77 (CTest's SKIP_RETURN_CODE for these tests) when
// HORA_BACKEND names a backend this build lacks, so a missing backend is a visible skip.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "collectives/backends/registry.h"
#include "core/context.h"
#include "core/context_access.h"
#include "hora/hora.h"
#include "tests/mp/mp_env.h"

namespace hora {
namespace mp {

collectives::Communicator& mp_communicator() {
  Context* context = detail::context();
  if (context == nullptr) {
    std::fprintf(stderr, "mp_communicator() called before hora::init\n");
    std::abort();
  }
  // The engine answers rounds over this communicator from init on: park it (every rank
  // reaches its first mp_communicator() call in the same test) until shutdown.
  static bool paused = false;
  if (!paused) {
    Status s = detail::pause_engine(std::chrono::seconds(120));
    if (!s.ok()) {
      std::fprintf(stderr, "mp_communicator(): pausing the engine: %s\n", s.to_string().c_str());
      std::abort();
    }
    paused = true;
  }
  return context->communicator();
}

}  // namespace mp
}  // namespace hora

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  constexpr int kSkip = 77;
  const char* backend = std::getenv("HORA_BACKEND");
  if (backend != nullptr && std::string(backend) != "auto" &&
      !hora::collectives::backend_available(backend)) {
    std::printf("SKIPPED: backend '%s' is not built into this hora\n", backend);
    return kSkip;
  }
  hora::Status status = hora::init();
  if (!status.ok()) {
    std::fprintf(stderr, "hora::init failed: %s\n", status.to_string().c_str());
    return 1;
  }
  int rc = RUN_ALL_TESTS();
  status = hora::shutdown();
  if (!status.ok()) {
    std::fprintf(stderr, "hora::shutdown failed: %s\n", status.to_string().c_str());
    rc = 1;
  }
  return rc == 0 ? 0 : 1;
}
