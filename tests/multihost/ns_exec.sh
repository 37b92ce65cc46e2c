#!/bin/sh
# `ns_exec.sh HOST PROG [ARGS...]`: runs PROG on a host made by netns_hosts.sh: inside network
# namespace HOST, in a UTS namespace of its own whose hostname is HOST. The environment is
# kept. PROG replaces this script (same pid), so killing it kills PROG.
if [ $# -lt 2 ]; then
  echo "usage: ns_exec.sh HOST PROG [ARGS...]" >&2
  exit 2
fi
host="$1"
shift
exec ip netns exec "$host" unshare --uts -- /bin/sh -c 'hostname "$0" && exec "$@"' "$host" "$@"
