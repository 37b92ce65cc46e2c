#include "launcher/elastic_state.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <sstream>

#include "launcher/rank_process.h"
#include "launcher/supervisor.h"

namespace hora {
namespace launcher {
collectives::elastic::Assignment make_assignment(int64_t generation,
                                                 const std::vector<int64_t>& ids,
                                                 const std::vector<std::string>& hosts) {
  collectives::elastic::Assignment a;
  a.generation = generation;
  std::map<std::string, int> per_host;
  for (const std::string& h : hosts) ++per_host[h];
  std::map<std::string, int> seen_on_host;
  std::map<int, std::vector<std::string>> hosts_of_local;  // local rank -> hosts, first seen
  for (size_t i = 0; i < ids.size(); ++i) {
    collectives::elastic::WorkerSlot s;
    s.worker_id = ids[i];
    s.rank = static_cast<int>(i);
    s.host = hosts[i];
    s.local_rank = seen_on_host[hosts[i]]++;
    s.local_size = per_host[hosts[i]];
    hosts_of_local[s.local_rank].push_back(hosts[i]);
    a.workers.push_back(s);
  }
  for (collectives::elastic::WorkerSlot& s : a.workers) {
    const std::vector<std::string>& group = hosts_of_local[s.local_rank];
    s.cross_rank = static_cast<int>(std::find(group.begin(), group.end(), s.host) - group.begin());
    s.cross_size = static_cast<int>(group.size());
  }
  return a;
}

ElasticState::ElasticState(const ElasticConfig& config, Blacklist blacklist)
    : config_(config), blacklist_(std::move(blacklist)) {}

std::vector<int64_t> ElasticState::awaited() const {
  std::vector<int64_t> ids;
  if (composing_) return ids;
  for (int64_t id : members_) {
    const Worker& w = workers_.at(id);
    if (w.alive && !w.reported) ids.push_back(id);
  }
  return ids;
}

std::vector<int64_t> ElasticState::running() const {
  std::vector<int64_t> ids;
  for (const auto& [id, w] : workers_)
    if (w.alive) ids.push_back(id);
  return ids;
}

std::string ElasticState::describe(int64_t id) const {
  const Worker& w = workers_.at(id);
  std::string text = "worker " + std::to_string(id) + " (host " + w.host;
  const auto it = std::find(members_.begin(), members_.end(), id);
  if (it != members_.end() && !composing_)
    text += ", rank " + std::to_string(it - members_.begin()) + " of generation " +
            std::to_string(generation_);
  return text + ")";
}

std::string ElasticState::offered() const {
  return hosts_.empty() ? std::string("no hosts") : format_host_list(hosts_);
}

std::vector<std::string> ElasticState::free_slots(double now_s) const {
  std::vector<std::string> slots;
  for (const HostSlots& h : hosts_) {
    if (blacklist_.is_blacklisted(h.host, now_s)) continue;
    int used = 0;
    for (const auto& [id, w] : workers_) used += w.alive && w.host == h.host ? 1 : 0;
    for (int i = used; i < h.slots; ++i) slots.push_back(h.host);
  }
  return slots;
}

ElasticActions ElasticState::start(const std::vector<HostSlots>& hosts, double now_s) {
  ElasticActions out;
  hosts_ = hosts;
  composing_ = true;
  composing_since_s_ = now_s;
  try_compose(now_s, out);
  return out;
}

void ElasticState::abort(const std::string& message, ElasticActions& out) {
  out.abort = message;
  over_ = true;
}

void ElasticState::fail_worker(int64_t id, const std::string& why, bool blacklist, double now_s,
                               ElasticActions& out) {
  Worker& w = workers_.at(id);
  std::string line = describe(id) + " " + why;
  w.alive = false;
  if (blacklist) {
    const double cooldown = blacklist_.record_failure(w.host, now_s);
    line += "; host " + w.host + " blacklisted " +
            (std::isinf(cooldown) ? std::string("for the rest of the job")
                                  : "for " + format_seconds(cooldown) + " s");
  }
  out.notes.push_back(line);
  if (!trouble_s_) trouble_s_ = now_s;
}

void ElasticState::kill_worker(int64_t id, const std::string& why, bool blacklist, double now_s,
                               ElasticActions& out) {
  out.kill.push_back(id);
  fail_worker(id, why + ": killing it", blacklist, now_s, out);
  if (!first_failure_status_) first_failure_status_ = 128 + 9;
}

ElasticActions ElasticState::on_exit(int64_t worker_id, int exit_code, int signal, double now_s) {
  ElasticActions out;
  auto it = workers_.find(worker_id);
  if (over_ || it == workers_.end() || !it->second.alive) return out;  // killed by us before
  if (signal == 0 && exit_code == 0) {
    it->second.alive = false;
    it->second.exited_ok = true;
  } else {
    const bool member =
        std::find(members_.begin(), members_.end(), worker_id) != members_.end() && !composing_;
    if (member && !first_failure_status_) first_failure_status_ = signal ? 128 + signal : exit_code;
    fail_worker(worker_id,
                signal ? "was killed by signal " + signal_name(signal)
                       : "exited with code " + std::to_string(exit_code),
                true, now_s, out);
  }
  advance(now_s, out);
  return out;
}

ElasticActions ElasticState::on_report(int64_t worker_id,
                                       const collectives::elastic::ResetReport& report,
                                       double now_s) {
  return on_reports({{worker_id, report}}, now_s);
}

ElasticActions ElasticState::on_reports(const std::vector<WorkerReport>& reports, double now_s) {
  ElasticActions out;
  if (over_ || composing_) return out;
  // Every report counts before any names a culprit: a worker that reported (and so left the
  // generation on purpose) is never killed because a peer saw it go.
  std::vector<const WorkerReport*> fresh;
  for (const WorkerReport& r : reports) {
    auto it = workers_.find(r.first);
    if (it == workers_.end() || !it->second.alive || it->second.reported) continue;
    it->second.reported = true;
    fresh.push_back(&r);
  }
  if (fresh.empty()) return out;
  if (!trouble_s_) trouble_s_ = now_s;
  for (const WorkerReport* r : fresh) {
    for (int rank : r->second.failed_ranks) {
      if (rank < 0 || rank >= static_cast<int>(members_.size())) continue;
      const int64_t victim = members_[static_cast<size_t>(rank)];
      const Worker& v = workers_.at(victim);
      if (victim == r->first || !v.alive || v.reported) continue;
      kill_worker(victim, "was named failed by worker " + std::to_string(r->first) + "'s report",
                  true, now_s, out);
    }
  }
  advance(now_s, out);
  return out;
}

ElasticActions ElasticState::on_hosts(const std::vector<HostSlots>& hosts, double now_s) {
  ElasticActions out;
  discovery_failing_since_s_.reset();
  if (over_) return out;
  hosts_ = hosts;
  // Workers beyond what a host now offers (the newest first) are ended: not their host's fault.
  for (auto it = workers_.rbegin(); it != workers_.rend(); ++it) {
    if (!it->second.alive) continue;
    int slots = 0;
    for (const HostSlots& h : hosts_) slots = h.host == it->second.host ? h.slots : slots;
    int running_there = 0;
    for (const auto& [id, w] : workers_) running_there += w.alive && w.host == it->second.host;
    if (running_there > slots)
      kill_worker(it->first,
                  "is on a host that discovery offers " + std::to_string(slots) + " slots now",
                  false, now_s, out);
  }
  advance(now_s, out);
  return out;
}

ElasticActions ElasticState::on_discovery_failed(const std::string& error, double now_s) {
  ElasticActions out;
  if (over_) return out;
  if (!discovery_failing_since_s_) {
    discovery_failing_since_s_ = now_s;
    out.notes.push_back("host discovery script " + error + "; keeping the hosts it offered last (" +
                        offered() + ")");
  } else if (now_s - *discovery_failing_since_s_ >= config_.timeout_s) {
    abort("the host discovery script has failed for " + format_seconds(config_.timeout_s) +
              " s (--elastic-timeout): " + error,
          out);
    return out;
  }
  advance(now_s, out);
  return out;
}

ElasticActions ElasticState::on_tick(double now_s) {
  ElasticActions out;
  advance(now_s, out);
  return out;
}

void ElasticState::advance(double now_s, ElasticActions& out) {
  if (over_) return;
  if (composing_) {
    try_compose(now_s, out);
    return;
  }
  if (trouble_s_ && now_s >= *trouble_s_ + config_.fallback_s) {
    for (int64_t id : awaited())
      kill_worker(id,
                  "did not report within " + format_seconds(config_.fallback_s) +
                      " s after generation " + std::to_string(generation_) + " failed",
                  true, now_s, out);
  }
  if (!awaited().empty()) {
    maybe_hosts_updated(now_s, out);
    return;
  }
  end_generation(now_s, out);
}

void ElasticState::maybe_hosts_updated(double now_s, ElasticActions& out) {
  if (hosts_updated_sent_ || trouble_s_) return;
  int size = 0;
  for (int64_t id : members_) {
    if (workers_.at(id).exited_ok) return;  // the job is finishing
    size += workers_.at(id).alive ? 1 : 0;
  }
  const std::vector<std::string> free = free_slots(now_s);
  if (free.empty() || (config_.max_np > 0 && size >= config_.max_np)) return;
  hosts_updated_sent_ = true;
  out.hosts_updated = generation_;
  out.notes.push_back("discovery offers " + std::to_string(free.size()) + " more slot(s) (" +
                      offered() + "): generation " + std::to_string(generation_) +
                      " will reset to add workers");
}

void ElasticState::end_generation(double now_s, ElasticActions& out) {
  std::vector<int64_t> survivors;
  bool any_ok = false;
  for (int64_t id : members_) {
    const Worker& w = workers_.at(id);
    if (w.alive) survivors.push_back(id);  // every running member has reported
    any_ok = any_ok || w.exited_ok;
  }
  if (any_ok) {  // a worker finished: so did the job (Horovod's rule); the reporters are ended
    if (!survivors.empty())
      out.notes.push_back("a worker of generation " + std::to_string(generation_) +
                          " exited 0: the job is complete, ending the " +
                          std::to_string(survivors.size()) + " worker(s) waiting to go on");
    out.finish = first_failure_status_.value_or(0);
    over_ = true;
    return;
  }
  if (config_.reset_limit >= 0 && generation_ + 1 > config_.reset_limit) {
    abort("the reset limit is reached (--reset-limit " + std::to_string(config_.reset_limit) +
              "): generation " + std::to_string(generation_) +
              " ended and another reset is not allowed",
          out);
    return;
  }
  survivors_ = survivors;
  wait_noted_ = false;
  composing_ = true;
  // The wait for slots counts from the generation's first failure or report: before any
  // survivor's own wait (HORA_ELASTIC_TIMEOUT_S, from its report on) runs out.
  composing_since_s_ = trouble_s_.value_or(now_s);
  try_compose(now_s, out);
}

void ElasticState::try_compose(double now_s, ElasticActions& out) {
  survivors_.erase(std::remove_if(survivors_.begin(), survivors_.end(),
                                  [&](int64_t id) { return !workers_.at(id).alive; }),
                   survivors_.end());
  const std::vector<std::string> free = free_slots(now_s);
  const int have = static_cast<int>(survivors_.size());
  const int target = generation_ < 0 ? config_.np : config_.max_np > 0 ? config_.max_np : INT_MAX;
  const int add = std::min(static_cast<int>(free.size()), std::max(0, target - have));
  if (have + add < std::max(1, config_.min_np)) {
    const bool waited_out = now_s >= composing_since_s_ + config_.timeout_s;
    const bool stuck = !config_.discovery && !blacklist_.next_return(now_s);
    if (waited_out || stuck) {
      abort("only " + std::to_string(have + add) + " worker(s) available, below --min-np " +
                std::to_string(config_.min_np) +
                (stuck ? ""
                       : " after waiting " + format_seconds(config_.timeout_s) +
                             " s (--elastic-timeout)") +
                "; " + (config_.discovery ? "discovery offers " : "the hosts are ") + offered() +
                ", " + std::to_string(have) + " worker(s) still running",
            out);
    } else if (!wait_noted_ && (generation_ >= 0 || !hosts_.empty())) {
      wait_noted_ = true;
      out.notes.push_back("only " + std::to_string(have + add) + " worker(s) available, below " +
                          "--min-np " + std::to_string(config_.min_np) + ": waiting up to " +
                          format_seconds(config_.timeout_s) + " s (--elastic-timeout) for slots (" +
                          (config_.discovery ? "discovery offers " : "the hosts are ") + offered() +
                          ")");
    }
    return;
  }
  std::vector<int64_t> ids = survivors_;
  std::vector<std::string> hosts;
  hosts.reserve(ids.size() + static_cast<size_t>(add));
  for (int64_t id : ids) hosts.push_back(workers_.at(id).host);
  for (int i = 0; i < add; ++i) {
    const int64_t id = next_id_++;
    workers_[id] = Worker{free[static_cast<size_t>(i)], true, false, false};
    out.spawn.push_back({id, free[static_cast<size_t>(i)]});
    ids.push_back(id);
    hosts.push_back(free[static_cast<size_t>(i)]);
  }
  ++generation_;
  for (auto& [id, w] : workers_) w.reported = false;
  members_ = ids;
  composing_ = false;
  survivors_.clear();
  trouble_s_.reset();
  first_failure_status_.reset();
  hosts_updated_sent_ = false;
  out.publish = make_assignment(generation_, ids, hosts);
  std::string who;
  for (int64_t id : ids) who += (who.empty() ? "" : ",") + std::to_string(id);
  out.notes.push_back("generation " + std::to_string(generation_) + ": " +
                      std::to_string(ids.size()) + " worker(s) [" + who + "]" +
                      (add > 0 && generation_ > 0 ? ", " + std::to_string(add) + " new" : ""));
}

}  // namespace launcher
}  // namespace hora
