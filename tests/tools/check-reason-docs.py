#!/usr/bin/env python3
"""Keeps docs/jobs.md's "Why a job waits" table complete: every reason code the core lists
(kReasonCodes in broker/core/reasons.h) must have a row whose first cell is the code and
whose example starts with it, so a new reason cannot ship without its documentation. The
property test checks the other half: every reason a job shows starts with a listed code.

Usage: check-reason-docs.py SOURCE_DIR. Exit 0 when all hold, 1 listing every problem."""
import os
import re
import sys


def codes(root):
    with open(os.path.join(root, "broker", "core", "reasons.h"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"kReasonCodes\[\]\s*=\s*\{(.*?)\};", text, re.S)
    if not m:
        return None
    return re.findall(r'"([^"]+)"', m.group(1))


def rows(root):
    with open(os.path.join(root, "docs", "jobs.md"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^## Why a job waits\n(.*?)(?=^## )", text, re.S | re.M)
    if not m:
        return None
    out = {}
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`") and cells[0].endswith("`"):
            out.setdefault(cells[0].strip("`"), []).append(cells[2])
    return out


def main(root):
    listed = codes(root)
    table = rows(root)
    if listed is None:
        print("broker/core/reasons.h: no kReasonCodes list")
        return 1
    if table is None:
        print('docs/jobs.md: no "## Why a job waits" section')
        return 1
    problems = []
    for code in listed:
        if code not in table:
            problems.append(f"docs/jobs.md: reason code `{code}` has no row in \"Why a job waits\"")
        elif not any(example.startswith("`" + code) for example in table[code]):
            problems.append(f"docs/jobs.md: the row of `{code}` has no example that starts with the code")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
