// Checkpoint encoding, decoding and validation.
#include "examples/trainer/checkpoint.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <utility>

namespace hora {
namespace trainer {
namespace {

constexpr char kMagic[8] = {'H', 'O', 'R', 'A', 'C', 'K', 'P', 'T'};
constexpr uint32_t kVersion = 1;
constexpr uint8_t kParameter = 0, kState = 1;

uint64_t fnv1a(const std::string& bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

template <typename T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

void put_entry(std::string& out, uint8_t kind, const std::string& name, const float* data,
               int64_t count) {
  put(out, kind);
  put(out, static_cast<uint32_t>(name.size()));
  out += name;
  put(out, count);
  out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(count) * sizeof(float));
}

// A bounds-checked reader over the file's bytes.
class Reader {
 public:
  explicit Reader(const std::string& bytes, size_t end) : bytes_(bytes), end_(end) {}
  template <typename T>
  bool get(T& value) {
    if (end_ - pos_ < sizeof(T)) return false;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool get_bytes(size_t n, const char*& data) {
    if (end_ - pos_ < n) return false;
    data = bytes_.data() + pos_;
    pos_ += n;
    return true;
  }
  size_t pos() const { return pos_; }

 private:
  const std::string& bytes_;
  size_t end_;
  size_t pos_ = 0;
};

struct Entry {
  const char* data;
  int64_t count;
};

}  // namespace

Status save_checkpoint(const std::string& path, const std::vector<Parameter>& params,
                       const std::vector<StateTensor>& state, int64_t epoch) {
  std::string out(kMagic, sizeof(kMagic));
  put(out, kVersion);
  put(out, static_cast<uint32_t>(params.size() + state.size()));
  put(out, epoch);
  for (const Parameter& p : params) put_entry(out, kParameter, p.name, p.value, p.count);
  for (const StateTensor& s : state) put_entry(out, kState, s.name, s.data, s.count);
  put(out, fnv1a(out));

  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr)
    return Status::io("checkpoint: cannot create '" + tmp + "': " + std::strerror(errno));
  const bool wrote = std::fwrite(out.data(), 1, out.size(), f) == out.size();
  const int write_errno = errno;
  if (std::fclose(f) != 0 || !wrote) {
    std::remove(tmp.c_str());
    return Status::io("checkpoint: writing '" + tmp + "' failed: " + std::strerror(write_errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return Status::io("checkpoint: renaming '" + tmp + "' to '" + path +
                      "' failed: " + std::strerror(errno));
  return Status::OK();
}

StatusOr<int64_t> load_checkpoint(const std::string& path, const std::vector<Parameter>& params,
                                  const std::vector<StateTensor>& state) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::io("checkpoint: cannot open '" + path + "': " + std::strerror(errno));
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& what) {
    return Status::invalid_argument("checkpoint '" + path + "': " + what);
  };

  const size_t header = sizeof(kMagic) + 4 + 4 + 8;
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    return bad("not a hora checkpoint (expected the magic \"HORACKPT\" at the start)");
  if (bytes.size() < header + 8)
    return bad("truncated: " + std::to_string(bytes.size()) + " bytes, expected at least " +
               std::to_string(header + 8));
  Reader r(bytes, bytes.size() - 8);
  char magic[8];
  uint32_t version = 0, entries = 0;
  int64_t epoch = 0;
  r.get(magic);
  r.get(version);
  if (version != kVersion)
    return bad("format version " + std::to_string(version) + ", expected " +
               std::to_string(kVersion));
  uint64_t stored_sum = 0;
  std::memcpy(&stored_sum, bytes.data() + bytes.size() - 8, 8);
  if (stored_sum != fnv1a(bytes.substr(0, bytes.size() - 8)))
    return bad("checksum mismatch: the file is corrupted or truncated");
  r.get(entries);
  r.get(epoch);

  std::map<std::pair<uint8_t, std::string>, Entry> found;
  for (uint32_t i = 0; i < entries; ++i) {
    uint8_t kind = 0;
    uint32_t name_bytes = 0;
    const char* name = nullptr;
    int64_t count = 0;
    const char* data = nullptr;
    if (!r.get(kind) || !r.get(name_bytes) || !r.get_bytes(name_bytes, name) || !r.get(count) ||
        count < 0 || count > static_cast<int64_t>(bytes.size() / sizeof(float)) ||
        !r.get_bytes(static_cast<size_t>(count) * sizeof(float), data))
      return bad("entry " + std::to_string(i) + " of " + std::to_string(entries) +
                 " is malformed or runs past the end");
    if (kind != kParameter && kind != kState)
      return bad("entry " + std::to_string(i) + " has kind " + std::to_string(kind) +
                 ", expected 0 (parameter) or 1 (optimizer state)");
    found[{kind, std::string(name, name_bytes)}] = Entry{data, count};
  }
  if (r.pos() != bytes.size() - 8)
    return bad(std::to_string(bytes.size() - 8 - r.pos()) + " stray bytes after the last entry");

  // Check everything before writing anything.
  std::vector<std::pair<float*, Entry>> copies;
  auto expect = [&](uint8_t kind, const std::string& name, float* dst, int64_t count) -> Status {
    const char* what = kind == kParameter ? "parameter" : "optimizer state";
    auto it = found.find({kind, name});
    if (it == found.end()) return bad("has no " + std::string(what) + " '" + name + "'");
    if (it->second.count != count)
      return bad(std::string(what) + " '" + name + "' has " + std::to_string(it->second.count) +
                 " elements, expected " + std::to_string(count));
    copies.emplace_back(dst, it->second);
    found.erase(it);
    return Status::OK();
  };
  for (const Parameter& p : params)
    HORA_RETURN_IF_ERROR(expect(kParameter, p.name, p.value, p.count));
  for (const StateTensor& s : state) HORA_RETURN_IF_ERROR(expect(kState, s.name, s.data, s.count));
  if (!found.empty())
    return bad("holds '" + found.begin()->first.second +
               "', which this model and optimizer lack (" + std::to_string(found.size()) +
               " unexpected entries)");
  for (auto& [dst, entry] : copies)
    std::memcpy(dst, entry.data, static_cast<size_t>(entry.count) * sizeof(float));
  return epoch;
}

}  // namespace trainer
}  // namespace hora
