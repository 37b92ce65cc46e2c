// The "wire" reference column: what the transport under hora's ring can carry, measured on the
// same pairs. It moves exactly the bytes a ring allreduce moves, along the same ring, in the same
// segments (two rounds of hora's ring allgather over the buffer, 2 (n - 1) steps of one block
// each), but reduces nothing. Its busbw is the ceiling of any ring over that backend: hora's ring
// close to it means the transport is the limit, not the algorithm. It is a bound, not a
// competitor: it is left out of the hora/best ratio and its result is not checked (it computes
// no allreduce).
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/hora_bench/implementation.h"
#include "benchmarks/hora_bench/native_call.h"
#include "collectives/algorithms/algorithms.h"
#include "collectives/scratch_pool.h"

namespace hora {
namespace bench {
namespace {

class WireImplementation : public Implementation {
 public:
  WireImplementation(std::string name, std::unique_ptr<collectives::Store> store,
                     std::unique_ptr<collectives::Communicator> comm)
      : name_(std::move(name)), store_(std::move(store)), comm_(std::move(comm)) {}

  const std::string& name() const override { return name_; }
  bool is_hora() const override { return false; }
  bool is_reference() const override { return true; }

  Status supports(const Call& call) const override {
    if (call.collective != Collective::kAllreduce)
      return Status::unimplemented("the wire column measures allreduce's traffic only");
    return Status::OK();
  }

  Status run(const Call& c) override {
    const int n = comm_->size();
    if (n == 1 || c.count == 0) return Status::OK();
    collectives::AlgorithmOptions options;
    options.deadline = c.deadline;
    options.scratch = &scratch_;
    const std::vector<size_t> counts = collectives::even_split(c.count, n);
    size_t offset = 0;
    for (int q = 0; q < comm_->rank(); ++q) offset += counts[q];
    uint8_t* out = static_cast<uint8_t*>(c.out);
    const uint8_t* mine = out + offset * data_type_bytes(c.dtype);
    // Round one stands for the reduce-scatter phase, round two for the allgather phase.
    for (int round = 0; round < 2; ++round)
      HORA_RETURN_IF_ERROR(
          collectives::ring_allgatherv(*comm_, mine, out, counts, c.dtype, options));
    return Status::OK();
  }

 private:
  const std::string name_;
  std::unique_ptr<collectives::Store> store_;  // outlives comm_
  std::unique_ptr<collectives::Communicator> comm_;
  collectives::ScratchPool scratch_;
};

}  // namespace

StatusOr<std::unique_ptr<Implementation>> make_wire_implementation(const ImplementationEnv& env,
                                                                   const std::string& backend) {
  HORA_ASSIGN_OR_RETURN(OwnCommunicator own, implementation_communicator(env, "wire", backend));
  return std::unique_ptr<Implementation>(
      new WireImplementation("wire", std::move(own.store), std::move(own.comm)));
}

}  // namespace bench
}  // namespace hora
