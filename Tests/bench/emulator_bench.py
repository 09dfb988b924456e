#!/usr/bin/env python3
"""Emulator speed, old against new in one run. Run by hand, not by CI:

    python3 Tests/bench/emulator_bench.py OLD/fm-emulator NEW/fm-emulator [--records N] [--rounds R]

Writes a schema with one 20-field table (10,000 seed records by default), starts both emulators on
loopback, and times, interleaved request by request, each emulator answering:
  range    GET  …/records?_limit=N                     (the whole table, 20 fields per record)
  find     POST …/_find {"query":[{"city":"*"}],"limit":N}
  sorted   the same find, sorted by two fields
  dups     POST …/_find {"query":[{"code":"!"}],"limit":N}  (the duplicates operator)
Times are wall-clock of one request (bytes read, not parsed). Prints the load average, min/median per
emulator and the median of per-round ratios old/new. SLOW_DUPS_ONCE=1 times `dups` in one round only (the
old emulator's quadratic `!` takes about a minute); CASES=range,find limits the cases.
"""
import base64, hashlib, json, os, statistics, subprocess, sys, tempfile, time, urllib.request

def schema(n):
    fields = {"id": {"type": "number", "autoEnter": "serial"}, "name": "text", "city": "text", "code": "text",
              "rating": "number", "price": "number", "born": "date", "lastSeen": "timestamp", "alarm": "time"}
    for i in range(11):
        fields["extra%d" % i] = "text" if i % 2 else "number"
    cities = ["Dallas", "Austin", "Paris", "Oslo", "Lima"]
    rows = []
    for i in range(n):
        row = {"name": "Band %d" % i, "city": cities[i % 5], "code": "C%d" % (i % (n // 2 or 1)),
               "rating": i % 7, "price": "%d.%02d" % (i % 1000, i % 100), "born": "%02d/%02d/%d" % (i % 12 + 1, i % 28 + 1, 1950 + i % 60),
               "lastSeen": "01/%02d/2024 %02d:%02d:00" % (i % 28 + 1, i % 24, i % 60), "alarm": "%02d:30:00" % (i % 24)}
        for j in range(11):
            row["extra%d" % j] = ("text %d/%d" % (i, j)) if j % 2 else str(i * 31 + j * 0.25)
        rows.append(row)
    return {"database": "Bench", "accounts": [{"username": "admin", "password": "admin"}],
            "tables": {"Bench": {"fields": fields}},
            "layouts": {"Bench": {"table": "Bench", "fields": list(fields)}},
            "records": {"Bench": rows}}

def start(binary, schema_path):
    p = subprocess.Popen([binary, "--schema", schema_path], stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline().strip()
    if not line.startswith("listening on "):
        raise SystemExit("%s did not start: %r" % (binary, line))
    return p, line[len("listening on "):]

def call(method, url, body=None, token=None, auth=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    if auth:
        req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as r:
        raw = r.read()
    return time.perf_counter() - t0, raw

def main():
    args = sys.argv[1:]
    n, rounds = 10000, 5
    if "--records" in args:
        i = args.index("--records"); n = int(args[i + 1]); del args[i:i + 2]
    if "--rounds" in args:
        i = args.index("--rounds"); rounds = int(args[i + 1]); del args[i:i + 2]
    binaries = args
    print("emulator_bench %s UTC: %d cores, load average %.2f %.2f %.2f; %d records x 20 fields, %d rounds"
          % ((time.strftime("%Y-%m-%d %H:%M", time.gmtime()), os.cpu_count()) + os.getloadavg() + (n, rounds)), flush=True)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(schema(n), f)
        path = f.name
    procs = []
    try:
        targets = []
        for b in binaries:
            p, base = start(b, path)
            procs.append(p)
            db = base + "/fmi/data/vLatest/databases/Bench"
            _, raw = call("POST", db + "/sessions", {}, auth="admin:admin")
            targets.append((b, db, json.loads(raw)["response"]["token"]))
        cases = {
            "range": lambda db, t: call("GET", db + "/layouts/Bench/records?_limit=%d" % n, token=t),
            "find": lambda db, t: call("POST", db + "/layouts/Bench/_find", {"query": [{"city": "*"}], "limit": n}, token=t),
            "sorted": lambda db, t: call("POST", db + "/layouts/Bench/_find", {"query": [{"city": "*"}], "limit": n,
                                          "sort": [{"fieldName": "city", "sortOrder": "ascend"}, {"fieldName": "rating", "sortOrder": "descend"}]}, token=t),
            "dups": lambda db, t: call("POST", db + "/layouts/Bench/_find", {"query": [{"code": "!"}], "limit": n}, token=t),
        }
        only = os.environ.get("CASES")
        for name, case in cases.items():
            if only and name not in only.split(","):
                continue
            times = {b: [] for b, _, _ in targets}
            sizes = {}
            digests = {}
            r = 1 if name == "dups" and os.environ.get("SLOW_DUPS_ONCE") else rounds
            for b, db, t in targets:   # warm-up
                if name != "dups":
                    case(db, t)
            for _ in range(r):
                for b, db, t in targets:
                    dt, raw = case(db, t)
                    times[b].append(dt)
                    sizes[b] = len(raw)
                    digests[b] = hashlib.sha256(raw).hexdigest()
            line = "%-7s" % name
            for b, _, _ in targets:
                line += "  %s: min %.3f s median %.3f s (%d bytes)" % (os.path.basename(os.path.dirname(os.path.dirname(os.path.dirname(b)))) or b,
                                                                  min(times[b]), statistics.median(times[b]), sizes[b])
            if len(targets) == 2:
                ratios = [a / c for a, c in zip(times[targets[0][0]], times[targets[1][0]])]
                line += "  old/new median %.2fx (min %.2f, max %.2f)" % (statistics.median(ratios), min(ratios), max(ratios))
                line += "  bytes %s" % ("identical" if len(set(digests.values())) == 1 else "DIFFERENT")
            print(line, flush=True)
        print("load average at the end %.2f %.2f %.2f" % os.getloadavg(), flush=True)
    finally:
        for p in procs:
            p.terminate(); p.wait()
        os.unlink(path)

main()
