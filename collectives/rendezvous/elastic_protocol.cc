#include "collectives/rendezvous/elastic_protocol.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>

namespace hora {
namespace collectives {
namespace elastic {
namespace {

constexpr const char* kPrefix = "hora/elastic/";
// How often a waiting worker looks at latest_key() and abort_key() between waits on the next
// generation's key: a store round trip each, so a second is plenty.
constexpr std::chrono::milliseconds kPollInterval{1000};

std::string text_of(const Bytes& bytes) { return std::string(bytes.begin(), bytes.end()); }
Bytes bytes_of(const std::string& text) { return Bytes(text.begin(), text.end()); }

// "key=value" words of one line, in order.
std::vector<std::pair<std::string, std::string>> fields_of(const std::string& line) {
  std::vector<std::pair<std::string, std::string>> fields;
  std::istringstream words(line);
  std::string word;
  while (words >> word) {
    const size_t eq = word.find('=');
    if (eq == std::string::npos) {
      fields.emplace_back(word, "");
    } else {
      fields.emplace_back(word.substr(0, eq), word.substr(eq + 1));
    }
  }
  return fields;
}

StatusOr<int64_t> parse_integer(const std::string& field, const std::string& value) {
  char* end = nullptr;
  const long long parsed = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || end == nullptr || *end != '\0')
    return Status::invalid_argument("elastic protocol: field '" + field + "' is '" + value +
                                    "', expected an integer");
  return static_cast<int64_t>(parsed);
}

// Sets the slot field named `name`; false for an unknown name.
StatusOr<bool> set_slot_field(WorkerSlot& slot, const std::string& name, const std::string& value) {
  if (name == "host") {
    slot.host = value;
    return true;
  }
  int64_t WorkerSlot::*wide = name == "worker" ? &WorkerSlot::worker_id : nullptr;
  int WorkerSlot::*narrow = name == "rank"         ? &WorkerSlot::rank
                            : name == "local_rank" ? &WorkerSlot::local_rank
                            : name == "local_size" ? &WorkerSlot::local_size
                            : name == "cross_rank" ? &WorkerSlot::cross_rank
                            : name == "cross_size" ? &WorkerSlot::cross_size
                                                   : nullptr;
  if (wide == nullptr && narrow == nullptr) return false;
  HORA_ASSIGN_OR_RETURN(int64_t parsed, parse_integer(name, value));
  if (wide != nullptr) {
    slot.*wide = parsed;
  } else {
    slot.*narrow = static_cast<int>(parsed);
  }
  return true;
}

Status check_slot(const WorkerSlot& slot, int index, int size) {
  const std::string where = "elastic assignment: worker " + std::to_string(slot.worker_id) + " ";
  if (slot.rank != index)
    return Status::invalid_argument(
        where + "has rank " + std::to_string(slot.rank) + " at position " + std::to_string(index) +
        "; expected ranks 0.." + std::to_string(size - 1) + " in order");
  if (slot.local_size < 1 || slot.local_rank < 0 || slot.local_rank >= slot.local_size)
    return Status::invalid_argument(where + "has local_rank " + std::to_string(slot.local_rank) +
                                    " of local_size " + std::to_string(slot.local_size));
  if (slot.cross_size < 1 || slot.cross_rank < 0 || slot.cross_rank >= slot.cross_size)
    return Status::invalid_argument(where + "has cross_rank " + std::to_string(slot.cross_rank) +
                                    " of cross_size " + std::to_string(slot.cross_size));
  return Status::OK();
}

StatusOr<int64_t> read_latest(Store& store, Deadline deadline) {
  StatusOr<bool> there = store.check({latest_key()});
  if (!there.ok()) return there.status();
  if (!*there) return int64_t{-1};
  HORA_ASSIGN_OR_RETURN(Bytes latest, store.get(latest_key(), deadline));
  return parse_integer("latest", text_of(latest));
}

// The driver's abort message, or OK when it set none.
Status check_abort(Store& store, Deadline deadline) {
  HORA_ASSIGN_OR_RETURN(bool aborted, store.check({abort_key()}));
  if (!aborted) return Status::OK();
  HORA_ASSIGN_OR_RETURN(Bytes message, store.get(abort_key(), deadline));
  return Status::failed_precondition("horarun ended the elastic job: " + text_of(message));
}

}  // namespace

const WorkerSlot* Assignment::find(int64_t worker_id) const {
  for (const WorkerSlot& slot : workers)
    if (slot.worker_id == worker_id) return &slot;
  return nullptr;
}

std::string assignment_key(int64_t generation) {
  return std::string(kPrefix) + "assignment/" + std::to_string(generation);
}
std::string latest_key() { return std::string(kPrefix) + "latest"; }
std::string reset_key(int64_t generation, int64_t worker_id) {
  return std::string(kPrefix) + "reset/" + std::to_string(generation) + "/" +
         std::to_string(worker_id);
}
std::string hosts_updated_key(int64_t generation) {
  return std::string(kPrefix) + "hosts_updated/" + std::to_string(generation);
}
std::string abort_key() { return std::string(kPrefix) + "abort"; }

Bytes format_assignment(const Assignment& assignment) {
  std::ostringstream out;
  out << "generation=" << assignment.generation << " size=" << assignment.size() << "\n";
  for (const WorkerSlot& s : assignment.workers) {
    out << "worker=" << s.worker_id << " rank=" << s.rank << " local_rank=" << s.local_rank
        << " local_size=" << s.local_size << " cross_rank=" << s.cross_rank
        << " cross_size=" << s.cross_size << " host=" << s.host << "\n";
  }
  return bytes_of(out.str());
}

StatusOr<Assignment> parse_assignment(const Bytes& bytes) {
  std::istringstream lines(text_of(bytes));
  std::string line;
  Assignment assignment;
  int64_t size = -1;
  if (!std::getline(lines, line)) return Status::invalid_argument("elastic assignment is empty");
  for (const auto& [name, value] : fields_of(line)) {
    if (name == "generation") {
      HORA_ASSIGN_OR_RETURN(assignment.generation, parse_integer(name, value));
    } else if (name == "size") {
      HORA_ASSIGN_OR_RETURN(size, parse_integer(name, value));
    }
  }
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    WorkerSlot slot;
    for (const auto& [name, value] : fields_of(line)) {
      HORA_ASSIGN_OR_RETURN(bool known, set_slot_field(slot, name, value));
      if (!known)
        return Status::invalid_argument("elastic assignment: unknown field '" + name + "'");
    }
    assignment.workers.push_back(std::move(slot));
  }
  if (size < 1 || size != assignment.size())
    return Status::invalid_argument("elastic assignment: header says size " + std::to_string(size) +
                                    " but lists " + std::to_string(assignment.size()) + " workers");
  for (int i = 0; i < assignment.size(); ++i)
    HORA_RETURN_IF_ERROR(check_slot(assignment.workers[i], i, assignment.size()));
  return assignment;
}

Bytes format_reset_report(const ResetReport& report) {
  std::string failed;
  for (int r : report.failed_ranks) failed += (failed.empty() ? "" : ",") + std::to_string(r);
  std::string reason = report.reason;
  std::replace(reason.begin(), reason.end(), '\n', ' ');
  return bytes_of("hosts_updated=" + std::string(report.hosts_updated ? "1" : "0") +
                  " failed=" + failed + "\n" + reason);
}

StatusOr<ResetReport> parse_reset_report(const Bytes& bytes) {
  const std::string text = text_of(bytes);
  const size_t newline = text.find('\n');
  ResetReport report;
  report.reason = newline == std::string::npos ? "" : text.substr(newline + 1);
  for (const auto& [name, value] : fields_of(text.substr(0, newline))) {
    if (name == "hosts_updated") {
      report.hosts_updated = value == "1";
    } else if (name == "failed") {
      std::istringstream ranks(value);
      std::string rank;
      while (std::getline(ranks, rank, ',')) {
        HORA_ASSIGN_OR_RETURN(int64_t parsed, parse_integer("failed", rank));
        report.failed_ranks.push_back(static_cast<int>(parsed));
      }
    } else {
      return Status::invalid_argument("elastic reset report: unknown field '" + name + "'");
    }
  }
  return report;
}

Status publish_assignment(Store& store, const Assignment& assignment) {
  HORA_RETURN_IF_ERROR(
      store.set(assignment_key(assignment.generation), format_assignment(assignment)));
  return store.set(latest_key(), bytes_of(std::to_string(assignment.generation)));
}

StatusOr<Assignment> wait_for_assignment(Store& store, int64_t worker_id, int64_t after_generation,
                                         Deadline deadline) {
  const std::string who = "elastic worker " + std::to_string(worker_id);
  int64_t newest_seen = -1;
  int64_t next = after_generation + 1;
  for (;;) {
    HORA_RETURN_IF_ERROR(check_abort(store, deadline));
    HORA_ASSIGN_OR_RETURN(int64_t latest, read_latest(store, deadline));
    if (latest >= after_generation + 1) {
      HORA_ASSIGN_OR_RETURN(Bytes raw, store.get(assignment_key(latest), deadline));
      HORA_ASSIGN_OR_RETURN(Assignment assignment, parse_assignment(raw));
      newest_seen = latest;
      if (assignment.find(worker_id) != nullptr) return assignment;
      if (after_generation >= 0)
        return Status::failed_precondition(who + " was removed from the job by generation " +
                                           std::to_string(latest) + " (" +
                                           std::to_string(assignment.size()) + " workers)");
      next = latest + 1;  // a new worker not listed yet: a later generation will list it
    }
    if (deadline.expired())
      return Status::timeout(who + ": no generation after " + std::to_string(after_generation) +
                             " lists it (newest seen: " + std::to_string(newest_seen) + ")");
    const Deadline poll = Deadline(std::min(deadline.at(), Deadline::after(kPollInterval).at()));
    Status waited = store.wait({assignment_key(next)}, poll);
    if (!waited.ok() && waited.code() != StatusCode::kTimeout) return waited;
  }
}

}  // namespace elastic
}  // namespace collectives
}  // namespace hora
