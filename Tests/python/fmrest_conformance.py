#!/usr/bin/env python3
"""An independent client checks the emulator: python-fmrest, through its public API only.

Usage: fmrest_conformance.py PATH/TO/fm-emulator
Starts `fm-emulator --port 3000 --control-port 0 --schema schema.json` (python-fmrest only accepts
plain http on port 3000), runs one scenario, then drives faults through the emulator's control API
(README, "Control API") and checks how python-fmrest meets them; prints a one-line summary and exits
non-zero on any mismatch.
"""
import io
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
import warnings

import fmrest
from fmrest.exceptions import BadGatewayError, BadJSON, FileMakerError

HERE = os.path.dirname(os.path.abspath(__file__))
URL = "http://127.0.0.1:3000"
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000") + bytes(range(256))

results = []


def check(name, condition, detail=""):
    results.append((name, bool(condition), detail))
    if not condition:
        print(f"FAIL {name}: {detail}", file=sys.stderr)


def expect_fm_error(name, code, fn):
    try:
        fn()
    except FileMakerError as error:
        # python-fmrest keeps the code only in its message: "FileMaker Server returned error 401, ..."
        check(name, f"error {code}," in str(error), f"expected FileMaker error {code}, got {error}")
        return
    except Exception as error:  # noqa: BLE001 - any other failure is a mismatch
        check(name, False, f"expected FileMaker error {code}, got {type(error).__name__}: {error}")
        return
    check(name, False, f"expected FileMaker error {code}, got success")


def scenario(fms):
    token = fms.login()
    check("login returns a 52-hex token", token and len(token) == 52 and all(c in "0123456789abcdef" for c in token), repr(token))

    band_id = fms.create_record(
        {"name": "The Emulators", "city": "Austin", "members": 4, "formed": "02/22/2022"},
        portals={"gigs": [{"Gigs::venue": "Loopback Hall", "Gigs::year": 2024}]},
    )
    check("create with portal data returns a record id", isinstance(band_id, int) and band_id > 0, repr(band_id))

    record = fms.get_record(band_id)
    check("get: field values typed", record.name == "The Emulators" and record.members == 4, repr(record))
    check("get: date in US format", record.formed == "02/22/2022", repr(record.formed))
    gigs = list(record["portal_gigs"])
    check("get: created portal row is there", len(gigs) == 1 and gigs[0]["Gigs::venue"] == "Loopback Hall", repr(gigs))

    foundset = fms.get_records(offset=1, limit=3, sort=[{"fieldName": "members", "sortOrder": "descend"}],
                               portals=[{"name": "gigs", "offset": 1, "limit": 2}])
    rows = list(foundset)
    check("range: limit honoured", len(rows) == 3, f"{len(rows)} rows")
    members = [r.members for r in rows]
    check("range: sorted descending", members == sorted(members, reverse=True), repr(members))
    check("range: dataInfo foundCount", foundset.info.get("foundCount") == 5, repr(foundset.info))
    doe = next(iter(fms.get_records(limit=1, portals=[{"name": "gigs", "offset": 2, "limit": 1}])))
    doe_gigs = list(doe["portal_gigs"])
    check("range: per-portal offset/limit", len(doe_gigs) == 1 and doe_gigs[0]["Gigs::venue"] == "Stubb's", repr(doe_gigs))

    found = fms.find([{"name": "John"}, {"name": "Joe"}, {"name": "John Doe", "omit": "true"}],
                     sort=[{"fieldName": "name", "sortOrder": "ascend"}])
    names = [r.name for r in found]
    check("find with omit", names == ["Joe Example", "John Smith"], repr(names))
    expect_fm_error("find with no match is 401", 401, lambda: list(fms.find([{"name": "==Nobody Here"}])))

    fms.edit_record(band_id, {"city": "Dallas"})
    fms.edit_record(band_id, {"city": "Houston"})
    current = fms.get_record(band_id)
    check("edit: modId went up twice", current.modification_id == 2, repr(current.modification_id))
    expect_fm_error("edit with a stale modId is 306", 306, lambda: fms.edit_record(band_id, {"city": "Nope"}, mod_id=1))
    check("edit: stale edit changed nothing", fms.get_record(band_id).city == "Houston", "")
    fms.edit_record(band_id, {"members": 10**16})
    big = fms.get_record(band_id).members
    check("a large integer comes back as a JSON integer", type(big) is int and big == 10**16, repr(big))
    expect_fm_error("deleteRelated of another record's portal row is 101", 101,
                    lambda: fms.edit_record(band_id, {"deleteRelated": "gigs.1"}))
    check("the other record's portal row is still there", len(list(fms.get_record(1)["portal_gigs"])) == 3, "")

    error, result = fms.perform_script("Echo", param="hello fmrest")
    check("script result is the parameter", error == 0 and result == "hello fmrest", repr((error, result)))
    error, _ = fms.perform_script("Fail", param="x")
    check("script error surfaced", error == 3, repr(error))

    fms.set_globals({"Bands::g_motto": "loud"})
    check("globals set", fms.last_error == 0, repr(fms.last_error))

    ok = fms.upload_container(band_id, "photo", io.BytesIO(PNG))
    check("container upload", ok, repr(fms.last_error))
    url = fms.get_record(band_id).photo
    check("container field is a streaming URL", isinstance(url, str) and "/Streaming_SSL/MainDB/" in url, repr(url))
    _, content_type, _, response = fms.fetch_file(url)
    check("fetch_file returns the same bytes", response.content == PNG, f"{len(response.content)} bytes, {content_type}")

    fields = fms.get_layout()
    names = {f["name"] for f in fields}
    check("layout metadata lists the fields", {"name", "members", "photo"} <= names, repr(sorted(names)))
    value_lists = fms.get_value_list_values("Cities")
    check("layout metadata value list", [v for v, _ in value_lists] == ["Austin", "Dallas", "Houston"], repr(value_lists))

    fms.delete_record(band_id)
    expect_fm_error("deleted record is gone (101)", 101, lambda: fms.get_record(band_id))

    check("logout", fms.logout(), repr(fms.last_error))
    fms._token = token  # replay the old token, as a stale client would
    expect_fm_error("call after logout is 952", 952, lambda: fms.get_record(1))


def control(base, method, path, body=None):
    """Calls the emulator's control API; returns (status, parsed JSON answer)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def control_scenario(fms, base):
    """Faults played through the control API, as a Python test suite would use it."""
    check("control: reset", control(base, "POST", "/v1/reset")[0] == 200)
    _, counters = control(base, "GET", "/v1/counters")
    check("control: counters start at 0", counters.get("loginCount") == 0, repr(counters))

    fms.login()
    status, answer = control(base, "DELETE", "/v1/sessions")
    check("control: expire every token", status == 200 and answer.get("expired") == 1, repr(answer))
    record = fms.get_record(1)
    check("auto_relogin after an expired token reads the record", record.name != "", repr(record))
    _, counters = control(base, "GET", "/v1/counters")
    check("auto_relogin logged in once more", counters.get("loginCount") == 2, repr(counters))

    # Injected twice, the session expires twice: python-fmrest's re-login does not spend the second
    # fault, its one replay does, and python-fmrest reports that 952 rather than looping.
    status, _ = control(base, "POST", "/v1/faults", {"fault": "expireSession", "count": 2, "matching": "/records"})
    check("control: inject expireSession twice", status == 200)
    expect_fm_error("expireSession x2: the replay after one re-login gets 952", 952, lambda: fms.get_record(1))
    check("the next call re-logs in and reads", fms.get_record(2).record_id == 2)
    _, counters = control(base, "GET", "/v1/counters")
    check("expireSession x2 cost two re-logins in all", counters.get("loginCount") == 4, repr(counters))
    _, log = control(base, "GET", "/v1/log")
    sessions = {r["session"] for r in log["requests"] if r["session"] is not None}
    check("the log names 4 distinct sessions", len(sessions) == 4, repr(sessions))
    check("the log shows no token", fms._token not in json.dumps(log), "token leaked into the log")

    page = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
    control(base, "POST", "/v1/faults", {"fault": "status", "status": 502, "body": page, "contentType": "text/html"})
    try:
        fms.get_record(1)
        check("an HTML 502 is a BadGatewayError", False, "no error")
    except BadGatewayError:
        check("an HTML 502 is a BadGatewayError", True)

    control(base, "POST", "/v1/faults", {"fault": "fileMakerError", "code": "812", "matching": "/records/1"})
    expect_fm_error("an injected 812 is reported", 812, lambda: fms.get_record(1))

    # A session killed mid-request (112) and FileMaker Cloud's HTML 401 are not 952: python-fmrest's
    # auto_relogin does not recover them (SwiftFM does), it reports them.
    control(base, "POST", "/v1/faults", {"fault": "killSession", "matching": "/records/1"})
    expect_fm_error("a killed session is reported as 112", 112, lambda: fms.get_record(1))
    control(base, "POST", "/v1/faults", {"fault": "html401", "matching": "/records/1"})
    try:
        fms._token = None
        fms.login()
        fms.get_record(1)
        check("an HTML 401 is not JSON to python-fmrest", False, "no error")
    except BadJSON:
        check("an HTML 401 is not JSON to python-fmrest", True)
    fms._token = None
    fms.login()

    control(base, "POST", "/v1/faults", {"fault": "gzip"})
    check("a gzip-encoded answer decodes", fms.get_record(1).record_id == 1)

    _, rows = control(base, "GET", "/v1/tables/Bands/records")
    check("control: records of a table", len(rows.get("records", [])) == 4, repr(rows))
    status, answer = control(base, "POST", "/v1/faults", {"fault": "meteor"})
    check("control: a bad request is a 400 with a message", status == 400 and "meteor" in answer.get("error", ""), repr(answer))
    fms.logout()


def main():
    if len(sys.argv) != 2:
        print("usage: fmrest_conformance.py PATH/TO/fm-emulator", file=sys.stderr)
        return 2
    emulator = subprocess.Popen(
        [sys.argv[1], "--host", "127.0.0.1", "--port", "3000", "--control-port", "0",
         "--schema", os.path.join(HERE, "schema.json")],
        stdout=subprocess.PIPE, text=True)
    try:
        line = emulator.stdout.readline().strip()
        if not line.startswith("listening on http://127.0.0.1:3000"):
            print(f"fm-emulator did not start: {line!r}", file=sys.stderr)
            return 1
        control_line = emulator.stdout.readline().strip()
        if not control_line.startswith("control on http://127.0.0.1:"):
            print(f"fm-emulator printed no control line: {control_line!r}", file=sys.stderr)
            return 1
        control_base = control_line[len("control on "):]
        warnings.simplefilter("ignore")
        fms = fmrest.Server(URL, user="py", password="secret", database="PyCheck", layout="Bands",
                            api_version="vLatest", verify_ssl=False, timeout=20)
        try:
            scenario(fms)
        except Exception as error:  # noqa: BLE001 - report, never hide
            check("scenario ran to the end", False, f"{type(error).__name__}: {error}")
        relogging = fmrest.Server(URL, user="py", password="secret", database="PyCheck", layout="Bands",
                                  api_version="vLatest", verify_ssl=False, timeout=20, auto_relogin=True)
        try:
            control_scenario(relogging, control_base)
        except Exception as error:  # noqa: BLE001 - report, never hide
            check("control scenario ran to the end", False, f"{type(error).__name__}: {error}")
    finally:
        emulator.terminate()
        try:
            code = emulator.wait(timeout=10)
        except subprocess.TimeoutExpired:
            emulator.kill()
            code = "killed"
    check("fm-emulator exits 0 on SIGTERM", code == 0, repr(code))
    passed = sum(1 for _, ok, _ in results if ok)
    failed = len(results) - passed
    print(f"python-fmrest {fmrest.__version__} against fm-emulator")
    print(f"fmrest: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
