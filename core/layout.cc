#include "core/layout.h"

namespace hora {

const char* layout_source_name(LayoutSource source) {
  switch (source) {
    case LayoutSource::kSingle: return "single process";
    case LayoutSource::kHorarun: return "horarun";
    case LayoutSource::kMpirun: return "mpirun";
    case LayoutSource::kSlurm: return "slurm";
    case LayoutSource::kTorchrun: return "torchrun";
  }
  return "unknown";
}

Status validate_layout(const RankLayout& l) {
  auto bad = [&](const std::string& what) {
    return Status::invalid_argument(
        std::string("rank layout from ") + layout_source_name(l.source) + " is invalid: " + what +
        " (variables read: " + (l.variables_read.empty() ? "none" : l.variables_read) + ")");
  };
  if (l.size < 1) return bad("size " + std::to_string(l.size) + " < 1");
  if (l.size > kMaxRanks)
    return bad("size " + std::to_string(l.size) + " exceeds hora's limit of " +
               std::to_string(kMaxRanks) + " ranks");
  if (l.rank < 0 || l.rank >= l.size)
    return bad("rank " + std::to_string(l.rank) + " is not in [0, size " + std::to_string(l.size) +
               ")");
  if (l.local_size < 1 || l.local_size > l.size)
    return bad("local size " + std::to_string(l.local_size) + " is not in [1, size " +
               std::to_string(l.size) + "]");
  if (l.local_rank < 0 || l.local_rank >= l.local_size)
    return bad("local rank " + std::to_string(l.local_rank) + " is not in [0, local size " +
               std::to_string(l.local_size) + ")");
  if (l.cross_size < 1 || l.cross_size > l.size)
    return bad("cross size " + std::to_string(l.cross_size) + " is not in [1, size " +
               std::to_string(l.size) + "]");
  if (l.cross_rank < 0 || l.cross_rank >= l.cross_size)
    return bad("cross rank " + std::to_string(l.cross_rank) + " is not in [0, cross size " +
               std::to_string(l.cross_size) + ")");
  if (l.has_store() && (l.store_port < 1 || l.store_port > 65535))
    return bad("store port " + std::to_string(l.store_port) + " is not in [1, 65535]");
  if (l.has_store() && l.secret.empty()) return bad("a store address is set but no secret");
  return Status::OK();
}

}  // namespace hora
