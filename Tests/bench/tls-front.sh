#!/usr/bin/env bash
# fm-bench's TLS front (users run over HTTPS, so the benchmarks do too): nginx terminating HTTPS with a certificate from a throwaway CA made with the
# openssl CLI, proxying to an fm-emulator over plain HTTP, as Tests/tls/run.sh does for the suite. fm-bench --tls
# runs this script itself; it also serves a front you start by hand for fm-bench --base-url … --ca-file ….
#
#   tls-front.sh ca DIR              DIR/ca.crt and DIR/server.{crt,key} (for 127.0.0.1 and localhost), if missing
#   tls-front.sh front DIR UPSTREAM  nginx on a free loopback port in front of UPSTREAM (http://127.0.0.1:PORT),
#                                    with DIR's certificate; prints "listening on https://127.0.0.1:PORT" once it
#                                    answers, and runs until its standard input ends or SIGTERM (or until the
#                                    process that started it ends)
#   tls-front.sh trusted CA -- CMD…  CMD in a private mount namespace (unshare -m, root) whose
#                                    /etc/ssl/certs/ca-certificates.crt also holds CA: the CA file libcurl is built
#                                    with, which corelibs URLSession uses, so a bare URLSession trusts the front.
#                                    The machine's trust store is never touched.
#
# Needs nginx and openssl (apt-get install nginx-light openssl, or nginx).
set -euo pipefail
# shellcheck source=../tls/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../tls/lib.sh"

make_ca() {
    local dir=$1
    [ -f "$dir/ca.crt" ] && [ -f "$dir/server.crt" ] && return 0
    mkdir -p "$dir"
    chmod 755 "$dir"
    tls_ca_and_server "$dir" "SwiftFM fm-bench throwaway CA"
}

front() {
    local dir=$1 upstream=${2%/}
    local hostport=${upstream#http://}
    local port
    port=$(tls_free_port)
    work=$(mktemp -d "$dir/front.XXXXXX")
    chmod 755 "$work"
    mkdir -m 1777 "$work/tmp"
    # Streams bodies both ways (no request or answer buffering: a 1 GiB container passes through), no body size
    # limit, kept-alive connections to the emulator; nginx's defaults otherwise (keepalive_requests 1000).
    {
        tls_nginx_head "$work" 1024 0
        printf '    upstream emulator {\n        server %s;\n        keepalive 64;\n    }\n' "$hostport"
        tls_nginx_server "$port" "$dir" http://emulator "" "            proxy_request_buffering off;
            proxy_buffering off;
            proxy_read_timeout 300s;
            proxy_send_timeout 300s;
            proxy_set_header Host $hostport;"
        echo "}"
    } > "$work/nginx.conf"
    nginx -t -q -e "$work/error.log" -p "$work" -c "$work/nginx.conf" || { echo "tls-front: nginx -t failed" >&2; exit 1; }
    nginx -e "$work/error.log" -p "$work" -c "$work/nginx.conf" -g "daemon off;" &
    nginx_pid=$!
    local parent=$PPID
    trap 'kill "$nginx_pid" 2>/dev/null; wait "$nginx_pid" 2>/dev/null; rm -rf "$work"; exit 0' TERM INT EXIT
    local base="https://127.0.0.1:$port"
    for _ in $(seq 200); do
        curl -s -o /dev/null --cacert "$dir/ca.crt" "$base/fmi/data/vLatest/productInfo" && break
        sleep 0.05
    done
    curl -s -o /dev/null --cacert "$dir/ca.crt" "$base/fmi/data/vLatest/productInfo" \
        || { echo "tls-front: nginx does not answer on $base" >&2; tail -5 "$work/error.log" >&2; exit 1; }
    echo "listening on $base"
    # Until standard input closes (fm-bench closes it to stop the front: a signal may be blocked in a process
    # spawned from one of its threads, and is then never seen here), SIGTERM, nginx's end, or the end of the
    # process that started this one.
    local status
    while kill -0 "$nginx_pid" 2>/dev/null && kill -0 "$parent" 2>/dev/null; do
        status=0
        read -r -t 1 _ || status=$?
        [ "$status" -gt 128 ] || [ "$status" = 0 ] || break # 1: end of input
    done
}

trusted() {
    local ca=$1
    shift
    [ "$(id -u)" = 0 ] || { echo "tls-front: trusted needs root (unshare -m and a bind mount)" >&2; exit 1; }
    local bundle=/etc/ssl/certs/ca-certificates.crt
    [ -f "$bundle" ] || { echo "tls-front: no $bundle" >&2; exit 1; }
    local copy
    copy=$(mktemp /tmp/fm-bench-ca-bundle.XXXXXX)
    cat "$bundle" "$ca" > "$copy"
    chmod 644 "$copy"
    # The copy is mounted over the bundle, then unlinked (the mount keeps it); CMD replaces every process on the
    # way (same PID), so a signal to this script reaches it.
    COPY="$copy" BUNDLE="$bundle" exec unshare --mount --propagation private bash -c \
        'status=0; mount --bind "$COPY" "$BUNDLE" || status=$?; rm -f "$COPY"; [ "$status" = 0 ] && exec "$@"; exit 1' tls-front "$@"
}

case "${1:-}" in
    ca) make_ca "$2" ;;
    front) front "$2" "$3" ;;
    trusted)
        [ "${3:-}" = "--" ] && [ $# -gt 3 ] || { echo "usage: tls-front.sh trusted CA -- COMMAND…" >&2; exit 2; }
        ca=$2
        shift 3
        trusted "$ca" "$@" ;;
    *) echo "usage: tls-front.sh ca DIR | front DIR UPSTREAM | trusted CA -- COMMAND…" >&2; exit 2 ;;
esac
