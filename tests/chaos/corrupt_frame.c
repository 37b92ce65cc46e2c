/* corrupt_frame: an LD_PRELOAD library that corrupts one frame the builtin backend's TCP
 * transport sends (collectives/backends/builtin/frame.h), as a faulty NIC or a stray writer
 * would. Only in the process whose HORA_RANK equals CHAOS_CORRUPT_RANK: the
 * CHAOS_CORRUPT_FRAME-th frame header it sends (default 200, counted over every socket) goes
 * out with its magic flipped. The receiver must fail naming this rank, and so must every
 * other rank (tests/chaos/corrupt_frame_check.sh).
 *
 * The transport writes a frame as sendmsg([24-byte header, payload]); a header is recognised
 * by its length and magic. The caller's buffer is left alone: a copy of the header is sent.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define FRAME_HEADER_BYTES 24
#define FRAME_MAGIC 0x48524d31u /* "HRM1" */

typedef ssize_t (*sendmsg_fn)(int, const struct msghdr*, int);

static long frames_seen;
static long corrupt_at = -1; /* -1: not decided yet; 0: never */

static long frame_to_corrupt(void) {
  if (corrupt_at >= 0) return corrupt_at;
  const char* rank = getenv("HORA_RANK");
  const char* victim = getenv("CHAOS_CORRUPT_RANK");
  const char* frame = getenv("CHAOS_CORRUPT_FRAME");
  corrupt_at = 0;
  if (rank != NULL && victim != NULL && strcmp(rank, victim) == 0)
    corrupt_at = frame != NULL ? atol(frame) : 200;
  return corrupt_at;
}

ssize_t sendmsg(int fd, const struct msghdr* msg, int flags) {
  static sendmsg_fn real;
  if (real == NULL) real = (sendmsg_fn)dlsym(RTLD_NEXT, "sendmsg");
  if (msg == NULL || msg->msg_iovlen < 1 || msg->msg_iov[0].iov_len != FRAME_HEADER_BYTES ||
      frame_to_corrupt() == 0)
    return real(fd, msg, flags);
  uint32_t magic;
  memcpy(&magic, msg->msg_iov[0].iov_base, sizeof magic);
  if (magic != FRAME_MAGIC || __atomic_add_fetch(&frames_seen, 1, __ATOMIC_RELAXED) != corrupt_at)
    return real(fd, msg, flags);
  unsigned char header[FRAME_HEADER_BYTES];
  memcpy(header, msg->msg_iov[0].iov_base, sizeof header);
  header[0] ^= 0xff;
  struct iovec iov[8];
  size_t n = msg->msg_iovlen < 8 ? msg->msg_iovlen : 8;
  memcpy(iov, msg->msg_iov, n * sizeof(struct iovec));
  iov[0].iov_base = header;
  struct msghdr copy = *msg;
  copy.msg_iov = iov;
  copy.msg_iovlen = n;
  return real(fd, &copy, flags);
}
