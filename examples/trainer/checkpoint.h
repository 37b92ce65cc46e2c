// Checkpoints: a model's parameters and its optimizer's state in one file, with a format
// check on load.
//
// Format (little-endian): "HORACKPT", u32 version (1), u32 entry count, i64 epoch; then per
// entry u8 kind (0 parameter, 1 optimizer state), u32 name bytes, the name, i64 element
// count, the float32 values; then u64 FNV-1a of every byte before it. Saving writes
// "<path>.tmp" and renames it, so a crash never leaves a half-written checkpoint at `path`.
//
// Thread-safe (no shared state); concurrent saves to one path are the caller's problem.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hora/optimizer.h"
#include "hora/status.h"

namespace hora {
namespace trainer {

// Writes params' values and `state` (Optimizer::state()) with `epoch`. kIo on a failed write,
// naming the path and errno's text.
Status save_checkpoint(const std::string& path, const std::vector<Parameter>& params,
                       const std::vector<StateTensor>& state, int64_t epoch);

// Reads a checkpoint into params' values and `state`, returning its epoch. The file must hold
// exactly these names with these element counts. Nothing is written into the buffers unless
// the whole file checked out. Errors: kIo when it cannot be read; kInvalidArgument when it is
// not a hora checkpoint, has another version, is truncated, fails its checksum, or lacks or
// adds an entry or has another count (each message names the path and the entry).
StatusOr<int64_t> load_checkpoint(const std::string& path, const std::vector<Parameter>& params,
                                  const std::vector<StateTensor>& state);

}  // namespace trainer
}  // namespace hora
