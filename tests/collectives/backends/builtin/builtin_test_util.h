// Helpers for the builtin backend's tests: run N ranks as threads over a LocalStore, or as
// fork()ed processes over a DirStore.
#pragma once

#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "collectives/backends/builtin/builtin_communicator.h"
#include "tests/collectives/backends/builtin/test_stores.h"

namespace hora {
namespace collectives {
namespace builtin_test {

using CommFn = std::function<Status(Communicator& comm)>;

// hora segments in /dev/shm created by any of `pids` (names are /hora-<creator pid>-...).
inline std::vector<std::string> segments_of(const std::vector<pid_t>& pids) {
  std::vector<std::string> found;
  DIR* d = opendir("/dev/shm");
  if (d == nullptr) return found;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    for (pid_t p : pids)
      if (name.rfind("hora-" + std::to_string(p) + "-", 0) == 0) found.push_back(name);
  }
  closedir(d);
  return found;
}

// Names a test instantiated per rank count "np<N>" (INSTANTIATE_TEST_SUITE_P's last argument).
inline std::string rank_count_name(const ::testing::TestParamInfo<int>& info) {
  return "np" + std::to_string(info.param);
}

inline BuiltinOptions test_options(bool shm) {
  BuiltinOptions o;
  o.shm_enabled = shm;
  o.timeout_s = 20;
  o.secret = "test-secret";
  return o;
}

// Runs fn on n thread-ranks; returns each rank's Status (creation failures included).
inline std::vector<Status> run_threads(int n, const BuiltinOptions& options, const CommFn& fn) {
  LocalStore store;
  std::vector<Status> results(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      auto comm = make_builtin_communicator(r, n, store, options);
      if (!comm.ok()) {
        results[r] = comm.status();
        return;
      }
      results[r] = fn(*comm.value());
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

// A fresh temporary directory, removed (with its files) on destruction.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/hora-builtin-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf " + path_).c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct ChildResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  std::string message;  // the Status the rank wrote, "OK" on success
};

using RankFn = std::function<Status(int rank, Store& store)>;

// Forks n ranks; each runs fn(rank, DirStore) and writes its Status to dir/result_<rank>.
// `started` (optional) runs in the parent with the children's pids right after forking.
inline std::vector<ChildResult> run_processes(
    int n, const RankFn& fn, const std::function<void(std::vector<pid_t>&)>& started = nullptr) {
  TempDir dir;
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      DirStore store(dir.path());
      Status st = fn(r, store);
      std::ofstream(dir.path() + "/result_" + std::to_string(r)) << st.to_string();
      _exit(st.ok() ? 0 : 1);
    }
    pids.push_back(pid);
  }
  if (started) started(pids);
  std::vector<ChildResult> results(n);
  for (int r = 0; r < n; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    if (WIFEXITED(status)) results[r].exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) results[r].signal = WTERMSIG(status);
    std::ifstream f(dir.path() + "/result_" + std::to_string(r));
    std::getline(f, results[r].message, '\0');
  }
  return results;
}

// Fills `buf` with a pattern that depends on (seed, index).
inline void fill_pattern(std::vector<uint8_t>& buf, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 12345;
  for (size_t i = 0; i < buf.size(); ++i) {
    x = x * 1664525u + 1013904223u;
    buf[i] = static_cast<uint8_t>(x >> 24);
  }
}

inline Status expect_pattern(const std::vector<uint8_t>& buf, uint32_t seed,
                             const std::string& what) {
  std::vector<uint8_t> want(buf.size());
  fill_pattern(want, seed);
  if (buf != want) return Status::internal(what + ": payload differs from what was sent");
  return Status::OK();
}

// Posts this rank's result `hash` as "hash/<rank>" in `store` and compares it with the hashes
// of ranks [0, compare_ranks) (fewer than the ranks when some hold no results); a difference
// names both ranks. Every rank posts before it compares, so all may call it at once.
inline Status expect_same_hash(Store& store, int rank, int compare_ranks, uint64_t hash) {
  HORA_RETURN_IF_ERROR(
      store.set("hash/" + std::to_string(rank),
                Bytes(reinterpret_cast<uint8_t*>(&hash), reinterpret_cast<uint8_t*>(&hash) + 8)));
  for (int r = 0; r < compare_ranks; ++r) {
    HORA_ASSIGN_OR_RETURN(
        Bytes v, store.get("hash/" + std::to_string(r), Deadline::after(std::chrono::seconds(60))));
    uint64_t other = 0;
    std::memcpy(&other, v.data(), 8);
    if (other != hash)
      return Status::mismatch("rank " + std::to_string(rank) + ": outputs of rank " +
                              std::to_string(r) + " differ in bits from this rank's");
  }
  return Status::OK();
}

}  // namespace builtin_test
}  // namespace collectives
}  // namespace hora
