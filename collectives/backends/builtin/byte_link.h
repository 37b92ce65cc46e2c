// ByteLink: a nonblocking, ordered, reliable byte stream between this rank and one peer
// (a pair of shared-memory rings, a TCP connection, or an in-memory loopback for the rank
// itself). The progress engine (peer_engine.h) frames messages on top of it.
//
// Threads: used by one thread at a time (the communicator's), except wake() which any
// thread may call.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hora/status.h"

namespace hora {
namespace collectives {
namespace builtin {

struct ConstSpan {
  const void* data;
  size_t bytes;
};

class ByteLink {
 public:
  virtual ~ByteLink() = default;

  // Writes a prefix of the concatenation of `spans` (at most `count` of them) without
  // blocking; returns the bytes written (0 when there is no room now). An error means the
  // link is broken for good (kRemote when the peer went away, naming it).
  virtual StatusOr<size_t> write_some(const ConstSpan* spans, int count) = 0;
  // Reads up to `bytes` without blocking; returns the bytes read (0 when none are there).
  virtual StatusOr<size_t> read_some(void* data, size_t bytes) = 0;

  // The socket to poll(2) on for this link, or -1 for links that are waited on through the
  // shared-memory doorbell (shm) or never wait (loopback).
  virtual int fd() const { return -1; }
  // Checks that the peer is still alive (shm: its process exists). Cheap but not free: called
  // only after a wait made no progress for a while.
  virtual Status check_alive() { return Status::OK(); }
  // The peer's process id where this link knows it (shared memory on this host), else 0.
  virtual int32_t peer_pid() const { return 0; }
  // "shm", "tcp" or "self".
  virtual const char* kind() const = 0;
};

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
