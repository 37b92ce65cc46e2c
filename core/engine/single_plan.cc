#include "core/engine/single_plan.h"

#include <cctype>

#include "collectives/algorithms/algorithms.h"
#include "collectives/algorithms/hierarchical.h"

namespace hora {
namespace engine {
namespace {

size_t row_elements(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= static_cast<size_t>(shape[i]);
  return n;
}

}  // namespace

SinglePlan plan_single(const Response& r, const Entry& e, int rank, int size,
                       std::vector<int64_t>* received_splits) {
  SinglePlan p;
  const size_t row = row_elements(e.in.shape());
  p.in_count = static_cast<size_t>(e.in.element_count());
  p.shape = e.in.shape();
  switch (r.type) {
    case CollectiveType::kAllgather: {
      int64_t rows = 0;
      for (int q = 0; q < size; ++q) {
        p.send.push_back(static_cast<size_t>(r.first_dims[q]) * row);
        rows += r.first_dims[q];
      }
      p.shape[0] = rows;
      p.out_count = static_cast<size_t>(rows) * row;
      break;
    }
    case CollectiveType::kAlltoall: {
      int64_t rows = 0;
      received_splits->assign(size, 0);
      for (int q = 0; q < size; ++q) {
        p.send.push_back(static_cast<size_t>(r.splits[static_cast<size_t>(rank) * size + q]) * row);
        const int64_t in_rows = r.splits[static_cast<size_t>(q) * size + rank];
        p.recv.push_back(static_cast<size_t>(in_rows) * row);
        (*received_splits)[q] = in_rows;
        rows += in_rows;
      }
      p.shape[0] = rows;
      p.out_count = static_cast<size_t>(rows) * row;
      break;
    }
    default: {  // kReducescatter
      const std::vector<size_t> rows =
          collectives::even_split(static_cast<size_t>(r.shape.at(0)), size);
      for (int q = 0; q < size; ++q) p.send.push_back(rows[q] * row);
      p.shape = r.shape;
      p.shape[0] = static_cast<int64_t>(rows[rank]);
      p.out_count = p.send[rank];
      break;
    }
  }
  return p;
}

Status run_host_plan(collectives::Communicator& comm, const Response& r, const SinglePlan& p,
                     const void* in, void* out, const collectives::AlgorithmOptions& ao,
                     const collectives::Topology* allgather_topology) {
  switch (r.type) {
    case CollectiveType::kAllgather:
      return allgather_topology != nullptr
                 ? collectives::hierarchical_allgatherv(comm, *allgather_topology, in, out, p.send,
                                                        r.dtype, ao)
                 : collectives::ring_allgatherv(comm, in, out, p.send, r.dtype, ao);
    case CollectiveType::kAlltoall:
      return collectives::pairwise_alltoallv(comm, in, p.send, out, p.recv, r.dtype, ao);
    default: return collectives::ring_reducescatter(comm, in, out, p.send, r.dtype, r.op, ao);
  }
}

std::string timeline_phase(CollectiveType type) {
  std::string s(collective_name(type));
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace engine
}  // namespace hora
