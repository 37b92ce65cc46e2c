// Host facts shared by the launcher and init: a fresh job secret and this host's first
// external IPv4 address. Thread-safe.
#pragma once

#include <string>

#include "core/base/status.h"

namespace hora {

// 32 random bytes from getrandom() (the kernel's CSPRNG), as 64 lowercase hex digits.
StatusOr<std::string> generate_secret();

// The first IPv4 address of an interface that is up and not loopback, or "" when none.
std::string first_external_ipv4();

}  // namespace hora
