// Cleanup of the shared-memory segments that workers of a job left behind. The builtin
// backend names each segment after the process that created it ("/dev/shm/hora-<pid>-..."
// , collectives/backends/builtin/shm_segment.h) and unlinks it at its orderly shutdown; a
// SIGKILLed worker cannot. unlink_segments_of removes the segments of processes that have
// ended: horarun's elastic driver calls it with its dead local workers' pids after each
// generation change and at exit (segments of workers on other hosts stay there).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace hora {
namespace launcher {

// Unlinks every entry of `dir` named "<prefix><pid>-..." (prefix without its '/') for a pid in
// `pids`; returns how many it removed. REQUIRES: those processes have ended.
int unlink_segments_of(const std::vector<pid_t>& pids, const std::string& dir = "/dev/shm");

}  // namespace launcher
}  // namespace hora
