// The op library's link to hora._core's engine: the HoraCApi table (adapters/python/c_api.h)
// that hora.tensorflow hands over with hora_tf_connect before any op runs. The library never
// links hora's engine itself, so a process has exactly one engine: hora._core's.
// Threads: connect once from Python (under the GIL); api() from any thread afterwards.
#pragma once

#include <cstdint>

#include "adapters/python/c_api.h"

extern "C" {
// Stores the table at `address` (hora._core.c_api_address()). Returns 0, or -1 when the
// table's version or size is not the one this library was built for (its ops then fail with
// a message saying so). Exported; called through ctypes.
int hora_tf_connect(uintptr_t address);
// The HORA_C_API_VERSION this library was built against.
int hora_tf_c_api_version(void);
}

namespace hora {
namespace tf_ops {

// The connected table, or nullptr before hora_tf_connect succeeded.
const HoraCApi* api();
// hora_tf_connect's body.
int connect(uintptr_t address);

}  // namespace tf_ops
}  // namespace hora
