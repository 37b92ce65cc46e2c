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

// One flag of the command line: its name (arg) and its value, inline (--flag=value) or the
// next argument.
struct Flag {
  const std::vector<std::string>& args;
  size_t& i;  // the flag's index; value() moves it past a separate value
  std::string arg;
  std::optional<std::string> inline_value;

  StatusOr<std::string> value() {
    if (inline_value) return *inline_value;
    if (i + 1 >= args.size()) return Status::invalid_argument(arg + " needs a value");
    return args[++i];
  }
  Status no_value() const {
    if (inline_value) return Status::invalid_argument(arg + " takes no value");
    return Status::OK();
  }
};

// What parsing the flags gathers besides the options themselves.
struct FlagsSeen {
  bool have_np = false;
  std::vector<std::string> own_supervision;  // flags only horarun's own supervisor honours
};

// The flags that place and start the ranks (-np, -H, --hostfile, --rsh, --backend, --mpi,
// --oversubscribe). Returns false for a flag not of this group.
StatusOr<bool> parse_placement_flag(Flag& f, LauncherOptions& o, FlagsSeen& seen) {
  const std::string& arg = f.arg;
  if (arg == "-np" || arg == "-n" || arg == "--num-proc" || arg == "--np") {
    HORARUN_ASSIGN_OR_RETURN(std::string v, f.value());
    HORARUN_ASSIGN_OR_RETURN(o.np, parse_np(arg, v));
    seen.have_np = true;
  } else if (arg == "-H" || arg == "--hosts") {
    HORARUN_ASSIGN_OR_RETURN(o.hosts, f.value());
    if (o.hosts.empty()) return Status::invalid_argument(arg + ": empty host list");
  } else if (arg == "--hostfile" || arg == "-hostfile") {
    HORARUN_ASSIGN_OR_RETURN(o.hostfile, f.value());
  } else if (arg == "--rsh") {
    seen.own_supervision.push_back(arg);
    HORARUN_ASSIGN_OR_RETURN(o.rsh, f.value());
    if (o.rsh.find_first_not_of(" \t") == std::string::npos)
      return Status::invalid_argument("--rsh: empty command");
  } else if (arg == "--backend") {
    HORARUN_ASSIGN_OR_RETURN(o.backend, f.value());
    if (o.backend != "gloo" && o.backend != "mpi" && o.backend != "builtin" &&
        o.backend != "nccl" && o.backend != "auto")
      return Status::invalid_argument("--backend '" + o.backend +
                                      "': expected gloo, mpi, builtin, nccl or auto");
    if (o.backend == "mpi") o.use_mpirun = true;
  } else if (arg == "--mpi") {
    HORARUN_RETURN_IF_ERROR(f.no_value());
    o.use_mpirun = true;
  } else if (arg == "--oversubscribe") {
    HORARUN_RETURN_IF_ERROR(f.no_value());
    o.oversubscribe = true;
  } else {
    return false;
  }
  return true;
}

// The flags of the job's output and supervision (--timeline, --output-dir, --start-timeout,
// --grace, --rendezvous-addr, -v). Returns false for a flag not of this group.
StatusOr<bool> parse_supervision_flag(Flag& f, LauncherOptions& o, FlagsSeen& seen) {
  const std::string& arg = f.arg;
  if (arg == "--timeline" || arg == "--timeline-filename") {
    HORARUN_ASSIGN_OR_RETURN(o.timeline, f.value());
    if (o.timeline.empty()) return Status::invalid_argument(arg + ": empty path");
  } else if (arg == "--output-dir" || arg == "--output-filename") {
    seen.own_supervision.push_back(arg);
    HORARUN_ASSIGN_OR_RETURN(o.output_dir, f.value());
    if (o.output_dir.empty()) return Status::invalid_argument(arg + ": empty path");
  } else if (arg == "--start-timeout") {
    HORARUN_ASSIGN_OR_RETURN(std::string v, f.value());
    HORARUN_ASSIGN_OR_RETURN(o.start_timeout_s, parse_seconds(arg, v, false));
  } else if (arg == "--grace") {
    seen.own_supervision.push_back(arg);
    HORARUN_ASSIGN_OR_RETURN(std::string v, f.value());
    HORARUN_ASSIGN_OR_RETURN(o.grace_s, parse_seconds(arg, v, true));
  } else if (arg == "--rendezvous-addr") {
    seen.own_supervision.push_back(arg);
    HORARUN_ASSIGN_OR_RETURN(o.rendezvous_addr, f.value());
  } else if (arg == "-v" || arg == "--verbose") {
    HORARUN_RETURN_IF_ERROR(f.no_value());
    o.verbose = true;
  } else {
    return false;
  }
  return true;
}

StatusOr<int> parse_count(const std::string& flag, const std::string& v, int min) {
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE || n < min || n > 1000000)
    return Status::invalid_argument(flag + " '" + v + "': expected an integer between " +
                                    std::to_string(min) + " and 1000000");
  return static_cast<int>(n);
}

// The flags of elastic mode (--min-np, --max-np, --host-discovery-script, --elastic-timeout,
// --reset-limit, --blacklist-cooldown-range MIN MAX). Returns false for a flag not of this group.
StatusOr<bool> parse_elastic_flag(Flag& f, LauncherOptions& o) {
  const std::string& arg = f.arg;
  ElasticOptions& e = o.elastic;
  if (arg == "--min-np" || arg == "--max-np") {
    HORARUN_ASSIGN_OR_RETURN(std::string v, f.value());
    HORARUN_ASSIGN_OR_RETURN(int n, parse_np(arg, v));
    (arg == "--min-np" ? e.min_np : e.max_np) = n;
    e.enabled = true;
  } else if (arg == "--host-discovery-script") {
    HORARUN_ASSIGN_OR_RETURN(e.discovery_script, f.value());
    if (e.discovery_script.find_first_not_of(" \t") == std::string::npos)
      return Status::invalid_argument(arg + ": empty command");
    e.enabled = true;
  } else if (arg == "--elastic-timeout") {
    HORARUN_ASSIGN_OR_RETURN(std::string v, f.value());
    HORARUN_ASSIGN_OR_RETURN(e.timeout_s, parse_seconds(arg, v, false));
  } else if (arg == "--reset-limit") {
    HORARUN_ASSIGN_OR_RETURN(std::string v, f.value());
    HORARUN_ASSIGN_OR_RETURN(e.reset_limit, parse_count(arg, v, 0));
  } else if (arg == "--blacklist-cooldown-range") {
    HORARUN_ASSIGN_OR_RETURN(std::string low_text, f.value());
    if (f.i + 1 >= f.args.size())
      return Status::invalid_argument(arg + " needs two values: MIN MAX (seconds)");
    const std::string high_text = f.args[++f.i];
    HORARUN_ASSIGN_OR_RETURN(double low, parse_seconds(arg, low_text, true));
    HORARUN_ASSIGN_OR_RETURN(double high, parse_seconds(arg, high_text, true));
    if (high < low)
      return Status::invalid_argument(arg + " " + low_text + " " + high_text +
                                      ": MAX must not be below MIN");
    e.cooldown_range = std::make_pair(low, high);
  } else {
    return false;
  }
  return true;
}

// Elastic mode's sizes: -np defaults to --min-np, --min-np to -np; min <= np <= max.
Status check_elastic(LauncherOptions& o, FlagsSeen& seen) {
  ElasticOptions& e = o.elastic;
  const bool tuning = e.timeout_s != 600.0 || e.reset_limit >= 0 || e.cooldown_range;
  if (!e.enabled) {
    if (tuning)
      return Status::invalid_argument(
          "--elastic-timeout, --reset-limit and --blacklist-cooldown-range need elastic mode "
          "(--min-np, --max-np or --host-discovery-script)");
    return Status::OK();
  }
  if (o.use_mpirun)
    return Status::invalid_argument(
        "elastic mode cannot be used with --mpi: horarun's own "
        "driver starts and replaces the workers");
  if (!seen.have_np && e.min_np > 0) {
    o.np = e.min_np;
    seen.have_np = true;
  }
  if (e.min_np == 0) e.min_np = o.np;
  if (seen.have_np && o.np < e.min_np)
    return Status::invalid_argument("-np " + std::to_string(o.np) + " is below --min-np " +
                                    std::to_string(e.min_np));
  if (e.max_np != 0 && (e.max_np < e.min_np || (seen.have_np && o.np > e.max_np)))
    return Status::invalid_argument("--max-np " + std::to_string(e.max_np) + " is below -np " +
                                    std::to_string(o.np) + " or --min-np " +
                                    std::to_string(e.min_np));
  return Status::OK();
}

// The checks across flags, once all are read.
Status check_options(const LauncherOptions& o, const FlagsSeen& seen) {
  if (!seen.have_np) return Status::invalid_argument("missing -np N (the number of ranks)");
  if (o.command.empty()) return Status::invalid_argument("missing the program to run");
  if (!o.hosts.empty() && !o.hostfile.empty())
    return Status::invalid_argument("give -H or --hostfile, not both");
  if (o.use_mpirun) {
    // mpirun starts, tags and tears down the ranks, and hosts no store of horarun's.
    if (!seen.own_supervision.empty())
      return Status::invalid_argument(seen.own_supervision.front() +
                                      " cannot be used with --mpi: mpirun supervises that job");
    if (!o.backend.empty() && o.backend != "mpi" && o.backend != "auto")
      return Status::invalid_argument("--backend " + o.backend +
                                      " cannot be used with --mpi: under mpirun hora runs on "
                                      "the mpi backend (drop --mpi to run " +
                                      o.backend + " under horarun)");
  }
  return Status::OK();
}

}  // namespace

std::string usage_text() {
  return "usage: horarun -np N [-H host:slots,...|--hostfile FILE] [--rsh CMD]\n"
         "               [--backend gloo|mpi|builtin|nccl|auto] [--mpi] [--oversubscribe]\n"
         "               [--timeline PATH] [--output-dir DIR] [--start-timeout S] [--grace S]\n"
         "               [--rendezvous-addr ADDR] [--verbose]\n"
         "               [--min-np N] [--max-np N] [--host-discovery-script CMD]\n"
         "               [--elastic-timeout S] [--reset-limit N]\n"
         "               [--blacklist-cooldown-range MIN MAX] [--] prog [args...]\n"
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
         "elastic mode (on with --min-np, --max-np or --host-discovery-script; -np is the\n"
         "starting size): workers that fail are dropped and the others go on\n"
         "  --min-np N                 fewest workers to go on with (default -np)\n"
         "  --max-np N                 most workers (default: every slot offered)\n"
         "  --host-discovery-script CMD   prints 'host:slots' lines; run every second\n"
         "  --elastic-timeout S        wait this long for enough slots (default 600)\n"
         "  --reset-limit N            end the job after N membership changes\n"
         "  --blacklist-cooldown-range MIN MAX   a failed host comes back after a cooldown\n"
         "                             between MIN and MAX seconds (default: never)\n"
         "exit status: 0 when every rank exits 0; the first failed rank's exit code, or\n"
         "128+signal if it was killed or horarun was signalled; 2 for a bad invocation;\n"
         "1 when horarun itself fails.\n";
}

StatusOr<LauncherOptions> parse_options(const std::vector<std::string>& args) {
  LauncherOptions o;
  FlagsSeen seen;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    Flag f{args, i, args[i], std::nullopt};
    if (f.arg == "--") {
      ++i;
      break;
    }
    if (f.arg.empty() || f.arg[0] != '-' || f.arg == "-") break;  // the program
    if (f.arg.rfind("--", 0) == 0 && f.arg.find('=') != std::string::npos) {
      f.inline_value = f.arg.substr(f.arg.find('=') + 1);
      f.arg = f.arg.substr(0, f.arg.find('='));
    }
    if (f.arg == "-h" || f.arg == "--help") {
      o.help = true;
      return o;
    }
    HORARUN_ASSIGN_OR_RETURN(bool known, parse_placement_flag(f, o, seen));
    if (known) continue;
    HORARUN_ASSIGN_OR_RETURN(known, parse_supervision_flag(f, o, seen));
    if (known) continue;
    HORARUN_ASSIGN_OR_RETURN(known, parse_elastic_flag(f, o));
    if (!known)
      return Status::invalid_argument("unknown option '" + f.arg + "' (see horarun --help)");
  }
  o.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  HORARUN_RETURN_IF_ERROR(check_elastic(o, seen));
  HORARUN_RETURN_IF_ERROR(check_options(o, seen));
  return o;
}

}  // namespace launcher
}  // namespace hora
