// --through-engine: what a trainer sees. One call's buffer is split into up to kParts named
// tensors (like a model's gradients), enqueued back to back with hora::allreduce_async and
// all waited: negotiation (a cache hit after the first call), fusion into buckets of
// HORA_FUSION_THRESHOLD, the selector's algorithm, and the handles' completion are all timed.
// Names depend on the size, so every repetition of a size is a steady-state step. With
// --device cuda the tensors are GPU memory (cuda:N of the sweep): the engine's device path,
// over NCCL when the job has it (core/engine/device_executor.h).
#include <algorithm>
#include <string>
#include <vector>

#include "benchmarks/hora_bench/implementation.h"
#include "hora/hora.h"

namespace hora {
namespace bench {
namespace {

constexpr size_t kParts = 16;

class EngineImplementation : public Implementation {
 public:
  explicit EngineImplementation(int gpu) : gpu_(gpu) {}
  const std::string& name() const override { return name_; }
  bool is_hora() const override { return true; }
  bool uses_engine() const override { return true; }

  Status supports(const Call& call) const override {
    if (call.collective != Collective::kAllreduce)
      return Status::unimplemented("--through-engine times allreduce only");
    return Status::OK();
  }

  Status run(const Call& c) override {
    const size_t elem = data_type_bytes(c.dtype);
    const size_t parts = std::max<size_t>(1, std::min(kParts, c.count));
    const size_t base = c.count / parts, extra = c.count % parts;
    handles_.clear();
    const Device device = c.on_device ? Device::cuda(gpu_) : Device::cpu();
    size_t offset = 0;
    for (size_t p = 0; p < parts; ++p) {
      const size_t n = base + (p < extra ? 1 : 0);
      auto* in = const_cast<uint8_t*>(static_cast<const uint8_t*>(c.in)) + offset * elem;
      auto* out = static_cast<uint8_t*>(c.out) + offset * elem;
      HORA_ASSIGN_OR_RETURN(TensorView vin,
                            TensorView::flat(in, c.dtype, static_cast<int64_t>(n), device));
      HORA_ASSIGN_OR_RETURN(TensorView vout,
                            TensorView::flat(out, c.dtype, static_cast<int64_t>(n), device));
      const std::string name = "bench." + std::to_string(c.count) + "." + std::to_string(p);
      handles_.push_back(allreduce_async(name, vin, vout, c.op));
      offset += n;
    }
    Status first;
    for (Handle& h : handles_) {
      Status s = h.wait(c.deadline.remaining());
      if (first.ok() && !s.ok()) first = s;
    }
    return first;
  }

 private:
  const int gpu_;  // the sweep's CUDA ordinal (--device cuda); unused for host buffers
  const std::string name_ = "hora-engine";
  std::vector<Handle> handles_;
};

}  // namespace

StatusOr<std::unique_ptr<Implementation>> make_engine_implementation(const ImplementationEnv& env) {
  return std::unique_ptr<Implementation>(new EngineImplementation(env.gpu));
}

}  // namespace bench
}  // namespace hora
