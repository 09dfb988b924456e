#!/usr/bin/env python3
"""A TLS front for the tests' plain loopback servers (the hostile ones): relay.py CERT KEY PORT.

Listens on a free 127.0.0.1 port with TLS (CERT and KEY, PEM), prints "listening on PORT" and, for each
connection, opens one to 127.0.0.1:PORT and copies bytes both ways until either side ends; then it closes
both (a server that closes after reading closes the client's TLS connection; a client that leaves closes
the server's). Nothing is buffered beyond one read: a client that stops reading stops the server's writes
(back-pressure), so a flood stays a flood at the server. Ends when its standard input closes (the test that
started it ended), so it never outlives its test.

Only for tests: started by SwiftFMTests' HostileTLSTests when FM_TLS_RELAY names this file (Tests/tls/run.sh).
"""
import os
import select
import socket
import ssl
import sys
import threading


def relay(raw, context, port):
    try:
        client = context.wrap_socket(raw, server_side=True)
    except (ssl.SSLError, OSError):
        raw.close()
        return
    try:
        upstream = socket.create_connection(("127.0.0.1", port))
    except OSError:
        client.close()
        return
    try:
        while True:
            # Bytes TLS already decrypted are not visible to select.
            readable = [client] if client.pending() else select.select([client, upstream], [], [])[0]
            if client in readable:
                try:
                    data = client.recv(65536)
                except ssl.SSLWantReadError:
                    continue
                if not data:
                    break
                upstream.sendall(data)
            if upstream in readable:
                data = upstream.recv(65536)
                if not data:
                    break
                client.sendall(data)
    except (ssl.SSLError, OSError):
        pass
    finally:
        for end in (upstream, client):
            try:
                end.close()
            except OSError:
                pass


def main():
    if len(sys.argv) != 4:
        sys.stderr.write("usage: relay.py CERT KEY PORT\n")
        sys.exit(2)
    cert, key, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)

    def watch_stdin():
        while sys.stdin.buffer.read(4096):
            pass
        os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    sys.stdout.write("listening on %d\n" % listener.getsockname()[1])
    sys.stdout.flush()
    while True:
        raw, _ = listener.accept()
        threading.Thread(target=relay, args=(raw, context, port), daemon=True).start()


if __name__ == "__main__":
    main()
