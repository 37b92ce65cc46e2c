#include "launcher/job_network.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hora {
namespace launcher {
namespace {

// The local IPv4 address that routes to `host`, or "" when it does not resolve.
std::string route_source_to(const std::string& host) {
  struct addrinfo hints;
  std::memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  struct addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), "9", &hints, &res) != 0 || !res) return "";
  std::string out;
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
    struct sockaddr_in local;
    socklen_t len = sizeof(local);
    char text[INET_ADDRSTRLEN] = {};
    if (::getsockname(fd, reinterpret_cast<struct sockaddr*>(&local), &len) == 0 &&
        ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text)))
      out = text;
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(res);
  return out;
}

}  // namespace

std::string advertise_address(const std::vector<std::string>& remote_hosts) {
  for (const std::string& host : remote_hosts) {
    const std::string addr = route_source_to(host);
    if (!addr.empty() && addr.rfind("127.", 0) != 0) return addr;
  }
  const std::string any = first_external_ipv4();
  return any.empty() ? "127.0.0.1" : any;
}

}  // namespace launcher
}  // namespace hora
