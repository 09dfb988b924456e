#!/usr/bin/env bash
# Type-checks, on Linux, the SwiftFM library's Apple-platform branches (`#if canImport(Darwin)`, the `#else` of
# `#if os(Linux)` / `#if canImport(Glibc)`), which no Linux build compiles, and runs the clock's alarm tests
# against the Apple platforms' ClockAlarm (a DispatchSemaphore and a flag).
#
# How: the live sources of the SwiftFM target (with FMCrypto and CFMCurl) are copied into a scratch package
# with every platform condition flipped — canImport(Darwin) and os(macOS/iOS/…) become DARWIN_SIM, os(Linux) and
# canImport(Glibc) become !DARWIN_SIM, defined with -D — and built in Swift 6 mode (strict concurrency). The
# Apple-only APIs the branches call are stood in for with the shapes Apple's SDK gives them (SecTrust,
# URLProtectionSpace.serverTrust, URLCredential(trust:), NSURLAuthenticationMethodServerTrust), and
# DispatchSemaphore.wait() is marked unavailable from async code, as Apple's Dispatch marks it (Linux's does not).
# CFMCurl's C file is checked for an Apple target with clang (its non-Linux stubs).
#
# What it cannot see: Apple's own headers. A Darwin-only symbol used with the wrong type, an API that
# corelibs Foundation has and Apple's lacks (or marks unavailable below macOS 12), Security's real types.
# Not wired into CI. Usage: Scripts/check-darwin-branches.sh [SCRATCH_DIR]   (default .build/darwin-branches)
# A platform condition this script does not know (os(Windows), canImport(Musl), …) stops it: teach it first.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/.build/darwin-branches}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# Every platform condition in the copied targets must be one this script flips (or FoundationNetworking).
known='(os|canImport)\((Darwin|Glibc|Linux|FoundationNetworking|macOS|iOS|tvOS|watchOS|visionOS)\)'
leftover="$(grep -rnE '^[[:space:]]*#(if|elseif)[[:space:]]' "$root/Sources/SwiftFM" "$root/Sources/FMCrypto" --include='*.swift' \
    | sed -E "s/$known//g" | grep -E '(os|canImport|arch|targetEnvironment)\(' || true)"
if [ -n "$leftover" ]; then
    echo "check-darwin-branches: platform conditions this script does not flip (teach it first):" >&2
    echo "$leftover" >&2
    exit 2
fi

rm -rf "$out/Sources" "$out/Tests"
mkdir -p "$out/Sources/SwiftFM" "$out/Sources/DispatchOriginals" "$out/Tests/DarwinAlarmTests"
cp -R "$root/Sources/FMCrypto" "$root/Sources/CFMCurl" "$out/Sources/"
flipped=0
while IFS= read -r -d '' file; do
    relative="${file#"$root/Sources/SwiftFM/"}"
    mkdir -p "$out/Sources/SwiftFM/$(dirname "$relative")"
    sed -E '/^[[:space:]]*#(if|elseif)[[:space:]]/{
        s/!canImport\(Darwin\)/(!DARWIN_SIM)/g
        s/canImport\(Darwin\)/DARWIN_SIM/g
        s/canImport\(Glibc\)/(!DARWIN_SIM)/g
        s/os\(Linux\)/(!DARWIN_SIM)/g
        s/os\((macOS|iOS|tvOS|watchOS|visionOS)\)/DARWIN_SIM/g
    }' "$file" > "$out/Sources/SwiftFM/$relative"
    flipped=$((flipped + $(grep -cE '^[[:space:]]*#(if|elseif).*DARWIN_SIM' "$out/Sources/SwiftFM/$relative" || true)))
done < <(find "$root/Sources/SwiftFM" -name '*.swift' -print0)
if [ "$flipped" -eq 0 ]; then
    echo "check-darwin-branches: no platform condition found to flip in Sources/SwiftFM" >&2
    exit 2
fi
cp "$root/Tests/SwiftFMTests/DeadlineClockTests.swift" "$root/Tests/SwiftFMTests/ClockAlarmTests.swift" "$out/Tests/DarwinAlarmTests/"

# Dispatch's own waits, reachable from the module that stands Apple's noasync marks over them.
cat > "$out/Sources/DispatchOriginals/DispatchOriginals.swift" <<'SWIFT'
import Dispatch
public func originalWait(_ semaphore: DispatchSemaphore) { semaphore.wait() }
SWIFT

cat > "$out/Sources/SwiftFM/DarwinStandIns.swift" <<'SWIFT'
// Stand-ins for this Linux type-check only: Apple-only APIs with the shapes Apple's SDK gives them.
import Dispatch
import DispatchOriginals
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Security's SecTrust (a CF type on Apple platforms).
public final class SecTrust: @unchecked Sendable {}

extension URLProtectionSpace {
    /// Apple: `var serverTrust: SecTrust? { get }`.
    public var serverTrust: SecTrust? { nil }
}

extension URLCredential {
    /// Apple: `init(trust: SecTrust)`.
    public convenience init(trust: SecTrust) { self.init(user: "", password: "", persistence: .none) }
}

/// Apple's constant (corelibs marks its own unavailable); this module's declaration shadows it.
let NSURLAuthenticationMethodServerTrust = "NSURLAuthenticationMethodServerTrust"

// Apple's Dispatch marks DispatchSemaphore.wait() `@available(*, noasync)` (Xcode 14.3 on: "instance method 'wait' is
// unavailable from asynchronous contexts; Await a Task handle instead; this is an error in Swift 6"); Linux's does not.
extension DispatchSemaphore {
    @available(*, noasync, message: "Apple platforms: DispatchSemaphore.wait() is unavailable from asynchronous contexts")
    func wait() { originalWait(self) }
}
SWIFT

cat > "$out/Package.swift" <<'SWIFT'
// swift-tools-version:6.0
// Generated by Scripts/check-darwin-branches.sh: SwiftFM's sources with the Apple-platform branches compiled.
import PackageDescription
let package = Package(
    name: "DarwinBranches",
    targets: [
        .target(name: "FMCrypto"),
        .target(name: "CFMCurl", linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]),
        .target(name: "DispatchOriginals"),
        .target(name: "SwiftFM", dependencies: ["FMCrypto", "CFMCurl", "DispatchOriginals"],
                swiftSettings: [.define("DARWIN_SIM")]),
        .testTarget(name: "DarwinAlarmTests", dependencies: ["SwiftFM"]),
    ]
)
SWIFT

status=0
echo "check-darwin-branches: $flipped platform conditions flipped in Sources/SwiftFM; building $out" >&2
log="$out/build.log"
if ! swift build --package-path "$out" --build-tests >"$log" 2>&1; then
    grep -E 'error:' "$log" | sort -u >&2 || true
    echo "check-darwin-branches: FAILED: the Apple-platform build of SwiftFM does not compile (full log: $log)" >&2
    exit 1
fi
if grep -E "^$out/Sources/SwiftFM/.*warning:" "$log" | grep -v 'DarwinStandIns.swift' | sort -u | grep . >&2; then
    echo "check-darwin-branches: FAILED: warnings in the Apple-platform build of SwiftFM" >&2
    status=1
fi
if ! swift test --package-path "$out" --skip-build >"$out/test.log" 2>&1; then
    grep -E '✘|error' "$out/test.log" >&2 || true
    echo "check-darwin-branches: FAILED: the clock's tests against the Apple platforms' ClockAlarm (log: $out/test.log)" >&2
    status=1
fi
if command -v clang >/dev/null; then
    if ! clang -target arm64-apple-macos12 -ffreestanding -fsyntax-only -Wall -Wextra -Werror -std=c11 \
        -I "$root/Sources/CFMCurl/include" "$root/Sources/CFMCurl/CFMCurl.c"; then
        echo "check-darwin-branches: FAILED: CFMCurl.c for an Apple target" >&2
        status=1
    fi
fi
[ "$status" -eq 0 ] && echo "check-darwin-branches: OK (SwiftFM's Apple-platform branches type-check; ClockAlarm's tests pass on them; CFMCurl.c compiles for arm64-apple-macos12)" >&2
exit "$status"
