#!/bin/sh
# Stands in for ssh in the launcher tests: `fake_rsh.sh HOST COMMAND...` runs COMMAND on this
# machine the way sshd would on HOST: joined into one string, given to a POSIX shell, in a
# fresh environment (only PATH and HOME survive, so every HORA_* variable the rank sees came
# on the command line or, for HORA_SECRET, through stdin). With FAKE_RSH_LOG set, appends HOST
# to that file.
host="$1"
shift
if [ -n "$FAKE_RSH_LOG" ]; then
  echo "$host" >> "$FAKE_RSH_LOG"
fi
exec env -i PATH="$PATH" HOME="${HOME:-/}" /bin/sh -c "$*"
