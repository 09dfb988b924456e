#!/usr/bin/env bash
# Instructions per call of SwiftFM's client, by configuration: what the retry policy with a concurrency cap, a
# no-op metrics observer and a no-op instrumentation add to a call, counted by valgrind's callgrind rather than
# timed, so the machine's load does not move the figures. Builds Scripts/call-cost and fm-emulator in release,
# starts fm-emulator (the demo solution) in a process of its own (not counted), runs call-cost under callgrind with
# 200 and 1,200 calls for each configuration, and prints the difference divided by 1,000 calls.
# Usage: Scripts/call-cost.sh [CONFIGURATION …]   (default: all five; a few minutes; needs valgrind)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
command -v valgrind >/dev/null || { echo "call-cost.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
configurations=("$@")
[ ${#configurations[@]} -gt 0 ] || configurations=(default no-policy standard+cap metrics instrumentation)
swift build -c release --package-path "$root" --product fm-emulator >&2
swift build -c release --package-path "$here/call-cost" --scratch-path "$here/call-cost/.build" --product call-cost >&2
emulator="$(swift build -c release --package-path "$root" --show-bin-path)/fm-emulator"
program="$(swift build -c release --package-path "$here/call-cost" --scratch-path "$here/call-cost/.build" --show-bin-path)/call-cost"
work="$(mktemp -d)"
"$emulator" --port 0 > "$work/emulator.out" 2>/dev/null &
emulator_pid=$!
trap 'kill $emulator_pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 200); do grep -q "http://" "$work/emulator.out" 2>/dev/null && break; sleep 0.1; done
url="$(grep -o 'http://[0-9.:]*' "$work/emulator.out" | head -1)"
[ -n "$url" ] || { echo "call-cost.sh: fm-emulator did not start" >&2; exit 1; }
count() {   # instructions of one run: configuration, calls
    valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$program" "$1" "$2" "$url" 2> "$work/cg.log" \
        || { cat "$work/cg.log" >&2; exit 1; }
    sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p' "$work/cg.log"
}
echo "instructions per call (callgrind, 1,000 calls: the count with 1,200 minus the count with 200), $(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- Sources || echo " with uncommitted changes"):"
for configuration in "${configurations[@]}"; do
    small=$(count "$configuration" 200)
    large=$(count "$configuration" 1200)
    echo "  $configuration $(( (large - small) / 1000 ))"
done
