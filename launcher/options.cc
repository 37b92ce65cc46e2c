#include "launcher/options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "launcher/user_error.h"

namespace hora {
namespace launcher {
namespace {

StatusOr<int> parse_np(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE)
    return Status::invalid_argument(flag + " '" + v + "': expected a positive integer");
  if (n < 1 || n > 1000000)
    return Status::invalid_argument(flag + " " + v +
                                    ": the number of ranks must be between 1 and 1000000");
  return static_cast<int>(n);
}

StatusOr<double> parse_seconds(const std::string& flag, const std::string& v, bool allow_zero) {
  char* end = nullptr;
  errno = 0;
  const double s = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(s) || s < 0 ||
      (!allow_zero && s == 0))
    return Status::invalid_argument(flag + " '" + v + "': expected a number of seconds " +
                                    (allow_zero ? ">= 0" : "> 0"));
  return s;
}

}  // namespace

std::string usage_text() {
  return "usage: horarun -np N [-H host:slots,...|--hostfile FILE] [--rsh CMD]\n"
         "               [--backend gloo|mpi|builtin|nccl|auto] [--mpi] [--oversubscribe]\n"
         "               [--timeline PATH] [--output-dir DIR] [--start-timeout S] [--grace S]\n"
         "               [--rendezvous-addr ADDR] [--verbose] [--] prog [args...]\n"
         "  -np, -n, --num-proc N      number of ranks\n"
         "  -H, --hosts LIST           hosts and slots, e.g. a:4,b:4 (default localhost:N)\n"
         "  --hostfile FILE            one host a line: 'host slots=N' or 'host:N'\n"
         "  --rsh CMD                  starts ranks on remote hosts (default ssh)\n"
         "  --backend B                sets HORA_BACKEND for the ranks; mpi implies --mpi\n"
         "  --mpi                      hand the job to mpirun instead (the mpi backend; without\n"
         "                             --rsh, --output-dir, --grace, --rendezvous-addr)\n"
         "  --oversubscribe            with --mpi: pass --oversubscribe to mpirun\n"
         "  --timeline, --timeline-filename PATH   sets HORA_TIMELINE\n"
         "  --output-dir, --output-filename DIR    also write DIR/rank.R.stdout/.stderr\n"
         "  --start-timeout S          sets HORA_START_TIMEOUT_S\n"
         "  --grace S                  SIGTERM to SIGKILL delay at teardown (default 3)\n"
         "  --rendezvous-addr ADDR     address remote ranks use to reach this host's store\n"
         "  -v, --verbose              print the store address and each rank's command\n"
         "exit status: 0 when every rank exits 0; the first failed rank's exit code, or\n"
         "128+signal if it was killed or horarun was signalled; 2 for a bad invocation;\n"
         "1 when horarun itself fails.\n";
}

StatusOr<LauncherOptions> parse_options(const std::vector<std::string>& args) {
  LauncherOptions o;
  bool have_np = false;
  std::vector<std::string> own_supervision;  // flags only horarun's own supervisor honours
  size_t i = 0;
  for (; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.empty() || arg[0] != '-' || arg == "-") break;  // the program
    std::optional<std::string> inline_value;
    if (arg.rfind("--", 0) == 0 && arg.find('=') != std::string::npos) {
      inline_value = arg.substr(arg.find('=') + 1);
      arg = arg.substr(0, arg.find('='));
    }
    auto value = [&]() -> StatusOr<std::string> {
      if (inline_value) return *inline_value;
      if (i + 1 >= args.size()) return Status::invalid_argument(arg + " needs a value");
      return args[++i];
    };
    auto no_value = [&]() -> Status {
      if (inline_value) return Status::invalid_argument(arg + " takes no value");
      return Status::OK();
    };
    if (arg == "-np" || arg == "-n" || arg == "--num-proc" || arg == "--np") {
      HORARUN_ASSIGN_OR_RETURN(std::string v, value());
      HORARUN_ASSIGN_OR_RETURN(o.np, parse_np(arg, v));
      have_np = true;
    } else if (arg == "-H" || arg == "--hosts") {
      HORARUN_ASSIGN_OR_RETURN(o.hosts, value());
      if (o.hosts.empty()) return Status::invalid_argument(arg + ": empty host list");
    } else if (arg == "--hostfile" || arg == "-hostfile") {
      HORARUN_ASSIGN_OR_RETURN(o.hostfile, value());
    } else if (arg == "--rsh") {
      own_supervision.push_back(arg);
      HORARUN_ASSIGN_OR_RETURN(o.rsh, value());
      if (o.rsh.find_first_not_of(" \t") == std::string::npos)
        return Status::invalid_argument("--rsh: empty command");
    } else if (arg == "--backend") {
      HORARUN_ASSIGN_OR_RETURN(o.backend, value());
      if (o.backend != "gloo" && o.backend != "mpi" && o.backend != "builtin" &&
          o.backend != "nccl" && o.backend != "auto")
        return Status::invalid_argument("--backend '" + o.backend +
                                        "': expected gloo, mpi, builtin, nccl or auto");
      if (o.backend == "mpi") o.use_mpirun = true;
    } else if (arg == "--mpi") {
      HORARUN_RETURN_IF_ERROR(no_value());
      o.use_mpirun = true;
    } else if (arg == "--oversubscribe") {
      HORARUN_RETURN_IF_ERROR(no_value());
      o.oversubscribe = true;
    } else if (arg == "--timeline" || arg == "--timeline-filename") {
      HORARUN_ASSIGN_OR_RETURN(o.timeline, value());
      if (o.timeline.empty()) return Status::invalid_argument(arg + ": empty path");
    } else if (arg == "--output-dir" || arg == "--output-filename") {
      own_supervision.push_back(arg);
      HORARUN_ASSIGN_OR_RETURN(o.output_dir, value());
      if (o.output_dir.empty()) return Status::invalid_argument(arg + ": empty path");
    } else if (arg == "--start-timeout") {
      HORARUN_ASSIGN_OR_RETURN(std::string v, value());
      HORARUN_ASSIGN_OR_RETURN(o.start_timeout_s, parse_seconds(arg, v, false));
    } else if (arg == "--grace") {
      own_supervision.push_back(arg);
      HORARUN_ASSIGN_OR_RETURN(std::string v, value());
      HORARUN_ASSIGN_OR_RETURN(o.grace_s, parse_seconds(arg, v, true));
    } else if (arg == "--rendezvous-addr") {
      own_supervision.push_back(arg);
      HORARUN_ASSIGN_OR_RETURN(o.rendezvous_addr, value());
    } else if (arg == "-v" || arg == "--verbose") {
      HORARUN_RETURN_IF_ERROR(no_value());
      o.verbose = true;
    } else if (arg == "-h" || arg == "--help") {
      o.help = true;
      return o;
    } else {
      return Status::invalid_argument("unknown option '" + arg + "' (see horarun --help)");
    }
  }
  o.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  if (!have_np) return Status::invalid_argument("missing -np N (the number of ranks)");
  if (o.command.empty()) return Status::invalid_argument("missing the program to run");
  if (!o.hosts.empty() && !o.hostfile.empty())
    return Status::invalid_argument("give -H or --hostfile, not both");
  if (o.use_mpirun) {
    // mpirun starts, tags and tears down the ranks, and hosts no store of horarun's.
    if (!own_supervision.empty())
      return Status::invalid_argument(own_supervision.front() +
                                      " cannot be used with --mpi: mpirun supervises that job");
    if (!o.backend.empty() && o.backend != "mpi" && o.backend != "auto")
      return Status::invalid_argument("--backend " + o.backend +
                                      " cannot be used with --mpi: under mpirun hora runs on "
                                      "the mpi backend (drop --mpi to run " +
                                      o.backend + " under horarun)");
  }
  return o;
}

}  // namespace launcher
}  // namespace hora
