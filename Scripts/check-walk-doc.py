#!/usr/bin/env python3
"""Checks that the getRecord walk of Sources/SwiftFM/SwiftFM.docc/Architecture.md is the one the code walks.

Runs Scripts/getrecord-walk.sh (the files with code that ran for one getRecord through a callback, measured by
coverage) and compares its files with the article's numbered steps (each step's first backticked path; paths
under Sources/SwiftFM/ unless they begin with Sources/) and with the count the article states. Any difference
fails, naming the files: the article is a newcomer's map of one call and must not drift from the code.
"""
import pathlib, re, subprocess, sys

root = pathlib.Path(__file__).resolve().parent.parent
article = (root / "Sources/SwiftFM/SwiftFM.docc/Architecture.md").read_text()

walked = subprocess.run(["bash", str(root / "Scripts/getrecord-walk.sh")], capture_output=True, text=True)
if walked.returncode != 0:
    sys.stderr.write(walked.stdout + walked.stderr)
    sys.exit("getrecord-walk.sh failed")
measured = {line.split(":")[0] for line in walked.stdout.splitlines() if line.startswith("Sources/")}

stated = set()
for match in re.finditer(r"^\d+\. `([^`]+\.(?:swift|c))`", article, re.MULTILINE):
    path = match.group(1)
    stated.add(path if path.startswith("Sources/") else "Sources/SwiftFM/" + path)
count = re.search(r"with at least one function run: (\d+) \(", article)

problems = []
for path in sorted(measured - stated):
    problems.append(f"runs for a getRecord but is not a step of Architecture.md: {path}")
for path in sorted(stated - measured):
    problems.append(f"a step of Architecture.md but no code of it ran: {path}")
if count is None or int(count.group(1)) != len(measured):
    problems.append(f"Architecture.md states {count.group(1) if count else 'no'} files; the walk measured {len(measured)}")
if problems:
    sys.exit("\n".join(problems))
print(f"Architecture.md's walk matches the code: {len(measured)} files")
