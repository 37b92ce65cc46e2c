#include "collectives/rendezvous/file_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

#include "collectives/rendezvous/memory_store.h"

namespace hora {
namespace collectives {
namespace {

Status io_error(const std::string& what, const std::string& path) {
  return Status::io("file store: " + what + " '" + path + "': " + std::strerror(errno));
}

std::string hex(const std::string& key) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out = "k";
  for (unsigned char c : key) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

// RAII lock file held with flock(LOCK_EX).
class FileLock {
 public:
  explicit FileLock(const std::string& path)
      : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  bool is_held() const { return fd_ >= 0; }

 private:
  int fd_;
};

}  // namespace

StatusOr<std::unique_ptr<FileStore>> FileStore::open(const std::string& directory) {
  if (directory.empty())
    return Status::invalid_argument("file store directory is empty: expected a path");
  if (::mkdir(directory.c_str(), 0700) != 0 && errno != EEXIST)
    return io_error("cannot create directory", directory);
  if (::access(directory.c_str(), W_OK) != 0) return io_error("cannot write to", directory);
  return std::unique_ptr<FileStore>(new FileStore(directory));
}

std::string FileStore::path_of(const std::string& key) const { return directory_ + "/" + hex(key); }

StatusOr<Bytes> FileStore::read(const std::string& key) const {
  std::ifstream in(path_of(key), std::ios::binary);
  if (!in) return Status::failed_precondition("absent");
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

Status FileStore::set(const std::string& key, const Bytes& value) {
  static std::atomic<uint64_t> counter{0};
  const std::string path = path_of(key);
  const std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(value.data()),
              static_cast<std::streamsize>(value.size()));
    if (!out) return io_error("cannot write", tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) return io_error("cannot rename into", path);
  return Status::OK();
}

StatusOr<Bytes> FileStore::get(const std::string& key, Deadline deadline) {
  HORA_RETURN_IF_ERROR(wait({key}, deadline));
  auto value = read(key);
  if (!value.ok()) return Status::remote("file store key '" + key + "' vanished after it appeared");
  return value;
}

StatusOr<int64_t> FileStore::add(const std::string& key, int64_t delta) {
  FileLock lock(path_of(key) + ".lock");
  if (!lock.is_held()) return io_error("cannot lock", path_of(key) + ".lock");
  int64_t current = 0;
  auto existing = read(key);
  if (existing.ok()) {
    HORA_ASSIGN_OR_RETURN(current, parse_counter(key, existing.value()));
  }
  const int64_t result =
      static_cast<int64_t>(static_cast<uint64_t>(current) + static_cast<uint64_t>(delta));
  HORA_RETURN_IF_ERROR(set(key, format_counter(result)));
  return result;
}

StatusOr<bool> FileStore::check(const std::vector<std::string>& keys) {
  for (const auto& k : keys)
    if (::access(path_of(k).c_str(), F_OK) != 0) return false;
  return true;
}

Status FileStore::wait(const std::vector<std::string>& keys, Deadline deadline) {
  auto backoff = std::chrono::milliseconds(1);
  while (true) {
    std::vector<std::string> missing;
    for (const auto& k : keys)
      if (::access(path_of(k).c_str(), F_OK) != 0) missing.push_back(k);
    if (missing.empty()) return Status::OK();
    if (deadline.expired())
      return Status::timeout("file store wait in '" + directory_ +
                             "' timed out; keys still missing: " + join_keys(missing));
    std::this_thread::sleep_for(std::min(backoff, deadline.remaining()));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(50));
  }
}

StatusOr<bool> FileStore::remove(const std::string& key) {
  if (::unlink(path_of(key).c_str()) == 0) return true;
  if (errno == ENOENT) return false;
  return io_error("cannot remove", path_of(key));
}

}  // namespace collectives
}  // namespace hora
