#!/usr/bin/env bash
# Runs the allreduce sweeps behind the README's performance section and regenerates that
# section (between <!-- bench:begin --> and <!-- bench:end -->) with the date, the machine,
# the commands, the ratio table and links to the plots. For N = 2 and 4, each a run of its
# own, every implementation side by side on the same buffers:
#   1. horarun, HORA_BACKEND=builtin: hora (auto, ring, tree, rd) vs Gloo (ring, bcube);
#   2. the same with HORA_SHM=0 (hora's builtin backend over TCP only), with the wire column
#      (the ring's bytes over the same TCP pairs, no reduction: the transport's ceiling);
#   3. horarun, HORA_BACKEND=gloo: hora's algorithms over Gloo's transport vs Gloo's own, with
#      the wire column over Gloo's pairs;
#   4. mpirun, HORA_BACKEND=mpi, hora over builtin vs Gloo vs MPI_Allreduce, as launched;
#   5. the same with MALLOC_MMAP_MAX_=0 (glibc reuses freed memory, which Open MPI needs to
#      avoid first touches of fresh scratch at >= 64 MiB).
# Ratios are taken within one run only (this kind of machine is noisy); hora's ratio to MPI
# is quoted against the better of runs 4 and 5, each within its own run.
#
# Usage: scripts/bench_readme.sh            (build dir: $HORA_BUILD_DIR or build)
# Env:   BENCH_ITERS (10), BENCH_WARMUP (2), BENCH_MAX (256M), BENCH_NP ("2 4"),
#        BENCH_RUNS ("builtin shm0 gloo mpi mpi_reuse": which runs to redo; the others' files
#        are reused, "" only regenerates the README section from the files there).
# Writes docs/bench/allreduce_np<N>[_<run>].{csv,svg,txt,cmd} and README.md's section.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${HORA_BUILD_DIR:-build}
BENCH=$BUILD_DIR/benchmarks/hora-bench
HORARUN=$BUILD_DIR/launcher/horarun
ITERS=${BENCH_ITERS:-10}
WARMUP=${BENCH_WARMUP:-2}
MAX=${BENCH_MAX:-256M}
NPS=${BENCH_NP:-2 4}
RUNS=${BENCH_RUNS-builtin shm0 gloo mpi mpi_reuse}
OUT=docs/bench
for f in "$BENCH" "$HORARUN"; do
  [[ -x $f ]] || { echo "bench_readme: $f not built (cmake --build $BUILD_DIR)" >&2; exit 1; }
done
mkdir -p "$OUT"
SWEEP=(allreduce -b 8 -e "$MAX" -f 2 -n "$ITERS" -w "$WARMUP" -c 1)
MPIRUN=(mpirun -np)
mpi_flags() {  # mpirun flags for N ranks on this machine
  local np=$1 flags=()
  [[ $(id -u) -eq 0 ]] && flags+=(--allow-run-as-root)
  ((np > $(nproc))) && flags+=(--oversubscribe)
  echo "${flags[@]}"
}
run() {  # run KIND NP COMMAND...: one sweep (when KIND is in BENCH_RUNS), command kept
  local kind=$1 np=$2 name
  shift 2
  [[ " $RUNS " == *" $kind "* ]] || return 0
  name=_$kind
  [[ $kind == builtin ]] && name=""
  local shown="$*"
  shown=${shown//$BUILD_DIR\//build\/}
  echo "$shown --csv $OUT/allreduce_np${np}${name}.csv --plot $OUT/allreduce_np${np}${name}.svg" \
    > "$OUT/allreduce_np${np}${name}.cmd"
  echo "== $shown" >&2
  "$@" --csv "$OUT/allreduce_np${np}${name}.csv" --plot "$OUT/allreduce_np${np}${name}.svg" \
    > "$OUT/allreduce_np${np}${name}.txt" 2>&1 || {
    cat "$OUT/allreduce_np${np}${name}.txt" >&2
    echo "bench_readme: the run above failed" >&2
    exit 1
  }
}

for np in $NPS; do
  run builtin "$np" env HORA_BACKEND=builtin "$HORARUN" -np "$np" "$BENCH" "${SWEEP[@]}" --compare hora,gloo
  run shm0 "$np" env HORA_BACKEND=builtin HORA_SHM=0 "$HORARUN" -np "$np" "$BENCH" "${SWEEP[@]}" \
    --compare hora,gloo,wire
  run gloo "$np" env HORA_BACKEND=gloo "$HORARUN" -np "$np" "$BENCH" "${SWEEP[@]}" \
    --compare hora,gloo,wire
  # shellcheck disable=SC2046
  run mpi "$np" env HORA_BACKEND=mpi "${MPIRUN[@]}" "$np" $(mpi_flags "$np") "$BENCH" "${SWEEP[@]}" \
    --backend builtin --compare hora,gloo,mpi
  # shellcheck disable=SC2046
  run mpi_reuse "$np" env HORA_BACKEND=mpi "${MPIRUN[@]}" "$np" $(mpi_flags "$np") \
    -x MALLOC_MMAP_MAX_=0 "$BENCH" "${SWEEP[@]}" --backend builtin --compare hora,gloo,mpi
done

# value CSV IMPL SIZE FIELD: one field (time_us = 11, busbw_gbs = 15) of one measurement;
# IMPL "gloo" means the better of gloo-ring and gloo-bcube. Empty when absent.
value() {
  [[ -f $1 ]] || return 0
  awk -F, -v impl="$2" -v size="$3" -v field="$4" '
    NR > 1 && $5 == "out-of-place" && $6 == size && $17 == 1 &&
    ($4 == impl || (impl == "gloo" && $4 ~ /^gloo-/)) {
      v = $field + 0
      if (!seen || (field == 11 && v < best) || (field != 11 && v > best)) best = v
      seen = 1
    }
    END { if (seen) printf "%g", best }' "$1"
}
fmt() { [[ -n $1 ]] && printf "%.${2}f" "$1" || printf "n/a"; }
# ratio A B: A / B to two decimals, "n/a" when either is missing or zero.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "n/a"; else printf "%.2fx", a / b }'; }
# better HORA_A OTHER_A HORA_B OTHER_B KIND: hora's ratio within the run whose baseline did
# better (KIND time: lower is better, ratio other/hora; else busbw: ratio hora/other).
better() {
  awk -v ha="$1" -v oa="$2" -v hb="$3" -v ob="$4" -v kind="$5" 'BEGIN {
    if (oa == "" && ob == "") { print "n/a"; exit }
    useb = (oa == "") || (ob != "" && ((kind == "time") ? ob + 0 < oa + 0 : ob + 0 > oa + 0))
    h = useb ? hb : ha; o = useb ? ob : oa
    if (kind == "time") printf "%.2fx", o / h; else printf "%.2fx", h / o }'
}

SIZES=(8 1048576 67108864 268435456)
label() { case $1 in 8) echo "8 B (latency)";; 1048576) echo "1 MiB";; 67108864) echo "64 MiB";; 268435456) echo "256 MiB";; esac; }

section=$(mktemp)
trap 'rm -f "$section"' EXIT
{
  echo "<!-- bench:begin -->"
  echo "### Allreduce: hora vs Gloo vs MPI (hora-bench)"
  echo
  echo "Generated by \`scripts/bench_readme.sh\` on $(date -u +%Y-%m-%d) ($(date -u +%H:%M) UTC):"
  echo "$(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'),"
  echo "float32 sum, one host, the median of the iterations given in each command, every result"
  echo "checked (#wrong 0). Each row of a table comes from one run per column group, all"
  echo "implementations side by side on the same buffers; ratios are within one run (this"
  echo "machine is noisy across runs). busbw is nccl-tests' bus bandwidth in decimal GB/s;"
  echo "the 8 B row gives the latency in microseconds and its ratios as other time / hora time,"
  echo "so above 1x means hora is faster everywhere. The wire columns are a bound, not a"
  echo "competitor: the bytes a ring allreduce moves, over the same pairs, with no reduction"
  echo "(\`--compare wire\`); no ring over that transport can beat it, so hora / wire near 1x"
  echo "means the transport, not the algorithm, is the limit."
  for np in $NPS; do
    a=$OUT/allreduce_np${np}.csv
    s=$OUT/allreduce_np${np}_shm0.csv
    g=$OUT/allreduce_np${np}_gloo.csv
    m=$OUT/allreduce_np${np}_mpi.csv
    r=$OUT/allreduce_np${np}_mpi_reuse.csv
    echo
    echo "**$np ranks** ([plot](docs/bench/allreduce_np${np}.svg), [with MPI](docs/bench/allreduce_np${np}_mpi_reuse.svg), [HORA_SHM=0](docs/bench/allreduce_np${np}_shm0.svg)):"
    echo
    echo "| size | hora (auto) | ring / tree / rd | Gloo best | hora / Gloo | MPI stock / reuse | hora / MPI (better) | HORA_SHM=0 hora / Gloo | HORA_SHM=0 wire (hora / wire) | hora over Gloo pairs / Gloo | Gloo pairs wire (hora / wire) |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    for size in "${SIZES[@]}"; do
      if [[ $size == 8 ]]; then field=11 kind=time digits=1; else field=15 kind=busbw digits=2; fi
      h=$(value "$a" hora "$size" $field)
      rg=$(value "$a" hora-ring "$size" $field)
      tr=$(value "$a" hora-tree "$size" $field)
      rd=$(value "$a" hora-rd "$size" $field)
      gl=$(value "$a" gloo "$size" $field)
      hm=$(value "$m" hora "$size" $field); mm=$(value "$m" mpi "$size" $field)
      hr=$(value "$r" hora "$size" $field); mr=$(value "$r" mpi "$size" $field)
      hs=$(value "$s" hora "$size" $field); gs=$(value "$s" gloo "$size" $field)
      hg=$(value "$g" hora "$size" $field); gg=$(value "$g" gloo "$size" $field)
      ws=$(value "$s" wire "$size" $field); wg=$(value "$g" wire "$size" $field)
      if [[ $kind == time ]]; then
        vs_gloo=$(ratio "$gl" "$h"); vs_shm0=$(ratio "$gs" "$hs"); vs_gg=$(ratio "$gg" "$hg")
        vs_ws=$(ratio "$ws" "$hs"); vs_wg=$(ratio "$wg" "$hg")
        unit=" us"
      else
        vs_gloo=$(ratio "$h" "$gl"); vs_shm0=$(ratio "$hs" "$gs"); vs_gg=$(ratio "$hg" "$gg")
        vs_ws=$(ratio "$hs" "$ws"); vs_wg=$(ratio "$hg" "$wg")
        unit=""
      fi
      echo "| $(label "$size") | $(fmt "$h" $digits)$unit | $(fmt "$rg" $digits) / $(fmt "$tr" $digits) / $(fmt "$rd" $digits) | $(fmt "$gl" $digits) | $vs_gloo | $(fmt "$mm" $digits) / $(fmt "$mr" $digits) | $(better "$hm" "$mm" "$hr" "$mr" $kind) | $vs_shm0 | $(fmt "$ws" $digits) ($vs_ws) | $vs_gg | $(fmt "$wg" $digits) ($vs_wg) |"
    done
  done
  echo
  echo "Commands (the full tables rank 0 printed are kept beside the plots as docs/bench/*.txt):"
  echo
  echo '```'
  for np in $NPS; do
    for name in "" _shm0 _gloo _mpi _mpi_reuse; do
      [[ -f $OUT/allreduce_np${np}${name}.cmd ]] && cat "$OUT/allreduce_np${np}${name}.cmd"
    done
  done
  echo '```'
  echo "<!-- bench:end -->"
} > "$section"

# Replace the section, adding the markers under "## Performance" when missing.
if ! grep -q '<!-- bench:begin -->' README.md; then
  awk '{ print } /^## Performance$/ && !done { print ""; print "<!-- bench:begin -->"; print "<!-- bench:end -->"; done = 1 }' \
    README.md > README.md.tmp && mv README.md.tmp README.md
fi
awk -v file="$section" '
  /<!-- bench:begin -->/ { while ((getline line < file) > 0) print line; skip = 1; next }
  /<!-- bench:end -->/ { skip = 0; next }
  !skip { print }' README.md > README.md.tmp && mv README.md.tmp README.md
echo "bench_readme: README.md section and $OUT/ regenerated" >&2
