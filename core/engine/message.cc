#include "core/engine/message.h"

#include <sstream>

#include "hora/tensor_view.h"

namespace hora {
namespace engine {
namespace {

bool shape_agrees(const Request& a, const Request& b) {
  // Allgather and alltoall rows may differ per rank; the other dimensions must match.
  if (a.type == CollectiveType::kAllgather || a.type == CollectiveType::kAlltoall) {
    if (a.shape.size() != b.shape.size()) return false;
    for (size_t i = 1; i < a.shape.size(); ++i)
      if (a.shape[i] != b.shape[i]) return false;
    return true;
  }
  return a.shape == b.shape;
}

bool uses_op(CollectiveType t) {
  return t == CollectiveType::kAllreduce || t == CollectiveType::kReducescatter;
}

std::string on_ranks(const std::string& what, const std::string& va, int ra, const std::string& vb,
                     int rb) {
  return what + " " + va + " on rank " + std::to_string(ra) + " but " + vb + " on rank " +
         std::to_string(rb);
}

std::string format_double(double v) {
  std::ostringstream out;
  out.precision(17);
  out << v;
  return out.str();
}

// One field's mismatch between a and b, or "".
std::string field_mismatch(const Request& a, const Request& b) {
  const char* c = collective_name(a.type);
  if (a.type != b.type)
    return on_ranks("collective", collective_name(a.type), a.rank, collective_name(b.type), b.rank);
  if (a.dtype != b.dtype)
    return on_ranks(std::string(c) + " dtype", data_type_name(a.dtype), a.rank,
                    data_type_name(b.dtype), b.rank);
  if (!shape_agrees(a, b)) {
    std::string m = on_ranks(std::string(c) + " shape", shape_to_string(a.shape), a.rank,
                             shape_to_string(b.shape), b.rank);
    if (a.type == CollectiveType::kAllgather || a.type == CollectiveType::kAlltoall)
      m += " (all but the first dimension must match)";
    return m;
  }
  if (a.device.kind != b.device.kind)
    return on_ranks(std::string(c) + " device", a.device.to_string(), a.rank, b.device.to_string(),
                    b.rank);
  if (uses_op(a.type) && a.op != b.op)
    return on_ranks(std::string(c) + " op", reduce_op_name(a.op), a.rank, reduce_op_name(b.op),
                    b.rank);
  if (a.type == CollectiveType::kBroadcast && a.root != b.root)
    return on_ranks("broadcast root", std::to_string(a.root), a.rank, std::to_string(b.root),
                    b.rank);
  // Allreduce and reducescatter take scale factors.
  if (uses_op(a.type) && a.prescale != b.prescale)
    return on_ranks(std::string(c) + " prescale", format_double(a.prescale), a.rank,
                    format_double(b.prescale), b.rank);
  if (uses_op(a.type) && a.postscale != b.postscale)
    return on_ranks(std::string(c) + " postscale", format_double(a.postscale), a.rank,
                    format_double(b.postscale), b.rank);
  if (a.compression != b.compression)
    return on_ranks(std::string(c) + " compression", compression_name(a.compression), a.rank,
                    compression_name(b.compression), b.rank);
  if (a.group_key != b.group_key || a.group_size != b.group_size)
    return on_ranks(std::string(c) + " group",
                    a.group_size ? "'" + a.group_key + "' of " + std::to_string(a.group_size)
                                 : std::string("none"),
                    a.rank,
                    b.group_size ? "'" + b.group_key + "' of " + std::to_string(b.group_size)
                                 : std::string("none"),
                    b.rank);
  return "";
}

}  // namespace

const char* collective_name(CollectiveType type) {
  switch (type) {
    case CollectiveType::kAllreduce: return "allreduce";
    case CollectiveType::kAllgather: return "allgather";
    case CollectiveType::kBroadcast: return "broadcast";
    case CollectiveType::kAlltoall: return "alltoall";
    case CollectiveType::kReducescatter: return "reducescatter";
    case CollectiveType::kBarrier: return "barrier";
    case CollectiveType::kJoin: return "join";
  }
  return "unknown";
}

bool same_signature(const Request& a, const Request& b) {
  return a.name == b.name && field_mismatch(a, b).empty() && a.shape == b.shape &&
         a.device == b.device;
}

std::string validate_requests(const std::vector<const Request*>& requests, int size) {
  if (requests.empty()) return "";
  const Request& first = *requests[0];
  for (size_t i = 1; i < requests.size(); ++i) {
    std::string m = field_mismatch(first, *requests[i]);
    if (!m.empty()) return "tensor '" + first.name + "': " + m;
  }
  if (first.type == CollectiveType::kBroadcast && (first.root < 0 || first.root >= size))
    return "tensor '" + first.name + "': broadcast root " + std::to_string(first.root) +
           " is not a rank of this job of " + std::to_string(size) + " ranks";
  if (first.type == CollectiveType::kAlltoall) {
    for (const Request* r : requests)
      if (static_cast<int>(r->splits.size()) != size)
        return "tensor '" + first.name + "': alltoall on rank " + std::to_string(r->rank) +
               " has " + std::to_string(r->splits.size()) + " splits but the job has " +
               std::to_string(size) + " ranks";
  }
  return "";
}

int64_t Response::element_count() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

Status decode_enums(uint8_t type, uint8_t dtype, uint8_t device, uint8_t op, uint8_t compression,
                    const char* what) {
  if (type >= kNumCollectiveTypes)
    return Status::internal(std::string("corrupted control message: ") + what +
                            " collective type " + std::to_string(type));
  if (dtype >= kNumDataTypes)
    return Status::internal(std::string("corrupted control message: ") + what + " dtype " +
                            std::to_string(dtype));
  if (device > static_cast<uint8_t>(DeviceKind::kCuda))
    return Status::internal(std::string("corrupted control message: ") + what + " device " +
                            std::to_string(device));
  if (op >= kNumReduceOps)
    return Status::internal(std::string("corrupted control message: ") + what + " op " +
                            std::to_string(op));
  if (compression >= kNumCompressions)
    return Status::internal(std::string("corrupted control message: ") + what + " compression " +
                            std::to_string(compression));
  return Status::OK();
}

Status decode_int32(Reader& r, int32_t* out, const char* what) {
  int64_t v;
  HORA_RETURN_IF_ERROR(r.i64(&v, what));
  if (v < INT32_MIN || v > INT32_MAX)
    return Status::internal(std::string("corrupted control message: ") + what + " " +
                            std::to_string(v));
  *out = static_cast<int32_t>(v);
  return Status::OK();
}

// The fields Request and Response share, in one order for both.
template <typename T>
void encode_common(const T& r, Writer& w) {
  w.str(r.name);
  w.u8(static_cast<uint8_t>(r.type));
  w.u8(static_cast<uint8_t>(r.dtype));
  w.i64s(r.shape.data(), r.shape.size());
  w.u8(static_cast<uint8_t>(r.device.kind));
  w.i64(r.device.index);
  w.u8(static_cast<uint8_t>(r.op));
  w.i64(r.root);
  w.f64(r.prescale);
  w.f64(r.postscale);
  w.u8(static_cast<uint8_t>(r.compression));
  w.i64s(r.splits);
  w.str(r.group_key);
  w.i64(r.group_size);
}

template <typename T>
Status decode_common(Reader& r, T* out, const char* what) {
  uint8_t type, dtype, device, op, compression;
  HORA_RETURN_IF_ERROR(r.str(&out->name, "name"));
  HORA_RETURN_IF_ERROR(r.u8(&type, "collective type"));
  HORA_RETURN_IF_ERROR(r.u8(&dtype, "dtype"));
  std::vector<int64_t> shape;
  HORA_RETURN_IF_ERROR(r.i64s(&shape, "shape"));
  out->shape = shape;
  HORA_RETURN_IF_ERROR(r.u8(&device, "device"));
  HORA_RETURN_IF_ERROR(decode_int32(r, &out->device.index, "device index"));
  HORA_RETURN_IF_ERROR(r.u8(&op, "op"));
  HORA_RETURN_IF_ERROR(decode_int32(r, &out->root, "root"));
  HORA_RETURN_IF_ERROR(r.f64(&out->prescale, "prescale"));
  HORA_RETURN_IF_ERROR(r.f64(&out->postscale, "postscale"));
  HORA_RETURN_IF_ERROR(r.u8(&compression, "compression"));
  HORA_RETURN_IF_ERROR(r.i64s(&out->splits, "splits"));
  HORA_RETURN_IF_ERROR(r.str(&out->group_key, "group"));
  HORA_RETURN_IF_ERROR(decode_int32(r, &out->group_size, "group size"));
  HORA_RETURN_IF_ERROR(decode_enums(type, dtype, device, op, compression, what));
  out->type = static_cast<CollectiveType>(type);
  out->dtype = static_cast<DataType>(dtype);
  out->device.kind = static_cast<DeviceKind>(device);
  out->op = static_cast<ReduceOp>(op);
  out->compression = static_cast<Compression>(compression);
  return Status::OK();
}

}  // namespace

void encode_request(const Request& r, Writer& w) {
  encode_common(r, w);
  w.i64(r.rank);
  w.i64(r.waited_us);
}

Status decode_request(Reader& r, Request* out) {
  HORA_RETURN_IF_ERROR(decode_common(r, out, "request"));
  HORA_RETURN_IF_ERROR(decode_int32(r, &out->rank, "request rank"));
  HORA_RETURN_IF_ERROR(r.i64(&out->waited_us, "request wait"));
  if (out->waited_us < 0)
    return Status::internal("corrupted control message: request wait " +
                            std::to_string(out->waited_us) + " us");
  return Status::OK();
}

void encode_response(const Response& r, Writer& w) {
  encode_common(r, w);
  w.str(r.error);
  w.i64(r.error_code);
  w.i64s(r.first_dims);
  w.i64(r.last_joined);
}

Status decode_response(Reader& r, Response* out) {
  HORA_RETURN_IF_ERROR(decode_common(r, out, "response"));
  HORA_RETURN_IF_ERROR(r.str(&out->error, "response error"));
  HORA_RETURN_IF_ERROR(decode_int32(r, &out->error_code, "response error code"));
  HORA_RETURN_IF_ERROR(r.i64s(&out->first_dims, "response first dims"));
  return decode_int32(r, &out->last_joined, "response last joined");
}

std::vector<uint8_t> encode_requests(const std::vector<Request>& requests) {
  Writer w;
  w.u32(static_cast<uint32_t>(requests.size()));
  for (const Request& r : requests) encode_request(r, w);
  return w.take();
}

StatusOr<std::vector<Request>> decode_requests(const std::vector<uint8_t>& bytes) {
  Reader r(bytes.data(), bytes.size());
  uint32_t n;
  HORA_RETURN_IF_ERROR(r.u32(&n, "request count"));
  if (n > kMaxWireVector)
    return Status::internal("corrupted control message: " + std::to_string(n) + " requests");
  std::vector<Request> out;
  for (uint32_t i = 0; i < n; ++i) {
    Request req;
    HORA_RETURN_IF_ERROR(decode_request(r, &req));
    out.push_back(std::move(req));
  }
  if (!r.done())
    return Status::internal(
        "corrupted control message: " + std::to_string(bytes.size() - r.position()) +
        " trailing bytes after the requests");
  return out;
}

std::vector<uint8_t> encode_response_list(const ResponseList& list) {
  Writer w;
  w.u8(list.shutdown ? 1 : 0);
  w.str(list.fatal);
  w.u32(static_cast<uint32_t>(list.responses.size()));
  for (const Response& r : list.responses) encode_response(r, w);
  return w.take();
}

StatusOr<ResponseList> decode_response_list(const std::vector<uint8_t>& bytes) {
  Reader r(bytes.data(), bytes.size());
  ResponseList list;
  uint8_t shutdown;
  uint32_t n;
  HORA_RETURN_IF_ERROR(r.u8(&shutdown, "shutdown flag"));
  HORA_RETURN_IF_ERROR(r.str(&list.fatal, "fatal error"));
  HORA_RETURN_IF_ERROR(r.u32(&n, "response count"));
  if (shutdown > 1 || n > kMaxWireVector)
    return Status::internal("corrupted control message: response list header");
  list.shutdown = shutdown == 1;
  for (uint32_t i = 0; i < n; ++i) {
    Response resp;
    HORA_RETURN_IF_ERROR(decode_response(r, &resp));
    list.responses.push_back(std::move(resp));
  }
  if (!r.done())
    return Status::internal(
        "corrupted control message: " + std::to_string(bytes.size() - r.position()) +
        " trailing bytes after the responses");
  return list;
}

}  // namespace engine
}  // namespace hora
