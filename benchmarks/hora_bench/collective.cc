// Count, size and bus-bandwidth rules of each collective (see collective.h).
#include "benchmarks/hora_bench/collective.h"

#include <algorithm>

#include "core/base/name_table.h"

namespace hora {
namespace bench {

namespace {

// Indexed by the Collective value.
constexpr const char* kCollectiveNames[] = {"allreduce", "allgather", "broadcast", "reducescatter",
                                            "alltoall"};
static_assert(std::size(kCollectiveNames) == static_cast<size_t>(Collective::kAlltoall) + 1);

}  // namespace

const char* collective_name(Collective collective) { return name_of(kCollectiveNames, collective); }

StatusOr<Collective> parse_collective(const std::string& text) {
  if (auto collective = find_name<Collective>(kCollectiveNames, text)) return *collective;
  return Status::invalid_argument("unknown collective '" + text +
                                  "': expected allreduce, allgather, broadcast, reducescatter "
                                  "or alltoall");
}

double busbw_factor(Collective collective, int ranks) {
  const double n = ranks;
  switch (collective) {
    case Collective::kAllreduce: return 2.0 * (n - 1) / n;
    case Collective::kAllgather:
    case Collective::kReducescatter:
    case Collective::kAlltoall: return (n - 1) / n;
    case Collective::kBroadcast: return 1.0;
  }
  return 1.0;
}

bool is_reduction(Collective collective) {
  return collective == Collective::kAllreduce || collective == Collective::kReducescatter;
}

bool has_root(Collective collective) { return collective == Collective::kBroadcast; }

namespace {
// Whether the call's largest buffer holds one block per rank.
bool is_blocked(Collective collective) {
  return collective == Collective::kAllgather || collective == Collective::kReducescatter ||
         collective == Collective::kAlltoall;
}
}  // namespace

size_t count_for_size(Collective collective, size_t size_bytes, DataType dtype, int ranks) {
  size_t elements = size_bytes / data_type_bytes(dtype);
  if (is_blocked(collective)) elements /= static_cast<size_t>(ranks);
  return std::max<size_t>(elements, 1);
}

size_t size_for_count(Collective collective, size_t count, DataType dtype, int ranks) {
  size_t elements = count;
  if (is_blocked(collective)) elements *= static_cast<size_t>(ranks);
  return elements * data_type_bytes(dtype);
}

size_t input_elements(Collective collective, size_t count, int ranks) {
  switch (collective) {
    case Collective::kReducescatter:
    case Collective::kAlltoall: return count * static_cast<size_t>(ranks);
    default: return count;
  }
}

size_t output_elements(Collective collective, size_t count, int ranks) {
  switch (collective) {
    case Collective::kAllgather:
    case Collective::kAlltoall: return count * static_cast<size_t>(ranks);
    default: return count;
  }
}

}  // namespace bench
}  // namespace hora
