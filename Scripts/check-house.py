#!/usr/bin/env python3
"""Checks the house's measurable rules, read in the code (run by CI; under a second):

- no function, initializer or subscript in Sources is longer than 100 lines;
- `DataAPI` has at most 6 stored properties;
- `EngineCall` reaches at most 5 members of its `CallContext`.

A light reader, not a parser: comments and string literals are blanked first, then each declaration's body is
found by matching braces. Prints what it measured; exits 1 naming each rule broken.
"""
import pathlib, re, sys

root = pathlib.Path(__file__).resolve().parent.parent
MAX_LINES, MAX_STORED, MAX_CONTEXT = 100, 6, 5

DECLARATION = re.compile(
    r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*"
    r"(?:(?:public|private|fileprivate|internal|package|open|static|class|final|override|mutating|nonmutating|"
    r"nonisolated|convenience|required|dynamic|consuming|borrowing)(?:\([^)]*\))?\s+)*"
    r"(func\s+[^\s(<]+|init[?!]?|deinit|subscript)\b")


def blanked(text):
    """`text` with comments and string literals removed, line breaks kept (so line numbers hold)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith('"""', i):
            j = text.find('"""', i + 3)
            j = n if j < 0 else j + 3
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] not in '"\n':
                if text.startswith("\\(", j):      # an interpolation: skip to its closing parenthesis
                    depth, j = 0, j + 1
                    while j < n:
                        depth += {"(": 1, ")": -1}.get(text[j], 0)
                        if depth == 0:
                            break
                        j += 1
                    j += 1
                elif text[j] == "\\":
                    j += 2
                else:
                    j += 1
            out.append('""')
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def body_end(lines, start):
    """The line where the body opened at or after `start` closes, or None (a protocol requirement)."""
    depth, opened = 0, False
    for number in range(start, len(lines)):
        for character in lines[number]:
            if character == "{":
                depth, opened = depth + 1, True
            elif character == "}":
                depth -= 1
                if opened and depth == 0:
                    return number
        if not opened and number > start and not lines[number].strip():
            return None
    return None


problems = []
longest = []
for path in sorted((root / "Sources").rglob("*.swift")):
    lines = blanked(path.read_text()).split("\n")
    for number, line in enumerate(lines):
        match = DECLARATION.match(line)
        if not match:
            continue
        end = body_end(lines, number)
        if end is None:
            continue
        length = end - number + 1
        longest.append((length, f"{path.relative_to(root)}:{number + 1} {match.group(1)}"))
        if length > MAX_LINES:
            problems.append(f"{path.relative_to(root)}:{number + 1}: {match.group(1)} is {length} lines (at most {MAX_LINES})")
longest.sort(reverse=True)
print(f"longest function: {longest[0][0]} lines ({longest[0][1]})")

# DataAPI's stored properties: declarations at the class body's top level with no accessor block.
source = blanked((root / "Sources/SwiftFM/DataAPI.swift").read_text()).split("\n")
start = next(i for i, line in enumerate(source) if re.match(r"^(?:public |open )?(?:final )?class DataAPI\b", line))
end = body_end(source, start)
stored, depth = [], 0
for line in source[start:end + 1]:
    if depth == 1 and re.match(r"^\s*(?:@\w+\s+)*(?:(?:public|private|fileprivate|internal|nonisolated|static|lazy)(?:\([^)]*\))?\s+)*(?:let|var)\s", line):
        if "{" not in line and "static" not in line:
            stored.append(line.strip())
    depth += line.count("{") - line.count("}")
print(f"DataAPI stored properties: {len(stored)}")
if len(stored) > MAX_STORED:
    problems.append(f"DataAPI has {len(stored)} stored properties (at most {MAX_STORED}): " + "; ".join(stored))

engine = blanked((root / "Sources/SwiftFM/Core/Pipeline/Engine.swift").read_text())
members = sorted(set(re.findall(r"\bcontext\.(\w+)", engine)))
print(f"EngineCall's context members: {len(members)} ({', '.join(members)})")
if len(members) > MAX_CONTEXT:
    problems.append(f"EngineCall reaches {len(members)} members of its context (at most {MAX_CONTEXT}): {', '.join(members)}")

if problems:
    sys.exit("\n".join(problems))
