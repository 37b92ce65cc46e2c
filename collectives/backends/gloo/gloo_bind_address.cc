// Choosing the address gloo's pairs listen on: HORA_GLOO_IFACE, an explicit host name, loopback
// for local jobs, else the local address that routes to the rendezvous address (found with a
// UDP connect() + getsockname(): the kernel picks the source address without sending anything).
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "collectives/backends/gloo/gloo_communicator.h"

namespace hora {
namespace collectives {
namespace {

bool is_loopback_name(const std::string& host) {
  return host.empty() || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// The local address the kernel would use to reach `host`.
StatusOr<std::string> local_address_toward(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  int rc = ::getaddrinfo(host.c_str(), "9", &hints, &found);
  if (rc != 0)
    return Status::io("gloo: cannot resolve the rendezvous address '" + host +
                      "': " + ::gai_strerror(rc) + "; set HORA_GLOO_IFACE");
  std::string error = "no address";
  std::string result;
  for (addrinfo* a = found; a != nullptr && result.empty(); a = a->ai_next) {
    int fd = ::socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      char text[INET6_ADDRSTRLEN] = {};
      const void* src =
          local.ss_family == AF_INET
              ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr)
              : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr);
      if (::inet_ntop(local.ss_family, src, text, sizeof(text)) != nullptr) result = text;
    } else {
      error = std::strerror(errno);
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (result.empty())
    return Status::io("gloo: no route to the rendezvous address '" + host + "' (" + error +
                      "); set HORA_GLOO_IFACE");
  return result;
}

}  // namespace

StatusOr<GlooBindAddress> choose_gloo_bind_address(const GlooOptions& options) {
  GlooBindAddress bind;
  if (!options.iface.empty()) {
    bind.iface = options.iface;
  } else if (!options.hostname.empty()) {
    bind.hostname = options.hostname;
  } else if (is_loopback_name(options.rendezvous_addr)) {
    bind.hostname = "127.0.0.1";
  } else {
    HORA_ASSIGN_OR_RETURN(bind.hostname, local_address_toward(options.rendezvous_addr));
  }
  return bind;
}

}  // namespace collectives
}  // namespace hora
