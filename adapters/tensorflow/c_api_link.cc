#include "adapters/tensorflow/c_api_link.h"

#include <atomic>

namespace hora {
namespace tf_ops {
namespace {

// The one static of the op library: written once at connect, read by every kernel.
std::atomic<const HoraCApi*> g_api{nullptr};

}  // namespace

const HoraCApi* api() { return g_api.load(std::memory_order_acquire); }

int connect(uintptr_t address) {
  const auto* table = reinterpret_cast<const HoraCApi*>(address);
  if (table == nullptr || table->version != HORA_C_API_VERSION ||
      table->struct_bytes != sizeof(HoraCApi))
    return -1;
  g_api.store(table, std::memory_order_release);
  return 0;
}

}  // namespace tf_ops
}  // namespace hora

extern "C" int hora_tf_connect(uintptr_t address) { return hora::tf_ops::connect(address); }

extern "C" int hora_tf_c_api_version(void) { return HORA_C_API_VERSION; }
