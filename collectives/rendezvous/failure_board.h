// FailureBoard: makes every survivor of a failure name its root cause. Used by the engine
// (core/engine) and by backends whose transport cannot tell a dead peer from one that left
// (gloo).
//
// When a rank dies, only its neighbours in the current schedule see it go; ranks further away
// see a neighbour give up (it aborted its communicator) and would blame that neighbour. So a
// failing rank posts its error under "failure/<rank>" in the job's rendezvous store, waits
// briefly for the others' posts, and appends them to its own error: every survivor's message
// then contains the first-hand report ("rank 2 (pid ...) died"). A rank that died posts
// nothing; a store that is gone (it lived in the dead rank) just leaves the local message.
// One thread at a time; used once per failure.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "collectives/rendezvous/store.h"

namespace hora {
namespace collectives {

class FailureBoard {
 public:
  // `store` may be null (no board: messages stay local). Keys live under `prefix`. `members`:
  // the job's global ranks of ranks 0..size-1 (a process set's), empty for the job's own.
  FailureBoard(Store* store, std::string prefix, int rank, int size, std::vector<int> members = {})
      : store_(store),
        prefix_(std::move(prefix)),
        rank_(rank),
        size_(size),
        members_(std::move(members)) {}

  // Posts this rank's error (post first, so that neighbours waiting on this rank find it once
  // it aborts), giving up after `wait` when the store does not answer. Then collect(): the
  // other ranks' posts for at most `wait` (not waiting for ranks this process knows failed,
  // collectives/failed_ranks.h, which post nothing), returned as `mine` followed by "; reports from
  // other ranks: rank R: ...", or just `mine` when none came. Neither blocks past `wait`,
  // whatever state the store's host is in.
  void post(const std::string& mine,
            std::chrono::milliseconds wait = std::chrono::milliseconds(1000));
  std::string collect(const std::string& mine, std::chrono::milliseconds wait);

  // True when `message` already carries other ranks' reports (a board below this one, e.g.
  // the gloo communicator's, collected them): a second collect would only add its wait.
  static bool has_reports(const std::string& message);

 private:
  Store* store_;
  const std::string prefix_;
  const int rank_;
  const int size_;
  const std::vector<int> members_;
};

}  // namespace collectives
}  // namespace hora
