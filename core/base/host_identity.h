// Host facts shared by the launcher, init and the backends: a fresh job secret, this host's
// first external IPv4 address, and the identity that tells whether two processes share a host.
// Thread-safe.
#pragma once

#include <string>

#include "hora/status.h"

namespace hora {

// 32 random bytes from getrandom() (the kernel's CSPRNG), as 64 lowercase hex digits.
StatusOr<std::string> generate_secret();

// The first IPv4 address of an interface that is up and not loopback, or "" when none.
std::string first_external_ipv4();

// What makes this process's host this host, as "<hostname>/<boot id>/net:<inode>": two
// processes with equal identities share memory (POSIX shm) and reach each other over
// loopback. The hostname alone is not enough (containers and copied images repeat it), hence
// the kernel's boot id; and processes in different network namespaces (containers, and the
// test hosts of tests/multihost/) cannot reach each other's loopback, hence the network
// namespace's inode (/proc/self/ns/net). Missing parts are left empty, never an error.
std::string host_identity();

}  // namespace hora
