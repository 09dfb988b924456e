#!/usr/bin/env python3
"""Hand-run figures for the README's emulator limits (not a test: it measures, and nothing asserts).

usage: python3 Tests/python/emulator_limits.py PATH/TO/fm-emulator

Starts fm-emulator three times and prints:
  1. connections held: 2,000 idle connections against the default cap (256) and a 2 s idle timeout;
  2. memory after a flood: RSS after ten 20 MiB POSTs (request log without bodies, the default);
  3. the largest stall a 60 MiB POST causes another client's productInfo.
Linux only (reads /proc/PID/status).
"""
import json, socket, subprocess, sys, threading, time, base64, http.client

EMU = sys.argv[1] if len(sys.argv) > 1 else ".build/debug/fm-emulator"


def start(*args):
    p = subprocess.Popen([EMU, "--port", "0", *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline().strip()
    port = int(line.rsplit(":", 1)[1])
    return p, port


def status(pid, key):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return -1


def login(port):
    c = http.client.HTTPConnection("127.0.0.1", port)
    auth = base64.b64encode(b"admin:admin").decode()
    c.request("POST", "/fmi/data/vLatest/databases/Music/sessions", body="{}",
              headers={"Authorization": "Basic " + auth, "Content-Type": "application/json"})
    return json.loads(c.getresponse().read())["response"]["token"]


def connections_held():
    p, port = start("--idle-timeout", "2")
    try:
        base_threads = status(p.pid, "Threads")
        socks, refused, held = [], 0, 0
        for _ in range(2000):
            s = socket.create_connection(("127.0.0.1", port))
            socks.append(s)
        time.sleep(0.5)
        threads_at_peak = status(p.pid, "Threads")
        for s in socks:
            s.settimeout(0.01)
            try:
                data = s.recv(64)
            except socket.timeout:
                data = b""
            # Refused connections were answered 503 at once; the others were held (and may since have
            # been closed silently by the idle timeout).
            if data.startswith(b"HTTP/1.1 503"):
                refused += 1
            else:
                held += 1
        time.sleep(3)  # past the idle timeout
        threads_after = status(p.pid, "Threads")
        for s in socks:
            s.close()
        print(f"connections: 2000 opened, {held} held, {refused} refused with 503; threads {base_threads} idle, "
              f"{threads_at_peak} at peak, {threads_after} after the 2 s idle timeout")
    finally:
        p.terminate(); p.wait()


def memory_after_flood():
    p, port = start()
    try:
        token = login(port)
        rss0 = status(p.pid, "VmRSS")
        body = json.dumps({"fieldData": {"no_such_field": "x" * (20 * 1024 * 1024)}})
        def flood():
            for _ in range(10):
                c = http.client.HTTPConnection("127.0.0.1", port)
                c.request("POST", "/fmi/data/vLatest/databases/Music/layouts/Artists/records", body=body,
                          headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
                c.getresponse().read()
                c.close()
            return status(p.pid, "VmRSS")
        rss1 = flood()
        rss2 = flood()
        print(f"memory: RSS {rss0 // 1024} MiB before, {rss1 // 1024} MiB after ten 20 MiB POSTs (answered 102), "
              f"{rss2 // 1024} MiB after ten more")
    finally:
        p.terminate(); p.wait()


def largest_stall():
    p, port = start()
    try:
        token = login(port)
        body = json.dumps({"fieldData": {"name": "x" * (60 * 1024 * 1024)}}).encode()
        done = threading.Event()
        worst = [0.0, 0]

        def poll():
            c = http.client.HTTPConnection("127.0.0.1", port)
            while not done.is_set():
                t = time.perf_counter()
                c.request("GET", "/fmi/data/vLatest/productInfo")
                c.getresponse().read()
                worst[0] = max(worst[0], time.perf_counter() - t)
                worst[1] += 1

        th = threading.Thread(target=poll); th.start()
        t0 = time.perf_counter()
        c = http.client.HTTPConnection("127.0.0.1", port)
        c.request("POST", "/fmi/data/vLatest/databases/Music/layouts/Artists/records", body=body,
                  headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
        st = c.getresponse().status
        big = time.perf_counter() - t0
        done.set(); th.join()
        print(f"stall: a 60 MiB create took {big:.2f} s (HTTP {st}); meanwhile {worst[1]} productInfo calls, "
              f"the slowest {worst[0] * 1000:.1f} ms")
    finally:
        p.terminate(); p.wait()


if __name__ == "__main__":
    connections_held()
    memory_after_flood()
    largest_stall()
