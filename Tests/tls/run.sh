#!/usr/bin/env bash
# A real TLS front: nginx (Debian's package) terminates HTTPS with a certificate from a throwaway CA made
# here with the openssl CLI, and proxies to fm-emulator with X-Forwarded-Proto/X-Forwarded-Host. Then:
#   1. raw HTTPS probes (curl --cacert): container URLs and the streaming 302 Location are https;
#   2. the SwiftFM client (callbacks and async, containers included) over HTTPS, trusting the CA the way a
#      Linux user does: the CA goes into /usr/local/share/ca-certificates and `update-ca-certificates` runs;
#      here inside a private mount namespace (`unshare -m`) over copies of /etc/ssl/certs and
#      /usr/local/share/ca-certificates, so the machine's trust store is never touched;
#   3. FMTLSOptions through FMCurlTransport, and the hostile-server tests behind a TLS relay (Tests/tls/relay.py);
#   4. python-fmrest over HTTPS (verify_ssl = the CA file).
#
# Usage (as root, Linux, after `swift build --build-tests`): Tests/tls/run.sh
# Installs nginx, openssl and ca-certificates with apt-get when they are missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
# shellcheck source=lib.sh
source "$root/Tests/tls/lib.sh"

[ "$(id -u)" = 0 ] || { echo "tls: run as root (unshare -m and bind mounts need it)" >&2; exit 1; }
if ! command -v nginx >/dev/null || ! command -v openssl >/dev/null || ! command -v update-ca-certificates >/dev/null \
   || ! command -v curl >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx-light openssl ca-certificates curl >/dev/null \
      || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx openssl ca-certificates curl >/dev/null
fi
[ -d /usr/local/share/ca-certificates ] || { echo "tls: /usr/local/share/ca-certificates is missing (package ca-certificates)" >&2; exit 1; }

work=$(mktemp -d /tmp/swiftfm-tls.XXXXXX)
chmod 755 "$work"
emulator_pid=""
nginx_pid=""
cleanup() {
    [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
    [ -n "$emulator_pid" ] && kill "$emulator_pid" 2>/dev/null && wait "$emulator_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "tls: FAIL $*" >&2; [ -f "$work/error.log" ] && tail -5 "$work/error.log" >&2; exit 1; }
# suite NAME WHAT VARIABLE=VALUE…: `swift test --filter NAME` with these variables set; it must run (not be skipped)
# and pass, else the check WHAT fails.
suite() {
    local name=$1 what=$2 log="$work/swift-$1.log" status=0
    shift 2
    env "$@" swift test --skip-build --filter "$name" > "$log" 2>&1 || status=$?
    grep -E "✘|Suite $name|Test run with" "$log" || tail -30 "$log"
    [ "$status" = 0 ] && grep -q "Suite $name passed" "$log" && ! grep -q "skipped" "$log" || fail "$what"
}

# 1. A throwaway CA and a server certificate for 127.0.0.1 and localhost.
tls_ca_and_server "$work" "SwiftFM throwaway test CA"
# For FMTLSOptions: a second, wrong CA; a client certificate from the CA; the pins (curl's sha256//).
tls_ca "$work" "SwiftFM wrong test CA" wrong-ca
tls_issue "$work" client swiftfm-client "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature" "extendedKeyUsage=clientAuth"
cd "$work"
pin() { openssl pkey -in "$1" -pubout -outform der 2>/dev/null | openssl dgst -sha256 -binary | base64; }
server_pin="sha256//$(pin server.key)"
wrong_pin="sha256//$(pin wrong-ca.key)"
cd "$root"

# 2. fm-emulator on a free loopback port (the built-in demo solution, database Music).
bin=$(swift build --show-bin-path)
"$bin/fm-emulator" --port 0 > "$work/emulator.out" 2> "$work/emulator.err" &
emulator_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$work/emulator.out" 2>/dev/null && break; sleep 0.1; done
emulator_url=$(sed -n 's/^listening on //p' "$work/emulator.out")
[ -n "$emulator_url" ] || fail "fm-emulator did not start: $(cat "$work/emulator.err")"

# 3. nginx: TLS on a free loopback port, proxy_pass to the emulator. The upstream keeps nginx's own Host
#    (the emulator's address): only X-Forwarded-Proto/Host tell it what the client used, and
#    proxy_redirect is off, so any Location header is the emulator's own.
tls_port=$(tls_free_port)
mtls_port=$(tls_free_port)
mkdir -m 1777 "$work/tmp"
{
    tls_nginx_head "$work" 64 64m
    tls_nginx_server "$tls_port" "$work" "$emulator_url"
    # Mutual TLS: a client certificate from the test CA is required.
    tls_nginx_server "$mtls_port" "$work" "$emulator_url" "        ssl_client_certificate $work/ca.crt;
        ssl_verify_client on;"
    echo "}"
} > "$work/nginx.conf"
nginx -t -q -e "$work/error.log" -p "$work" -c "$work/nginx.conf" || fail "nginx -t"
nginx -e "$work/error.log" -p "$work" -c "$work/nginx.conf" -g "daemon off;" &
nginx_pid=$!
base="https://127.0.0.1:$tls_port"
for _ in $(seq 100); do curl -sf --cacert "$work/ca.crt" "$base/fmi/data/vLatest/productInfo" >/dev/null 2>&1 && break; sleep 0.1; done
curl -sf --cacert "$work/ca.crt" "$base/fmi/data/vLatest/productInfo" >/dev/null || fail "nginx does not answer on $base"
# The machine's own trust store does not know the CA: without it the handshake fails.
if curl -s -o /dev/null "$base/fmi/data/vLatest/productInfo" 2>/dev/null; then fail "the system trust store already trusts the test CA"; fi
echo "tls: nginx $(nginx -v 2>&1 | sed 's/.*\///') on $base → $emulator_url"

# 4. Raw probes: a container URL and its 302 keep the client's scheme and host.
db="$base/fmi/data/vLatest/databases/Music"
token=$(curl -sf --cacert "$work/ca.crt" -X POST -u admin:admin -H 'Content-Type: application/json' -d '{}' "$db/sessions" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["response"]["token"])')
record=$(curl -sf --cacert "$work/ca.crt" -X POST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -d '{"fieldData":{"name":"TLS probe"}}' "$db/layouts/Artists/records" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["response"]["recordId"])')
printf 'tls probe bytes' > "$work/probe.txt"
curl -sf --cacert "$work/ca.crt" -X POST -H "Authorization: Bearer $token" -F "upload=@$work/probe.txt" \
    "$db/layouts/Artists/records/$record/containers/headshot" >/dev/null || fail "upload over HTTPS"
container=$(curl -sf --cacert "$work/ca.crt" -H "Authorization: Bearer $token" "$db/layouts/Artists/records/$record" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["response"]["data"][0]["fieldData"]["headshot"])')
case "$container" in "$base/Streaming_SSL/"*) ;; *) fail "container URL $container does not start with $base/";; esac
location=$(curl -s --cacert "$work/ca.crt" -o /dev/null -w '%{redirect_url}' "$container")
case "$location" in "$base/Streaming_SSL/"*) ;; *) fail "the streaming 302 goes to '$location', not $base/…";; esac
[ "$(curl -sfL --cacert "$work/ca.crt" -c "$work/cookies" -b "$work/cookies" "$container")" = "tls probe bytes" ] \
    || fail "container download over HTTPS"
curl -sf --cacert "$work/ca.crt" -X DELETE "$db/sessions/$token" >/dev/null
echo "tls: container URL and 302 Location are $base/…"

# 5. The SwiftFM client: the CA installed the Linux way, in a private mount namespace.
echo "tls: SwiftFM client (callbacks and async) over HTTPS"
WORK="$work" BASE="$base" unshare --mount --propagation private bash -euo pipefail -c '
    cp -a /etc/ssl/certs "$WORK/etc-ssl-certs"
    mkdir "$WORK/local-ca"
    cp -a /usr/local/share/ca-certificates/. "$WORK/local-ca/"
    mount --bind "$WORK/etc-ssl-certs" /etc/ssl/certs
    mount --bind "$WORK/local-ca" /usr/local/share/ca-certificates
    # What a user does on Debian/Ubuntu (RHEL: /etc/pki/ca-trust/source/anchors + update-ca-trust):
    cp "$WORK/ca.crt" /usr/local/share/ca-certificates/swiftfm-test-ca.crt
    update-ca-certificates >/dev/null
    status=0
    FM_TLS_BASE_URL="$BASE" swift test --skip-build --filter TLSFrontTests > "$WORK/swift-test.log" 2>&1 || status=$?
    grep -E "✘|Suite TLSFrontTests|Test run with" "$WORK/swift-test.log" || tail -30 "$WORK/swift-test.log"
    # Enabled (FM_TLS_BASE_URL seen), not skipped, and passed.
    [ "$status" = 0 ] && grep -q "Suite TLSFrontTests passed" "$WORK/swift-test.log" && ! grep -q "skipped" "$WORK/swift-test.log"
' || fail "SwiftFM client over HTTPS"
# The namespace is gone: the machine's bundle does not hold the test CA.
grep -q "$(sed -n 2p "$work/ca.crt")" /etc/ssl/certs/ca-certificates.crt && fail "the test CA leaked into the system bundle"

# 5b. FMTLSOptions through FMCurlTransport, the system store untouched (it does not know the CA): the CA through
#     caCertificates alone, the wrong CA refused, the right pin accepted and a wrong one refused, and a server
#     requiring a client certificate refused without one and answered with one.
echo "tls: FMTLSOptions (CA bundle, pins, client certificate) over HTTPS, system store untouched"
curl -sf -o /dev/null --cacert "$work/ca.crt" "https://127.0.0.1:$mtls_port/fmi/data/vLatest/productInfo" \
    && fail "the mTLS server answered curl without a client certificate"
suite TLSOptionsTests "FMTLSOptions over HTTPS" FM_TLS_BASE_URL="$base" FM_TLS_MTLS_URL="https://127.0.0.1:$mtls_port" \
    FM_TLS_CA="$work/ca.crt" FM_TLS_WRONG_CA="$work/wrong-ca.crt" FM_TLS_PIN="$server_pin" FM_TLS_WRONG_PIN="$wrong_pin" \
    FM_TLS_CLIENT_CERT="$work/client.crt" FM_TLS_CLIENT_KEY="$work/client.key"

# 5c. The hostile-server tests over TLS: each plain loopback server behind Tests/tls/relay.py (a Python ssl relay
#     with the server certificate), FMCurlTransport trusting the CA through caCertificates.
echo "tls: hostile servers over TLS (FMCurlTransport through Tests/tls/relay.py)"
suite HostileTLSTests "hostile servers over TLS" FM_TLS_RELAY="$root/Tests/tls/relay.py" FM_TLS_CA="$work/ca.crt" \
    FM_TLS_SERVER_CERT="$work/server.crt" FM_TLS_SERVER_KEY="$work/server.key"

# 6. python-fmrest over HTTPS, trusting the CA file through verify_ssl (requests' CA bundle).
echo "tls: python-fmrest over HTTPS"
python3 "$root/Tests/tls/fmrest_tls.py" "$base" "$work/ca.crt" || fail "python-fmrest over HTTPS"
echo "tls: all checks passed"
