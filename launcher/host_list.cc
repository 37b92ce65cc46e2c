#include "launcher/host_list.h"

#include <unistd.h>

#include <cctype>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "launcher/user_error.h"

namespace hora {
namespace launcher {
namespace {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// A positive decimal int, or -1.
int parse_slots(const std::string& s) {
  if (s.empty() || s.size() > 9) return -1;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
  int n = std::atoi(s.c_str());
  return n > 0 ? n : -1;
}

Status add_host(std::vector<HostSlots>* hosts, std::set<std::string>* seen, const std::string& host,
                const std::string& slots_text, const std::string& where) {
  if (host.empty()) return Status::invalid_argument(where + ": empty host name");
  int slots = 1;
  if (!slots_text.empty()) {
    slots = parse_slots(slots_text);
    if (slots < 0)
      return Status::invalid_argument(where + ": host '" + host + "' has slot count '" +
                                      slots_text + "', expected a positive integer");
  }
  if (!seen->insert(host).second)
    return Status::invalid_argument(where + ": host '" + host + "' is listed twice");
  hosts->push_back({host, slots});
  return Status::OK();
}

}  // namespace

StatusOr<std::vector<HostSlots>> parse_host_list(const std::string& text) {
  std::vector<HostSlots> hosts;
  std::set<std::string> seen;
  const std::string where = "-H '" + text + "'";
  if (trim(text).empty()) return Status::invalid_argument(where + ": empty host list");
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    item = trim(item);
    if (item.empty()) return Status::invalid_argument(where + ": empty entry");
    const size_t colon = item.rfind(':');
    if (colon == std::string::npos) {
      HORARUN_RETURN_IF_ERROR(add_host(&hosts, &seen, item, "", where));
    } else {
      std::string slots = item.substr(colon + 1);
      if (slots.empty())
        return Status::invalid_argument(where + ": host '" + item.substr(0, colon) +
                                        "' has an empty slot count");
      HORARUN_RETURN_IF_ERROR(add_host(&hosts, &seen, item.substr(0, colon), slots, where));
    }
  }
  if (!text.empty() && text.back() == ',') return Status::invalid_argument(where + ": empty entry");
  return hosts;
}

StatusOr<std::vector<HostSlots>> parse_hostfile_text(const std::string& text,
                                                     const std::string& origin) {
  std::vector<HostSlots> hosts;
  std::set<std::string> seen;
  std::stringstream in(text);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    const std::string where = "hostfile " + origin + " line " + std::to_string(line_no);
    std::stringstream words(line);
    std::string host, extra, more;
    words >> host >> extra >> more;
    if (!more.empty())
      return Status::invalid_argument(where + ": expected 'host slots=N', got '" + line + "'");
    std::string slots;
    if (!extra.empty()) {
      if (extra.rfind("slots=", 0) != 0)
        return Status::invalid_argument(where + ": expected 'host slots=N', got '" + line + "'");
      slots = extra.substr(6);
      if (slots.empty())
        return Status::invalid_argument(where + ": host '" + host + "' has an empty slot count");
    } else if (host.find(':') != std::string::npos) {
      slots = host.substr(host.rfind(':') + 1);
      host = host.substr(0, host.rfind(':'));
      if (slots.empty())
        return Status::invalid_argument(where + ": host '" + host + "' has an empty slot count");
    }
    HORARUN_RETURN_IF_ERROR(add_host(&hosts, &seen, host, slots, where));
  }
  if (hosts.empty()) return Status::invalid_argument("hostfile " + origin + " lists no host");
  return hosts;
}

StatusOr<std::vector<HostSlots>> read_hostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::invalid_argument("cannot read hostfile '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return parse_hostfile_text(text.str(), "'" + path + "'");
}

std::string format_host_list(const std::vector<HostSlots>& hosts) {
  std::string out;
  for (const HostSlots& h : hosts) {
    if (!out.empty()) out += ',';
    out += h.host + ":" + std::to_string(h.slots);
  }
  return out;
}

bool is_local_host(const std::string& host, const std::string& this_host) {
  if (host == "localhost" || host == "127.0.0.1" || host == "::1") return true;
  if (host == this_host) return true;
  const std::string short_this = this_host.substr(0, this_host.find('.'));
  return !short_this.empty() && host == short_this;
}

std::string this_hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

StatusOr<std::vector<RankPlacement>> layout_ranks(const std::vector<HostSlots>& hosts, int np,
                                                  const std::string& this_host) {
  if (np < 1) return Status::invalid_argument("-np " + std::to_string(np) + ": must be >= 1");
  long total = 0;
  for (const HostSlots& h : hosts) total += h.slots;
  if (total < np)
    return Status::invalid_argument("-np " + std::to_string(np) + " needs " + std::to_string(np) +
                                    " slots but the hosts have " + std::to_string(total) + " (" +
                                    format_host_list(hosts) + ")");
  // local_sizes[h]: how many ranks host h gets.
  std::vector<int> local_sizes;
  int left = np;
  for (const HostSlots& h : hosts) {
    if (left == 0) break;
    const int take = h.slots < left ? h.slots : left;
    local_sizes.push_back(take);
    left -= take;
  }
  std::vector<RankPlacement> ranks;
  int rank = 0;
  for (size_t h = 0; h < local_sizes.size(); ++h) {
    for (int l = 0; l < local_sizes[h]; ++l) {
      RankPlacement p;
      p.rank = rank++;
      p.size = np;
      p.local_rank = l;
      p.local_size = local_sizes[h];
      p.cross_rank = 0;
      p.cross_size = 0;
      for (size_t g = 0; g < local_sizes.size(); ++g) {
        if (local_sizes[g] <= l) continue;
        if (g < h) ++p.cross_rank;
        ++p.cross_size;
      }
      p.host = hosts[h].host;
      p.is_local = is_local_host(p.host, this_host);
      ranks.push_back(p);
    }
  }
  return ranks;
}

}  // namespace launcher
}  // namespace hora
