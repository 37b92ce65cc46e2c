#!/usr/bin/env python3
"""Links of the Markdown files outside docs/ (README.md, examples' READMEs) and the tree's
references outside itself.

mkdocs build --strict checks the links between pages of docs/; this checks the rest:
- every relative link of a Markdown file outside docs/ names a file or folder that exists,
  and its #anchor, when the target is Markdown, a heading of that file (GitHub's anchors);
- no tracked text file points outside the repository ("../shared/...").
No build needed:

    python3 tests/docs/links_check.py [REPO_ROOT]
"""

import os
import re
import subprocess
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
OUTSIDE = re.compile(r"\.\./shared\b")


def tracked_files(root):
    try:
        out = subprocess.run(
            ["git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            text=True,
            check=True,
        )
        return sorted(set(out.stdout.split("\n")) - {""})
    except (OSError, subprocess.CalledProcessError):
        found = []
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".") and not d.startswith("build")]
            found += [os.path.relpath(os.path.join(folder, f), root) for f in files]
        return sorted(found)


def outside_code_blocks(path):
    """(line number, line) of a Markdown file, skipping fenced code blocks."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
            elif not fenced:
                yield number, line


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|\*|_(?=\W)|\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    seen = {}
    result = set()
    for _, line in outside_code_blocks(path):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        result.add(base if n == 0 else f"{base}-{n}")
    return result


def check_links(root, md):
    problems = []
    here = os.path.dirname(os.path.join(root, md))
    for number, line in outside_code_blocks(os.path.join(root, md)):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, mailto:, ...
                continue
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(here, path)) if path else os.path.join(root, md)
            where = f"{md}:{number}: link '{target}'"
            if not os.path.realpath(full).startswith(os.path.realpath(root) + os.sep):
                problems.append(f"{where} leaves the repository")
            elif not os.path.exists(full):
                problems.append(f"{where}: {os.path.relpath(full, root)} does not exist")
            elif anchor and full.endswith(".md") and anchor not in anchors(full):
                problems.append(
                    f"{where}: no heading with the anchor #{anchor} in "
                    f"{os.path.relpath(full, root)}"
                )
    return problems


def main(argv):
    root = os.path.abspath(
        argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    )
    files = tracked_files(root)
    problems = []
    for md in files:
        if md.endswith(".md") and not md.startswith("docs/"):
            problems += check_links(root, md)
    for name in files:
        path = os.path.join(root, name)
        if name == "tests/docs/links_check.py" or not os.path.isfile(path):
            continue
        with open(path, "rb") as f:
            data = f.read(1 << 20)
        if b"\0" in data:
            continue
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if OUTSIDE.search(line):
                problems.append(f"{name}:{number}: refers to a file outside the repository")
    for p in problems:
        print(f"links_check: {p}")
    if problems:
        return 1
    print("links_check: every link outside docs/ resolves; nothing points outside the repository")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
