// hora._core's runtime calls: init and shutdown (the GIL released: both may wait on other
// ranks), the job's layout, the reduce ops and compressions, the backends built, engine
// counters, and the Flight registry's drain (flight.h).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

#include "adapters/python/binding.h"
#include "adapters/python/errors.h"
#include "adapters/python/flight.h"
#include "adapters/python/tensor_import.h"
#include "hora/hora.h"

namespace py = pybind11;

namespace hora {
namespace python {
namespace {

void init(const std::vector<std::pair<std::string, std::string>>& settings,
          const std::vector<std::vector<int>>& process_sets, bool dynamic_process_sets) {
  drain();
  InitOptions options;
  options.settings = settings;
  options.process_sets = process_sets;
  options.dynamic_process_sets = dynamic_process_sets;
  Status s;
  {
    py::gil_scoped_release release;
    s = hora::init(options);
  }
  check(s);
}

void shutdown() {
  Status s;
  {
    // The engine thread may be waiting for the GIL (an output allocator) while it stops.
    py::gil_scoped_release release;
    s = hora::shutdown();
  }
  drain();
  check(s);
}

// Layout getters raise before init instead of returning -1.
int layout(int (*field)(), const char* what) {
  const int v = field();
  if (v < 0)
    throw_status(Status::failed_precondition(std::string("hora.") + what +
                                             "() called before hora.init() or after "
                                             "hora.shutdown()"));
  return v;
}

py::dict engine_stats() {
  const EngineStats s = hora::engine_stats();
  py::dict d;
  d["rounds"] = s.rounds;
  d["cache_hits"] = s.cache_hits;
  d["repeated_steps"] = s.repeated_steps;
  d["coordinated"] = s.coordinated;
  d["buckets"] = s.buckets;
  d["fused_tensors"] = s.fused_tensors;
  d["cache_evictions"] = s.cache_evictions;
  d["errors"] = s.errors;
  return d;
}

py::dict autotune_state() {
  const AutotuneState s = hora::autotune_state();
  py::dict d;
  d["enabled"] = s.enabled;
  d["converged"] = s.converged;
  d["samples"] = s.samples;
  d["steps"] = s.steps;
  d["fusion_threshold_bytes"] = s.fusion_threshold_bytes;
  d["cycle_time_ms"] = s.cycle_time_ms;
  d["cache_enabled"] = s.cache_enabled;
  d["hierarchical_allreduce"] = s.hierarchical_allreduce;
  d["hierarchical_allgather"] = s.hierarchical_allgather;
  d["score"] = s.score;
  d["algorithms"] = s.algorithms;
  py::list history;
  for (const AutotuneState::Change& c : s.history)
    history.append(
        py::make_tuple(c.step, c.fusion_threshold_bytes, c.cycle_time_ms, c.cache_enabled));
  d["history"] = history;
  return d;
}

// Process sets (hora/process_set.h) as (id, ranks) pairs: the Python ProcessSet objects are
// hora/process_sets.py's.
py::tuple set_tuple(const ProcessSet& set) { return py::make_tuple(set.id(), set.ranks()); }

void bind_process_sets(py::module_& m) {
  m.def(
      "add_process_set",
      [](const std::vector<int>& ranks) {
        StatusOr<ProcessSet> set = [&] {
          py::gil_scoped_release release;  // collective: waits for every rank
          return hora::add_process_set(ranks);
        }();
        return set_tuple(check(std::move(set)));
      },
      py::arg("ranks"), "Registers a process set collectively; returns (id, sorted ranks).");
  m.def(
      "remove_process_set",
      [](int id) {
        Status s;
        {
          py::gil_scoped_release release;
          s = hora::remove_process_set(id);
        }
        check(s);
      },
      py::arg("process_set_id"), "Unregisters a process set collectively.");
  m.def(
      "process_set_ranks", [](int id) { return check(hora::get_process_set(id)).ranks(); },
      py::arg("process_set_id"), "The ranks of a registered set (InvalidArgumentError otherwise).");
  m.def(
      "process_sets",
      [] {
        py::list out;
        for (const ProcessSet& set : hora::process_sets()) out.append(set_tuple(set));
        return out;
      },
      "Every registered set as (id, ranks), the global one first.");
  m.def("dynamic_process_sets", &hora::dynamic_process_sets,
        "Whether sets may be added and removed in this job.");
}

}  // namespace

void bind_api(py::module_& m) {
  py::enum_<ReduceOp>(m, "ReduceOp", "How a collective combines the ranks' tensors.")
      .value("Sum", ReduceOp::kSum)
      .value("Average", ReduceOp::kAverage)
      .value("Min", ReduceOp::kMin)
      .value("Max", ReduceOp::kMax)
      .value("Product", ReduceOp::kProduct)
      .value("Adasum", ReduceOp::kAdasum);
  py::enum_<Compression>(m, "Compression", "The wire format of a float32 allreduce.")
      .value("none", Compression::kNone)
      .value("fp16", Compression::kFloat16)
      .value("bf16", Compression::kBFloat16);

  m.def("init", &init, py::arg("settings") = std::vector<std::pair<std::string, std::string>>{},
        py::arg("process_sets") = std::vector<std::vector<int>>{},
        py::arg("dynamic_process_sets") = false,
        "Initialises hora (HORA_* settings given as (name, value) pairs take precedence over "
        "the environment). Blocks until every rank arrived (HORA_START_TIMEOUT_S).");
  m.def("shutdown", &shutdown, "Stops the engine and releases everything init created.");
  bind_process_sets(m);
  m.def("is_initialized", &hora::is_initialized);
  m.def("rank", [] { return layout(&hora::rank, "rank"); });
  m.def("size", [] { return layout(&hora::size, "size"); });
  m.def("local_rank", [] { return layout(&hora::local_rank, "local_rank"); });
  m.def("local_size", [] { return layout(&hora::local_size, "local_size"); });
  m.def("cross_rank", [] { return layout(&hora::cross_rank, "cross_rank"); });
  m.def("cross_size", [] { return layout(&hora::cross_size, "cross_size"); });
  m.def(
      "backend",
      [] {
        StatusOr<std::string> name = hora::backend_name();
        if (!name.ok())
          throw_status(Status::failed_precondition(
              "hora.backend() called before hora.init() or after hora.shutdown()"));
        return std::move(name).value();
      },
      "The backend of the running job.");
  m.def(
      "is_homogeneous", [] { return check(hora::is_homogeneous()); },
      "Whether every host runs the same number of ranks.");
  m.def(
      "start_timeline",
      [](const std::string& path, bool mark_cycles) {
        check(hora::start_timeline(path, mark_cycles));
      },
      py::arg("file_path"), py::arg("mark_cycles") = false,
      "Rank 0 writes a Chrome trace of the engine's work to file_path from now on.");
  m.def(
      "stop_timeline", [] { check(hora::stop_timeline()); },
      "Closes the timeline start_timeline (or HORA_TIMELINE) opened.");
  m.def("engine_stats", &engine_stats, "Counters of this process's engine.");
  m.def("autotune_state", &autotune_state,
        "What HORA_AUTOTUNE=1 tuned: the values in force and each change's step.");
  m.def("available_backends", &hora::available_backends,
        "The backends built into this hora, in preference order.");
  m.def(
      "describe",
      [](py::handle tensor, const std::string& name) {
        ImportedTensor t =
            check(import_tensor(tensor, name.empty() ? "<unnamed>" : name, "input", false));
        return py::make_tuple(data_type_name(t.view.dtype()),
                              py::tuple(py::cast(t.view.shape().to_vector())),
                              t.view.device().to_string());
      },
      py::arg("tensor"), py::arg("name") = "",
      "(dtype name, shape, device) of a tensor as hora reads it.");
  m.def(
      "register_exporter",
      [](py::handle type, py::handle exporter) { register_exporter(type, exporter); },
      py::arg("type"), py::arg("exporter"),
      "Tensors of exactly `type` are exported with exporter(tensor) (a DLPack capsule) instead "
      "of tensor.__dlpack__ (hora.torch: torch._C._to_dlpack_versioned for torch.Tensor).");
  m.def(
      "drain", [] { drain(); }, "Releases the buffers of completed collectives.");
  m.def("tracked_count", &tracked_count,
        "Collectives whose buffers hora still holds (completed ones until the next drain).");
}

}  // namespace python
}  // namespace hora
