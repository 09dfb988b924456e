#!/usr/bin/env bash
# Measures the getRecord walk of Sources/SwiftFM/SwiftFM.docc/Architecture.md: the files of SwiftFM and CFMCurl
# with code that ran for one getRecord through a callback (session open, answered 200), from coverage counters
# reset just before the call. Prints each file with the functions that ran in it, then the count.
# Usage: Scripts/getrecord-walk.sh            (builds Scripts/getrecord-walk with coverage: a few minutes)
#        WALK_NAMES=1 Scripts/getrecord-walk.sh (also lists each file's functions, demangled)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
package="$here/getrecord-walk"
root="$(cd "$here/.." && pwd)"
toolchain="$(dirname "$(readlink -f "$(command -v swift)")")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# SwiftPM instruments the Swift targets; the C wrappers of libcurl (CFMCurl) need clang's flags too.
flags=(--package-path "$package" --scratch-path "$package/.build" --enable-code-coverage -Xcc -fprofile-instr-generate -Xcc -fcoverage-mapping)
swift build "${flags[@]}" --product getrecord-walk >&2
binary="$(swift build "${flags[@]}" --show-bin-path)/getrecord-walk"
LLVM_PROFILE_FILE="$work/walk.profraw" "$binary"
"$toolchain/llvm-profdata" merge -sparse "$work/walk.profraw" -o "$work/walk.profdata"
# llvm-cov's JSON export: per file, its functions' execution counts.
"$toolchain/llvm-cov" export "$binary" -instr-profile "$work/walk.profdata" -skip-expansions > "$work/walk.json"
python3 - "$work/walk.json" "$root" <<'PY'
import json, os, subprocess, sys, collections
data, root = json.load(open(sys.argv[1])), sys.argv[2].rstrip('/') + '/'
ran = collections.OrderedDict()
for function in data['data'][0]['functions']:
    if function['count'] == 0:
        continue
    name = function['filenames'][0]   # where the function is written
    if name.startswith(root + 'Sources/SwiftFM/') or name.startswith(root + 'Sources/CFMCurl/'):
        ran.setdefault(name[len(root):], set()).add(function['name'])
for name in sorted(ran):
    print(f"{name}: {len(ran[name])} functions")
    if os.environ.get("WALK_NAMES"):
        names = sorted(ran[name])
        plain = subprocess.run(["swift", "demangle", "--simplified"], input="\n".join(names), capture_output=True, text=True).stdout.splitlines()
        for function in sorted(plain or names):
            print(f"    {function}")
print(f"{len(ran)} files")
PY
