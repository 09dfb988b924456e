#!/usr/bin/env python3
"""Every relative link in the README, Docs/ and the DocC articles resolves: the file exists and, for a
`#fragment`, the target has a heading with that GitHub anchor. Web links are not fetched.

usage: python3 .ci/links.py   (from the package root; exits 1 and lists each broken link)
"""
import glob
import os
import re
import sys
import unicodedata

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(path):
    """The file's lines outside fenced code blocks, with their numbers."""
    fenced = False
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if not fenced:
                yield number, line


def slug(text):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|__", "", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text).strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, found = {}, set()
        for _, line in prose_lines(path):
            match = HEADING.match(line)
            if match:
                base = slug(match.group(2))
                count = seen.get(base, 0)
                seen[base] = count + 1
                found.add(base if count == 0 else f"{base}-{count}")
        cache[path] = found
    return cache[path]


def files():
    patterns = ["README.md", "CHANGELOG.md", "Docs/*.md", "Sources/*/*.docc/*.md", "Integrations/*/README.md",
                "Examples/**/*.md"]
    for pattern in patterns:
        yield from sorted(glob.glob(pattern, recursive=True))


def main():
    broken, checked = [], 0
    for path in files():
        for number, line in prose_lines(path):
            line = re.sub(r"`[^`]*`", "", line)  # a link written as code is not a link
            for match in LINK.finditer(line):
                target = match.group(1) or match.group(2)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:, doc:
                    continue
                checked += 1
                name, _, fragment = target.partition("#")
                resolved = os.path.normpath(os.path.join(os.path.dirname(path), name)) if name else path
                if not os.path.exists(resolved):
                    broken.append(f"{path}:{number}: {target}: no such file {resolved}")
                elif fragment and resolved.endswith(".md") and fragment not in anchors(resolved):
                    broken.append(f"{path}:{number}: {target}: no heading #{fragment} in {resolved}")
    for line in broken:
        print(line)
    print(f"links: {checked} relative links checked, {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
