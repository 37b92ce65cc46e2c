// The NCCL multi-process tests' environment (nccl_mp_main.cc): the job's NCCL communicator,
// one rank per GPU.
#pragma once

#include "collectives/communicator.h"

namespace hora {
namespace mp {

// REQUIRES: called from a test body (main made the communicator first).
collectives::Communicator& nccl_mp_communicator();

}  // namespace mp
}  // namespace hora
