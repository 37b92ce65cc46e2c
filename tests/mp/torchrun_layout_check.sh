#!/bin/sh
# init under a torchrun-style layout without horarun: two processes with RANK/WORLD_SIZE/
# MASTER_ADDR/MASTER_PORT; rank 0 hosts the store. Both must initialise and exit 0.
# Usage: torchrun_layout_check.sh INIT_PROBE
set -u
probe=$1
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
common="WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port HORA_START_TIMEOUT_S=20"
env -u HORA_RANK -u HORA_SIZE $common RANK=0 LOCAL_RANK=0 "$probe" & p0=$!
env -u HORA_RANK -u HORA_SIZE $common RANK=1 LOCAL_RANK=1 "$probe" & p1=$!
wait $p0; rc0=$?
wait $p1; rc1=$?
[ "$rc0" -eq 0 ] && [ "$rc1" -eq 0 ] || { echo "FAIL: exit codes $rc0 $rc1"; exit 1; }
echo "PASS"
