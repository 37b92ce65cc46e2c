#include "collectives/backends/nccl/nccl_library.h"

#include <dlfcn.h>

#include <mutex>

namespace hora {
namespace collectives {
namespace nccl_backend {
namespace {

struct Loaded {
  NcclLibrary table{};
  bool ok = false;
  std::string error;
};

template <typename Fn>
bool resolve(void* handle, const char* name, Fn* out, std::string* error) {
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) {
    *error = std::string("libnccl.so.2 has no ") + name + " (NCCL 2.18 or newer is needed)";
    return false;
  }
  *out = reinterpret_cast<Fn>(symbol);
  return true;
}

Loaded load() {
  Loaded l;
  // RTLD_LOCAL: NCCL's symbols stay out of the global namespace, so hora never decides which
  // NCCL a framework loaded later binds to.
  void* handle = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    l.error = std::string("cannot load libnccl.so.2: ") + (why ? why : "unknown error");
    return l;
  }
  NcclLibrary& t = l.table;
  std::string* e = &l.error;
  l.ok = resolve(handle, "ncclGetVersion", &t.get_version, e) &&
         resolve(handle, "ncclGetUniqueId", &t.get_unique_id, e) &&
         resolve(handle, "ncclCommInitRankConfig", &t.comm_init_rank_config, e) &&
         resolve(handle, "ncclCommGetAsyncError", &t.comm_get_async_error, e) &&
         resolve(handle, "ncclCommFinalize", &t.comm_finalize, e) &&
         resolve(handle, "ncclCommDestroy", &t.comm_destroy, e) &&
         resolve(handle, "ncclCommAbort", &t.comm_abort, e) &&
         resolve(handle, "ncclGetErrorString", &t.get_error_string, e) &&
         resolve(handle, "ncclGetLastError", &t.get_last_error, e) &&
         resolve(handle, "ncclGroupStart", &t.group_start, e) &&
         resolve(handle, "ncclGroupEnd", &t.group_end, e) &&
         resolve(handle, "ncclSend", &t.send, e) && resolve(handle, "ncclRecv", &t.recv, e) &&
         resolve(handle, "ncclAllReduce", &t.all_reduce, e) &&
         resolve(handle, "ncclBroadcast", &t.broadcast, e) &&
         resolve(handle, "ncclReduce", &t.reduce, e) &&
         resolve(handle, "ncclAllGather", &t.all_gather, e) &&
         resolve(handle, "ncclReduceScatter", &t.reduce_scatter, e);
  return l;  // the handle stays open for the life of the process
}

const Loaded& loaded() {
  static Loaded* l = nullptr;
  static std::once_flag once;
  std::call_once(once, [] { l = new Loaded(load()); });  // never destroyed: used until exit
  return *l;
}

}  // namespace

const NcclLibrary* nccl_library() {
  const Loaded& l = loaded();
  return l.ok ? &l.table : nullptr;
}

const std::string& nccl_load_error() { return loaded().error; }

}  // namespace nccl_backend
}  // namespace collectives
}  // namespace hora
