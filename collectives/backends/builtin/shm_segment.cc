#include "collectives/backends/builtin/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>

namespace hora {
namespace collectives {
namespace builtin {
namespace {

Status errno_status(const std::string& what, const std::string& name) {
  return Status::io(what + " of shared-memory segment /dev/shm" + name +
                    " failed: " + std::strerror(errno));
}

std::string fresh_name() {
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  uint64_t r = (uint64_t{rd()} << 32) ^ rd();
  char buf[80];
  std::snprintf(buf, sizeof buf, "%s%d-%llu-%016llx", kShmNamePrefix, static_cast<int>(getpid()),
                static_cast<unsigned long long>(counter.fetch_add(1)),
                static_cast<unsigned long long>(r));
  return buf;
}

Bytes to_bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

// What the creator publishes instead of a name when it could not create the segment.
constexpr const char* kCreateFailed = "failed: ";

}  // namespace

StatusOr<std::unique_ptr<ShmSegment>> ShmSegment::create(const std::string& name, size_t bytes) {
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return errno_status("shm_open(create)", name);
  // posix_fallocate reserves the tmpfs pages now, so a full /dev/shm is an error here rather
  // than a SIGBUS on first touch.
  int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (rc != 0) {
    errno = rc;
    Status st =
        errno_status("posix_fallocate(" + std::to_string(bytes) + " bytes)", name)
            .with_context(rc == ENOSPC ? std::string("(/dev/shm is full or too small: free "
                                                     "space there, or set HORA_SHM=0 to connect "
                                                     "the ranks of this host over TCP)")
                                       : std::string());
    close(fd);
    shm_unlink(name.c_str());
    return st;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    Status st = errno_status("mmap", name);
    shm_unlink(name.c_str());
    return st;
  }
  madvise(p, bytes, MADV_HUGEPAGE);  // best effort: tmpfs may not allow it
  std::memset(p, 0, bytes);          // touch every page once, now
  return std::unique_ptr<ShmSegment>(new ShmSegment(name, p, bytes));
}

StatusOr<std::unique_ptr<ShmSegment>> ShmSegment::open(const std::string& name, size_t bytes) {
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) return errno_status("shm_open", name);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    Status s = errno_status("fstat", name);
    close(fd);
    return s;
  }
  if (static_cast<size_t>(st.st_size) != bytes) {
    close(fd);
    return Status::mismatch("shared-memory segment /dev/shm" + name + " has " +
                            std::to_string(st.st_size) + " bytes, expected " +
                            std::to_string(bytes) + " (ranks disagree about the layout)");
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return errno_status("mmap", name);
  madvise(p, bytes, MADV_HUGEPAGE);
  return std::unique_ptr<ShmSegment>(new ShmSegment(name, p, bytes));
}

void ShmSegment::unlink(const std::string& name) { shm_unlink(name.c_str()); }

ShmSegment::~ShmSegment() { munmap(data_, size_); }

StatusOr<std::unique_ptr<ShmSegment>> establish_shm_segment(
    Store& store, const std::string& key_prefix, bool creator, int local_size, size_t bytes,
    void (*init)(void* memory, size_t bytes, void* arg), void* init_arg, Deadline deadline) {
  const std::string name_key = key_prefix + "name";
  const std::string mapped_key = key_prefix + "mapped";
  const std::string unlinked_key = key_prefix + "unlinked";
  std::unique_ptr<ShmSegment> segment;
  std::string name;
  if (creator) {
    name = fresh_name();
    auto created = ShmSegment::create(name, bytes);
    if (!created.ok()) {
      // Tell the other local ranks now rather than let them wait out their deadline. Best
      // effort: if this set fails too, they still fail at that deadline.
      store.set(name_key, to_bytes(kCreateFailed + created.status().message())).IgnoreError();
      return created.status();
    }
    segment = std::move(created).value();
    if (init != nullptr) init(segment->data(), bytes, init_arg);
    Status st = store.set(name_key, to_bytes(name));
    if (!st.ok()) {
      ShmSegment::unlink(name);
      return st;
    }
  } else {
    HORA_ASSIGN_OR_RETURN(Bytes value, store.get(name_key, deadline));
    name.assign(value.begin(), value.end());
    if (name.rfind(kCreateFailed, 0) == 0)
      return Status::remote("the local rank that creates the shared-memory segment failed: " +
                            name.substr(std::strlen(kCreateFailed)));
    if (name.rfind(kShmNamePrefix, 0) != 0) {
      return Status::io("store key " + name_key + " holds '" + name +
                        "', not a hora shared-memory segment name");
    }
    HORA_ASSIGN_OR_RETURN(segment, ShmSegment::open(name, bytes));
  }
  auto mapped = store.add(mapped_key, 1);
  if (!mapped.ok()) {
    if (creator) ShmSegment::unlink(name);
    return mapped.status();
  }
  if (mapped.value() == local_size) {
    ShmSegment::unlink(name);
    HORA_RETURN_IF_ERROR(store.set(unlinked_key, Bytes{1}));
  }
  Status st = store.wait({unlinked_key}, deadline);
  if (!st.ok()) {
    ShmSegment::unlink(name);  // some local rank never mapped it; leave nothing behind
    return st.with_context(" (shared-memory segment " + name + ": " +
                           std::to_string(mapped.value()) + " of " + std::to_string(local_size) +
                           " local ranks mapped it)");
  }
  return segment;
}

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
