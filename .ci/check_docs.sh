#!/usr/bin/env bash
# Fails when the documentation is broken, naming what: the user guide as a site (mkdocs build
# --strict with mkdocs.yml: a dead link or anchor between pages, a page left out of the
# navigation), docs/configuration.md's table against the HORA_* variables the code reads, the
# links of the Markdown files outside docs/ (README.md), and docs/performance.md against what
# scripts/perf_report.py writes from docs/bench/. Every check runs even after one failed.
# Sets up hora's Python environment first (scripts/setup_python.sh: a no-op once done), whose
# mkdocs builds the site into a temporary folder. Part of CI's format stage (.ci/stages).
# Usage: .ci/check_docs.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
bash scripts/setup_python.sh || exit 1
python=$(bash scripts/setup_python.sh --print-python)
site=$(mktemp -d)
trap 'rm -rf "$site"' EXIT
failed=()
out=$("$(dirname "$python")/mkdocs" build --strict --site-dir "$site" 2>&1)
rc=$?
grep -v '^INFO ' <<<"$out"
((rc == 0)) || failed+=("mkdocs build --strict")
"$python" tests/docs/configuration_check.py || failed+=("the configuration table")
"$python" tests/docs/links_check.py || failed+=("the links")
"$python" scripts/perf_report.py --check || failed+=("docs/performance.md")
if ((${#failed[@]} > 0)); then
  printf 'check_docs: failed: %s\n' "${failed[@]}"
  exit 1
fi
echo "check_docs: the site builds with --strict; configuration, links and performance.md agree"
