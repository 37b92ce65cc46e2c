#!/bin/sh
# An ssh stand-in for hosts made by netns_hosts.sh, for horarun --rsh and Open MPI's
# plm_rsh_agent: `ns_rsh.sh [-x] HOST COMMAND...` runs COMMAND the way sshd would on HOST:
# the words joined into one string and given to a POSIX shell, in a fresh environment (only
# PATH and HOME survive), inside network namespace HOST with its own hostname HOST. Options
# before HOST (ssh's -x, which Open MPI passes) are ignored.
while [ $# -gt 0 ]; do
  case "$1" in
    -*) shift ;;
    *) break ;;
  esac
done
if [ $# -lt 2 ]; then
  echo "usage: ns_rsh.sh HOST COMMAND..." >&2
  exit 2
fi
host="$1"
shift
exec ip netns exec "$host" unshare --uts -- /bin/sh -c \
  'hostname "$0" && exec env -i PATH="$PATH" HOME="${HOME:-/}" /bin/sh -c "$1"' "$host" "$*"
