#!/usr/bin/env python3
"""Writes the main-actor twins of SwiftFM's completion APIs (Sources/SwiftFM/MainActor/*+MainActor.swift).

Every public function of SwiftFM whose closure parameters are `sending @escaping` (the completion, and a
paging walk's `page`) gets a twin with the same name, labels and defaults whose closures are
`@escaping @MainActor`. Overload resolution picks the twin for a closure written `{ @MainActor … in }` and for a
`@MainActor` function value, the original for every other closure; the twin forwards to the original and runs
the closures on the main actor (``MainActorHop``).

    Scripts/generate-mainactor-twins.py           # rewrites the files
    Scripts/generate-mainactor-twins.py --check   # exit 1 when a file is missing, stale or extra (CI)
"""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
# Source folder (under Sources/SwiftFM) -> the generated file (under Sources/SwiftFM/MainActor).
GROUPS = [("API", "DataAPI+MainActor.swift"), ("Legacy", "Legacy+MainActor.swift"), ("OData", "FMOData+MainActor.swift")]
OUT_DIR = os.path.join(ROOT, "Sources", "SwiftFM", "MainActor")
DECL = re.compile(r'^\s*(public|open)\s+((static|class)\s+)?func\s')
TYPE = re.compile(r'^(?:public\s+|open\s+|final\s+)*(extension|class|struct|enum|actor)\s+([A-Za-z_][A-Za-z0-9_]*)')
COPIED_ATTRIBUTES = ("@discardableResult", "@_disfavoredOverload", "@available")


def split_top(text, separator=","):
    """Splits at `separator` outside (), [], <> (an arrow `->` is not a bracket)."""
    parts, depth, current, i = [], 0, "", 0
    while i < len(text):
        if text.startswith("->", i):
            current += "->"
            i += 2
            continue
        c = text[i]
        if c in "([<":
            depth += 1
        elif c in ")]>":
            depth -= 1
        if c == separator and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += c
        i += 1
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def balanced(text, start, open_, close):
    """The index just past the bracket that closes the one at `start`."""
    depth, i = 0, start
    while i < len(text):
        if text.startswith("->", i):
            i += 2
            continue
        if text[i] == open_:
            depth += 1
        elif text[i] == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError(f"unbalanced {open_}{close} in {text}")


def declarations(path):
    """(type name, attribute lines, declaration text without the body's `{`) of each public function."""
    lines = open(path, encoding="utf-8").read().split("\n")
    current_type, found, i = None, [], 0
    while i < len(lines):
        match = TYPE.match(lines[i])
        if match:
            current_type = match.group(2)
        if DECL.match(lines[i]):
            attributes, j = [], i - 1
            while j >= 0 and lines[j].strip().startswith("@"):
                attributes.insert(0, lines[j].strip())
                j -= 1
            text, k, cut = "", i, None
            while cut is None and k < len(lines) and k < i + 20:
                text += " " + lines[k].strip()
                cut = body_start(text)
                k += 1
            if cut is not None:  # a requirement without a body is not a function to twin
                found.append((current_type, attributes, text[:cut].strip()))
            i = k - 1
        i += 1
    return found


def body_start(text):
    """The index of the `{` that opens the body: the first outside (), [] (a default closure sits inside the list)."""
    depth = 0
    for i, c in enumerate(text):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "{" and depth == 0:
            return i
    return None


def parse(text):
    """modifiers, name, generics, parameters, the rest (return type, where clause)."""
    head = re.match(r'((?:public|open|static|class)\s+)+func\s+([A-Za-z_][A-Za-z0-9_]*)', text)
    modifiers, name = head.group(0).split("func")[0].split(), head.group(2)
    i = head.end()
    generics = ""
    if text[i] == "<":
        end = balanced(text, i, "<", ">")
        generics, i = text[i:end], end
    end = balanced(text, i, "(", ")")
    parameters = split_top(text[i + 1:end - 1])
    return modifiers, name, generics, parameters, text[end:].strip()


def parameter(p):
    """(external label, internal name, type, default or None)."""
    names, rest = p.split(":", 1)
    parts = split_top(rest, "=")  # `=` at the top level starts the default
    type_, default = rest, None
    eq = re.search(r'\s=\s', rest)
    if eq and "=" in "".join(parts):
        pass
    # A default is ` = …` outside brackets.
    depth, i = 0, 0
    while i < len(rest):
        if rest.startswith("->", i):
            i += 2
            continue
        c = rest[i]
        if c in "([<":
            depth += 1
        elif c in ")]>":
            depth -= 1
        elif c == "=" and depth == 0:
            type_, default = rest[:i], rest[i + 1:].strip()
            break
        i += 1
    tokens = names.split()
    label, internal = (tokens[0], tokens[0]) if len(tokens) == 1 else (tokens[0], tokens[1])
    return label, internal, type_.strip(), default


def closure(type_):
    """(argument types, return type) of `sending @escaping (…) -> R`, or None."""
    if not type_.startswith("sending @escaping ("):
        return None
    body = type_[len("sending @escaping "):]
    end = balanced(body, 0, "(", ")")
    arguments = split_top(body[1:end - 1])
    result = body[end:].strip()
    assert result.startswith("->"), type_
    return arguments, result[2:].strip()


def twin(type_name, attributes, text):
    modifiers, name, generics, parameters, rest = parse(text)
    if "open" in modifiers:
        modifiers = ["public" if m == "open" else m for m in modifiers]
    if "class" in modifiers:
        modifiers = ["static" if m == "class" else m for m in modifiers]
    declared, forwarded, labels, hops = [], [], [], []
    for p in parameters:
        label, internal, type_, default = parameter(p)
        labels.append(label + ":")
        shape = closure(type_)
        head = label if label == internal else f"{label} {internal}"
        if shape is None:
            declared.append(f"{head}: {type_}" + (f" = {default}" if default is not None else ""))
            forwarded.append(internal if label == "_" else f"{label}: {internal}")
            continue
        arguments, result = shape
        declared.append(f"{head}: @escaping @MainActor ({', '.join(arguments)}) -> {result}"
                        + (f" = {default}" if default is not None else ""))
        names = [f"v{n}" for n in range(len(arguments))]
        if len(names) == 0:
            values, call = "()", f"{internal}()"
        elif len(names) == 1:
            values, call = names[0], f"{internal}($0)"
        else:
            values = "(" + ", ".join(names) + ")"
            call = f"{internal}(" + ", ".join(f"$0.{n}" for n in range(len(names))) + ")"
        hop = "deliver" if result == "Void" else "call"
        if len(names) == 0:
            call = f"_ in {call}"
        prefix = (", ".join(names) + " in ") if names else ""
        wrapper = f"{{ {prefix}MainActorHop({values}).{hop} {{ {call} }} }}"
        forwarded.append(wrapper if label == "_" else f"{label}: {wrapper}")
        hops.append(internal)
    returns = rest.startswith("->")
    keep = [a for a in attributes if a.startswith(COPIED_ATTRIBUTES)]
    runs = " and ".join(f"`{h}`" for h in hops)
    symbol = f"{name}({''.join(labels)})"
    lines = [f"    /// `{symbol}` with {runs} run on the main actor: the overload a `{{ @MainActor … in }}` closure picks."]
    lines.append("    @_documentation(visibility: internal)")
    lines += [f"    {a}" for a in keep]
    signature = f"{' '.join(modifiers)} func {name}{generics}({', '.join(declared)})" + (f" {rest}" if rest else "")
    lines.append(f"    {signature} {{")
    lines.append(f"        {'return ' if returns else ''}self.{name}({', '.join(forwarded)})")
    lines.append("    }")
    return "\n".join(lines)


def generate():
    files = {}
    for folder, output in GROUPS:
        directory = os.path.join(ROOT, "Sources", "SwiftFM", folder)
        by_type = {}
        order = []
        for file in sorted(os.listdir(directory)):
            if not file.endswith(".swift"):
                continue
            for type_name, attributes, text in declarations(os.path.join(directory, file)):
                if "sending @escaping" not in text:
                    continue
                if type_name not in by_type:
                    by_type[type_name] = []
                    order.append(type_name)
                by_type[type_name].append((file, twin(type_name, attributes, text)))
        chunks = ["// Generated by Scripts/generate-mainactor-twins.py from Sources/SwiftFM/" + folder + "/: do not edit.",
                  "// Each public function taking `sending @escaping` closures has a twin taking `@escaping @MainActor` ones;",
                  "// `Scripts/generate-mainactor-twins.py --check` (in .ci/run) fails when one is missing or stale.",
                  "import Foundation", ""]
        for type_name in order:
            chunks.append(f"extension {type_name} {{")
            previous = None
            for file, code in by_type[type_name]:
                if file != previous:
                    chunks.append(f"    // MARK: {folder}/{file}")
                    chunks.append("")
                    previous = file
                chunks.append(code)
                chunks.append("")
            chunks[-1] = "}"
            chunks.append("")
        files[os.path.join(OUT_DIR, output)] = "\n".join(chunks)
    return files


def ungrouped():
    """Public functions taking `sending @escaping` closures outside the folders above: they would have no twin."""
    base = os.path.join(ROOT, "Sources", "SwiftFM")
    grouped = {os.path.join(base, folder) for folder, _ in GROUPS} | {OUT_DIR}
    found = []
    for directory, _, names in os.walk(base):
        if any(directory == g or directory.startswith(g + os.sep) for g in grouped):
            continue
        for file in sorted(names):
            if file.endswith(".swift"):
                path = os.path.join(directory, file)
                found += [f"{os.path.relpath(path, ROOT)}: {text[:80]}…" for _, _, text in declarations(path)
                          if "sending @escaping" in text]
    return found


def main(argv):
    files = generate()
    missed = ungrouped()
    for entry in missed:
        print(f"no twin (outside {', '.join(folder for folder, _ in GROUPS)}; add its folder to GROUPS): {entry}")
    if "--check" in argv:
        stale = [path for path, text in files.items()
                 if not os.path.exists(path) or open(path, encoding="utf-8").read() != text]
        extra = [os.path.join(OUT_DIR, f) for f in os.listdir(OUT_DIR)
                 if f.endswith("+MainActor.swift") and os.path.join(OUT_DIR, f) not in files] if os.path.isdir(OUT_DIR) else []
        for path in stale + extra:
            print(f"stale or missing: {os.path.relpath(path, ROOT)} (run Scripts/generate-mainactor-twins.py)")
        return 1 if stale or extra or missed else 0
    os.makedirs(OUT_DIR, exist_ok=True)
    for path, text in files.items():
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        print(f"wrote {os.path.relpath(path, ROOT)} ({text.count('@_documentation')} twins)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
