#!/usr/bin/env python3
"""python-fmrest (an independent client) against the League demo solution.

Usage: fmrest_league.py PATH/TO/fm-emulator
Starts `fm-emulator --port 3000 --schema Tests/Fixtures/league-schema.json` and checks, through
python-fmrest's public API only, what a Python suite needs from a modelled solution: related fields
through one and two hops, a sorted portal, writes through a relationship, and schema scripts with steps
that change records and compute results (run directly and as prerequest/after scripts). Then it runs
`fm-emulator capture --records 20` on the running solution, serves the copy, and checks that python-fmrest
reads the same layout metadata and records (portal rows included) from the copy as from the original.
Prints a one-line summary and exits non-zero on any mismatch.
"""
import os
import subprocess
import sys
import tempfile
import warnings

import fmrest

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, "..", "Fixtures", "league-schema.json")
URL = "http://127.0.0.1:3000"
results = []


def check(name, condition, detail=""):
    results.append((name, bool(condition), detail))
    if not condition:
        print(f"FAIL {name}: {detail}", file=sys.stderr)


def scenario():
    teams = fmrest.Server(URL, user="admin", password="admin", database="League", layout="Teams",
                          api_version="vLatest", verify_ssl=False, timeout=20)
    teams.login()
    team = teams.get_record(1)
    check("related field one hop", team["Team_city::population"] == 961855, repr(team["Team_city::population"]))
    roster = list(team["portal_roster"])
    check("portal sorted by its sort fields", [r["Players::name"] for r in roster] == ["Abe", "Bo", "Cara"],
          repr([r["Players::name"] for r in roster]))
    check("portal field two hops away", [r["Player_city::population"] for r in roster] == [961855] * 3, "")
    teams.edit_record(1, {"Team_city::population": 1000000})
    check("write through a relationship", teams.get_record(1)["Team_city::population"] == 1000000, "")

    players = fmrest.Server(URL, user="admin", password="admin", database="League", layout="Players",
                            api_version="vLatest", verify_ssl=False, timeout=20)
    players.login()
    error, result = players.perform_script("Output with param", param="from Python")
    check("script result built from the parameter", (error, result) == (0, "Output with param from Python"), repr((error, result)))
    error, result = players.perform_script("AddToScore", param="5")
    check("a script changes a record", (error, result) == (0, "Cara now has 17"), repr((error, result)))
    error, result = players.perform_script("Find Nobody")
    check("a script's error", (error, result) == (401, "found 0"), repr((error, result)))
    record = players.get_record(2, scripts={"prerequest": ["Bonus All", None], "after": ["AddToScore", "10"]})
    check("prerequest and after scripts act before the answer", record.score == 41, repr(record.score))
    # "Bonus All" loops with Go to Record [Next; Exit after last]: FileMaker ends it with error 101.
    check("their results", players.last_script_result.get("after") == [0, "Abe now has 41"]
          and players.last_script_result.get("prerequest") == [101, "4"], repr(players.last_script_result))


def plain(record):
    """A record as plain data: portals (python-fmrest foundsets) as lists of dicts."""
    out = {}
    for key, value in record.to_dict().items():
        out[key] = [row.to_dict() for row in value] if key.startswith("portal_") else value
    return out


def answers(url):
    """Layout metadata and records (portal rows included) of every League layout, through python-fmrest."""
    out = {}
    for layout in ["Teams", "Players", "Cities", "Games"]:
        server = fmrest.Server(url, user="admin", password="admin", database="League", layout=layout,
                               api_version="vLatest", verify_ssl=False, timeout=20)
        server.login()
        out[layout] = (server.get_layout(), [plain(r) for r in server.get_records(limit=20)])
        server.logout()
    return out


def stop(process):
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


def capture_round_trip(emulator_path, original):
    """Captures the running original, stops it, serves the copy on the same port (python-fmrest allows plain
    http only on port 3000) and compares what python-fmrest reads from both."""
    with tempfile.TemporaryDirectory() as tmp:
        schema = os.path.join(tmp, "league-copy.json")
        run = subprocess.run([emulator_path, "capture", "--host", URL, "--database", "League", "--username", "admin",
                              "--password", "admin", "--records", "20", "--output", schema],
                             capture_output=True, text=True, timeout=120)
        check("capture of the running solution is complete", run.returncode == 0, run.stderr[-800:])
        expected = answers(URL)
        stop(original)
        if not os.path.exists(schema):
            return
        copy = subprocess.Popen([emulator_path, "--host", "127.0.0.1", "--port", "3000", "--schema", schema],
                                stdout=subprocess.PIPE, text=True)
        try:
            line = copy.stdout.readline().strip()
            check("the copy starts", line.startswith("listening on http://127.0.0.1:3000"), repr(line))
            got = answers(URL)
            for layout, (meta, records) in expected.items():
                check(f"copy: same metadata of {layout}", got[layout][0] == meta, layout)
                check(f"copy: same records of {layout}", got[layout][1] == records, f"{records!r} != {got[layout][1]!r}"[:800])
        finally:
            stop(copy)


def main():
    if len(sys.argv) != 2:
        print("usage: fmrest_league.py PATH/TO/fm-emulator", file=sys.stderr)
        return 2
    emulator = subprocess.Popen([sys.argv[1], "--host", "127.0.0.1", "--port", "3000", "--schema", SCHEMA],
                                stdout=subprocess.PIPE, text=True)
    try:
        line = emulator.stdout.readline().strip()
        if not line.startswith("listening on http://127.0.0.1:3000"):
            print(f"fm-emulator did not start: {line!r}", file=sys.stderr)
            return 1
        warnings.simplefilter("ignore")
        try:
            scenario()
            capture_round_trip(sys.argv[1], emulator)
        except Exception as error:  # noqa: BLE001 - report, never hide
            check("scenario ran to the end", False, f"{type(error).__name__}: {error}")
    finally:
        stop(emulator)
    passed = sum(1 for _, ok, _ in results if ok)
    failed = len(results) - passed
    print(f"python-fmrest {fmrest.__version__} against the League solution: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
