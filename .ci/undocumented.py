#!/usr/bin/env python3
"""Lists the public symbols of the given symbol graphs that have no documentation comment.

Usage: undocumented.py GRAPH.symbols.json...   Exits 1 when any symbol is undocumented.
A symbol counts as documented when it has a `///` comment of its own, or inherits one from the
protocol requirement it implements (DocC shows that comment on its page).
"""
import json
import sys

SKIPPED_KINDS = {"swift.extension"}  # extension blocks are containers, not API


def main(paths):
    missing = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            graph = json.load(handle)
        module = graph["module"]["name"]
        for symbol in graph["symbols"]:
            if symbol["accessLevel"] not in ("public", "open"):
                continue
            if symbol["kind"]["identifier"] in SKIPPED_KINDS:
                continue
            lines = (symbol.get("docComment") or {}).get("lines") or []
            if any(line.get("text", "").strip() for line in lines):
                continue
            location = symbol.get("location") or {}
            uri = location.get("uri", "").split("/Sources/", 1)[-1]
            line = (location.get("position") or {}).get("line", -1) + 1
            title = ".".join(symbol["pathComponents"])
            missing.append(f"{module}: {title} ({symbol['kind']['displayName']}) at Sources/{uri}:{line}")
    for entry in sorted(missing):
        print(entry)
    if missing:
        print(f"{len(missing)} public symbol(s) without a /// comment", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
