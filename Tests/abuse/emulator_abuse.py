#!/usr/bin/env python3
"""The emulator under abuse, over loopback only, every loop bounded in count and time.

    python3 Tests/abuse/emulator_abuse.py .build/release/fm-emulator [logcost] [slowloris] [idle] [soak] [--check]

Starts the given fm-emulator on a free loopback port (with its control API) and reports:
  logcost    mean time of a range read (20 records) with a request log of under 200 entries vs a full one
             (10,000 entries, the default cap)
  slowloris  256 connections that each send one header byte every 3 s for 45 s; meanwhile a normal
             client makes 100 calls on fresh connections: statuses and the slowest answer
  idle       1,500 connections that send nothing; then a normal client makes 100 calls
  soak       mixed calls (reads, finds, creates, edits, logins) for --seconds (default 120), the
             emulator's RSS sampled every 10 s, with its slope
For each: the emulator's threads and RSS (from /proc). Figures only, except with --check (as .ci/run runs
slowloris and idle): then it exits 1 unless every normal call during slowloris and the idle flood was
answered 200 (what is answered, never how fast: the times are printed, not checked).
"""
import base64
import http.client
import json
import os
import resource
import socket
import subprocess
import sys
import threading
import time

HOST = "127.0.0.1"


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def proc_status(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return int(fields["Threads"]), int(fields["VmRSS"].split()[0]) // 1024


class Emulator:
    def __init__(self, binary):
        self.process = subprocess.Popen([binary, "--port", "0", "--control-port", "0", "--max-connections", "256"],
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        first = self.process.stdout.readline().strip()
        second = self.process.stdout.readline().strip()
        assert first.startswith("listening on http://"), first
        self.port = int(first.rsplit(":", 1)[1])
        self.control_port = int(second.rsplit(":", 1)[1])

    def status(self):
        return proc_status(self.process.pid)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)


def call(port, method, path, body=None, token=None, conn=None, timeout=30):
    own = conn is None
    if own:
        conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
    response = conn.getresponse()
    data = response.read()
    if own:
        conn.close()
    return response.status, data


def login(port, conn=None):
    auth = base64.b64encode(b"admin:admin").decode()
    c = conn or http.client.HTTPConnection(HOST, port, timeout=30)
    c.request("POST", "/fmi/data/vLatest/databases/Music/sessions", body="{}",
              headers={"Authorization": "Basic " + auth, "Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    if conn is None:
        c.close()
    return r.getheader("X-FM-Data-Access-Token")


BASE = "/fmi/data/vLatest/databases/Music/layouts/Artists"


def logcost(emu):
    token = login(emu.port)
    conn = http.client.HTTPConnection(HOST, emu.port, timeout=30)

    def reads(n, clear):
        total = 0.0
        for i in range(n):
            if clear and i % 200 == 0:
                call(emu.control_port, "DELETE", "/v1/log")
            start = time.perf_counter()
            status, _ = call(emu.port, "GET", BASE + "/records?_limit=20", token=token, conn=conn)
            total += time.perf_counter() - start
            assert status == 200, status
        return total / n * 1e6

    reads(300, True)  # warm up
    rounds = []
    for _ in range(3):
        small = reads(2000, True)
        for _ in range(10_000):
            call(emu.port, "GET", "/fmi/data/vLatest/productInfo", conn=conn)
        full = reads(2000, False)
        rounds.append((small, full))
    for small, full in rounds:
        print(f"  range read: log < 200 entries {small:.0f} µs, full log (10,000) {full:.0f} µs, ratio {full / small:.2f}")
    print(f"  emulator threads, RSS MB: {emu.status()}")


def normal_calls(port, n):
    worst, statuses = 0.0, {}
    for _ in range(n):
        start = time.perf_counter()
        try:
            status, _ = call(port, "GET", "/fmi/data/vLatest/productInfo", timeout=30)
        except Exception as e:  # noqa: BLE001 - a figure, not a test
            status = type(e).__name__
        worst = max(worst, time.perf_counter() - start)
        statuses[status] = statuses.get(status, 0) + 1
        time.sleep(0.1)
    return statuses, worst


def slowloris(emu, connections=256, seconds=45):
    sockets = []
    for _ in range(connections):
        s = socket.create_connection((HOST, emu.port))
        s.sendall(b"GET /fmi/data/vLatest/productInfo HTTP/1.1\r\nHost: x\r\n")
        sockets.append(s)
    stop = time.time() + seconds
    closed = [0]

    def drip():
        while time.time() < stop:
            for s in list(sockets):
                try:
                    s.send(b"X")
                except OSError:
                    sockets.remove(s)
                    closed[0] += 1
                    # The attacker reconnects, as slowloris does.
                    try:
                        n = socket.create_connection((HOST, emu.port))
                        n.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
                        sockets.append(n)
                    except OSError:
                        pass
            time.sleep(3)

    t = threading.Thread(target=drip)
    t.start()
    time.sleep(1)
    statuses, worst = normal_calls(emu.port, 100)
    threads, rss = emu.status()
    t.join()
    for s in sockets:
        s.close()
    print(f"  during slowloris ({connections} connections, a byte every 3 s, reconnecting when closed): "
          f"normal calls {statuses}, slowest {worst * 1000:.0f} ms; slow connections closed by the server {closed[0]}; "
          f"emulator threads {threads}, RSS {rss} MB")
    return statuses


def idle(emu, connections=1500):
    sockets = [socket.create_connection((HOST, emu.port)) for _ in range(connections)]
    time.sleep(1)
    statuses, worst = normal_calls(emu.port, 100)
    threads, rss = emu.status()
    open_now = sum(1 for s in sockets if not _closed(s))
    for s in sockets:
        s.close()
    print(f"  with {connections} idle connections: normal calls {statuses}, slowest {worst * 1000:.0f} ms; "
          f"idle ones still open {open_now}; emulator threads {threads}, RSS {rss} MB")
    return statuses


def _closed(s):
    s.setblocking(False)
    try:
        return s.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def soak(emu, seconds):
    token = login(emu.port)
    conn = http.client.HTTPConnection(HOST, emu.port, timeout=30)
    samples = []
    calls = 0
    start = time.time()
    next_sample = start
    created = []
    while time.time() - start < seconds:
        if time.time() >= next_sample:
            samples.append((time.time() - start, emu.status()[1], calls, cpu_seconds(emu.process.pid)))
            next_sample += 10
        k = calls % 10
        if k < 5:
            call(emu.port, "GET", BASE + "/records?_limit=20", token=token, conn=conn)
        elif k < 7:
            call(emu.port, "POST", BASE + "/_find", {"query": [{"name": "a"}]}, token=token, conn=conn)
        elif k == 7:
            status, data = call(emu.port, "POST", BASE + "/records", {"fieldData": {"name": f"soak {calls}"}}, token=token, conn=conn)
            if status == 200:
                created.append(json.loads(data)["response"]["recordId"])
        elif k == 8 and created:
            rid = created.pop(0)
            call(emu.port, "DELETE", BASE + f"/records/{rid}", token=token, conn=conn)
        else:
            other = login(emu.port)
            call(emu.port, "DELETE", f"/fmi/data/vLatest/databases/Music/sessions/{other}")
        calls += 1
    samples.append((time.time() - start, emu.status()[1], calls, cpu_seconds(emu.process.pid)))
    half = [s for s in samples if s[0] >= seconds / 2]
    xs = [s[0] for s in half]
    ys = [s[1] for s in half]
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / max(1e-9, sum((x - mx) ** 2 for x in xs))
    rates = [(b[2] - a[2]) / (b[0] - a[0]) for a, b in zip(samples, samples[1:]) if b[0] > a[0]]
    # The emulator's own CPU time per call, per 10 s window: independent of how busy the machine is.
    cpu = [(b[3] - a[3]) / max(1, b[2] - a[2]) * 1e6 for a, b in zip(samples, samples[1:]) if b[2] > a[2]]
    print(f"  soak: {calls} mixed calls in {seconds} s; RSS MB by time: " +
          ", ".join(f"{t:.0f}s {r}" for t, r, _, _ in samples))
    print(f"  RSS slope over the second half: {slope * 60:.2f} MB/min; calls/s per 10 s: first {rates[0]:.0f}, last {rates[-1]:.0f}")
    print(f"  emulator CPU per call (µs) per 10 s: first {cpu[0]:.0f}, second {cpu[1]:.0f}, middle {cpu[len(cpu) // 2]:.0f}, "
          f"last {cpu[-1]:.0f}")


def main():
    binary = sys.argv[1]
    chosen = [a for a in sys.argv[2:] if not a.startswith("--")] or ["logcost", "slowloris", "idle"]
    seconds = 120
    if "--seconds" in sys.argv:
        seconds = int(sys.argv[sys.argv.index("--seconds") + 1])
    # 1,500 idle connections need more descriptors than a default soft limit of 1,024.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 4096 if hard == resource.RLIM_INFINITY else min(4096, hard)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    failed = []
    for name in chosen:
        emu = Emulator(binary)
        try:
            print(f"{name}:")
            statuses = None
            if name == "logcost":
                logcost(emu)
            elif name == "slowloris":
                statuses = slowloris(emu)
            elif name == "idle":
                statuses = idle(emu)
            elif name == "soak":
                soak(emu, seconds)
            if statuses is not None and set(statuses) != {200}:
                failed.append(f"{name}: {statuses}")
        finally:
            emu.stop()
    if "--check" in sys.argv and failed:
        print("FAILED: a normal client was not answered 200 under abuse: " + "; ".join(failed))
        sys.exit(1)


if __name__ == "__main__":
    main()
