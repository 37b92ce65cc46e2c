// init_probe: calls hora::init, prints the layout (or the error) and shuts down. Used by the
// init-failure test (a rank that never starts) and as the smallest `horarun -np N` program.
// Exit: 0 on success, 1 when init or shutdown failed.
#include <cstdio>

#include "hora/hora.h"

int main() {
  hora::Status status = hora::init();
  if (!status.ok()) {
    std::fprintf(stderr, "init_probe: hora::init failed: %s\n", status.to_string().c_str());
    return 1;
  }
  std::printf("init_probe: rank %d of %d (local %d of %d, cross %d of %d)\n", hora::rank(),
              hora::size(), hora::local_rank(), hora::local_size(), hora::cross_rank(),
              hora::cross_size());
  status = hora::shutdown();
  if (!status.ok()) {
    std::fprintf(stderr, "init_probe: hora::shutdown failed: %s\n", status.to_string().c_str());
    return 1;
  }
  return 0;
}
