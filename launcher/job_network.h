// The rendezvous side of a job: the secret and the address that ranks use to reach the store.
//
// Local-only jobs bind the store to 127.0.0.1 and advertise 127.0.0.1. Multi-host jobs bind
// 0.0.0.0 and advertise, in this order: --rendezvous-addr; the local address that the kernel
// would use to route to the first remote host that resolves (a UDP connect(), no packet is
// sent); the first non-loopback IPv4 address of this host; 127.0.0.1.
// Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "core/base/host_identity.h"
#include "hora/status.h"

namespace hora {
namespace launcher {

// The job secret: hora::generate_secret (core/base/host_identity.h).
using ::hora::generate_secret;

// The address advertised to ranks on `remote_hosts` (see above).
std::string advertise_address(const std::vector<std::string>& remote_hosts);

}  // namespace launcher
}  // namespace hora
