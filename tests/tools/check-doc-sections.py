#!/usr/bin/env python3
"""Keeps docs/policy.md and docs/design.md honest: every section that code, CMake, protos,
scenarios or docs cite as `policy.md §N` or `design.md §N` (with or without `docs/`, ranges
like `§3-§4` and lists like `§1, §6` included) must exist as a `## N.` heading of that doc,
the rules must not defer to a text that is not in the repository, and every scenario
policy.md names as pinning a rule must exist.

Usage: check-doc-sections.py SOURCE_DIR. Exit 0 when all hold, 1 listing every problem."""
import os
import re
import sys

SKIP_DIRS = {".git", "third_party", "node_modules"}
EXTS = (".cc", ".h", ".proto", ".yaml", ".yml", ".md", ".txt", ".cmake", ".py", ".sh", ".go")
CITE = re.compile(r"\b(policy|design)\.md\)?\s*((?:§\s*\d+(?:\s*[-–]\s*§?\d+)?(?:\s*(?:,|and)\s*)?)+)")
NUMS = re.compile(r"§?\s*(\d+)(?:\s*[-–]\s*§?(\d+))?")
# The rules live in docs/policy.md, not in a shared text a user does not have.
DEFERRALS = re.compile(r"(?i:shared spec|the specification)|POLICY\.md|DESIGN\.md")


def headings(path):
    with open(path, encoding="utf-8") as f:
        return {int(m.group(1)) for m in re.finditer(r"^## (\d+)\.", f.read(), re.M)}


def main(root):
    docs = {d: headings(os.path.join(root, "docs", d + ".md")) for d in ("policy", "design")}
    problems = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.startswith("build")]
        for name in filenames:
            if not name.endswith(EXTS):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            try:
                text = open(path, encoding="utf-8").read()
            except (UnicodeDecodeError, OSError):
                continue
            for m in CITE.finditer(text):
                doc = m.group(1)
                line = text.count("\n", 0, m.start()) + 1
                for n in NUMS.finditer(m.group(2)):
                    lo = int(n.group(1))
                    hi = int(n.group(2)) if n.group(2) else lo
                    for sec in range(lo, hi + 1):
                        if sec not in docs[doc]:
                            problems.append(f"{rel}:{line}: cites docs/{doc}.md §{sec}, which has no '## {sec}.' heading")
    for doc in ("policy", "design"):
        path = os.path.join(root, "docs", doc + ".md")
        for i, line in enumerate(open(path, encoding="utf-8"), 1):
            if DEFERRALS.search(line):
                problems.append(f"docs/{doc}.md:{i}: defers to a text outside the repository: {line.strip()}")
    # A rule pinned by a scenario names its file: it must exist.
    policy = open(os.path.join(root, "docs", "policy.md"), encoding="utf-8").read()
    for m in re.finditer(r"`((?:basics|elastic|kueue[a-z-]*|replay|spec)/[\w.-]+\.yaml)`", policy):
        if not os.path.isfile(os.path.join(root, "tests", "scenarios", m.group(1))):
            problems.append(f"docs/policy.md: names tests/scenarios/{m.group(1)}, which does not exist")
    for p in problems:
        print(p)
    if not problems:
        print(f"ok: policy.md §{sorted(docs['policy'])}, design.md §{sorted(docs['design'])}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
