#include "core/base/host_identity.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace hora {

StatusOr<std::string> generate_secret() {
  unsigned char bytes[32];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = ::getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::io(std::string("getrandom: ") + std::strerror(errno));
    got += static_cast<size_t>(n);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char b : bytes) {
    hex += kHex[b >> 4];
    hex += kHex[b & 15];
  }
  return hex;
}

std::string first_external_ipv4() {
  struct ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "";
  std::string out;
  for (struct ifaddrs* i = list; i != nullptr && out.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if ((i->ifa_flags & IFF_UP) == 0 || (i->ifa_flags & IFF_LOOPBACK) != 0) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* sin = reinterpret_cast<const struct sockaddr_in*>(i->ifa_addr);
    if (::inet_ntop(AF_INET, &sin->sin_addr, text, sizeof(text)) != nullptr) out = text;
  }
  ::freeifaddrs(list);
  return out;
}

std::string host_identity() {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  std::string boot;
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::getline(f, boot);
  struct stat net;
  const std::string netns =
      ::stat("/proc/self/ns/net", &net) == 0 ? std::to_string(net.st_ino) : std::string();
  return std::string(host) + "/" + boot + "/net:" + netns;
}

}  // namespace hora
