#!/bin/sh
# A hora-bench run that must succeed: exit status 0 (every rank) and the footer's
# "Total #wrong : 0 OK" (every size checked). Extra checks: EXPECT_FILE=path must exist and be
# non-empty afterwards (--json/--csv/--plot) and contain EXPECT_FILE_TEXT when that is set;
# EXPECT_TEXT=string must appear in the output.
# Usage: expect_ok_run.sh LAUNCHER... (the whole command line)
set -u
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?
cat "$out"
fail() { echo "FAIL: $*"; exit 1; }
[ "$rc" -eq 0 ] || fail "exit status $rc"
grep -q "Total #wrong         : 0 OK" "$out" || fail "no 'Total #wrong : 0 OK' footer"
if [ -n "${EXPECT_FILE:-}" ]; then
  [ -s "$EXPECT_FILE" ] || fail "$EXPECT_FILE was not written"
  if [ -n "${EXPECT_FILE_TEXT:-}" ]; then
    grep -q -- "$EXPECT_FILE_TEXT" "$EXPECT_FILE" || fail "no '$EXPECT_FILE_TEXT' in $EXPECT_FILE"
  fi
  rm -f "$EXPECT_FILE"
fi
if [ -n "${EXPECT_TEXT:-}" ]; then
  grep -q -- "$EXPECT_TEXT" "$out" || fail "no '$EXPECT_TEXT' in the output"
fi
echo "PASS"
