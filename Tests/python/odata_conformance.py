#!/usr/bin/env python3
"""An independent client checks the emulator's OData: fms-odata-py 0.2.0, through its public API only.

Usage: odata_conformance.py PATH/TO/fm-emulator
Starts `fm-emulator --port 0` (the built-in demo solution, database Music, admin/admin), runs metadata,
query, CRUD, batch, webhook, schema and script calls, cross-checks one write through the Data API (urllib), prints a one-line
summary and exits non-zero on any mismatch.
"""
import base64
import http.server
import queue
import threading
import json
import os
import re
import subprocess
import sys
import urllib.request

from fms_odata import FMSODataClient
from fms_odata.metadata import MetadataOptions
from fms_odata_spec import basic_auth

results = []


def check(name, condition, detail=""):
    results.append((name, bool(condition), detail))
    if not condition:
        print(f"FAIL {name}: {detail}", file=sys.stderr)


def expect_error(name, fn, status=None, code=None):
    try:
        fn()
    except Exception as error:  # noqa: BLE001 - the client's own error types carry status and code
        got_status = getattr(error, "status", None)
        got_code = getattr(error, "code", None)
        ok = (status is None or got_status == status) and (code is None or str(got_code) == code)
        check(name, ok, f"expected {status}/{code}, got {type(error).__name__} {got_status}/{got_code}: {error}")
        return
    check(name, False, "expected an error, got success")


def data_api(base, method, path, body=None, token=None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    else:
        headers["Authorization"] = "Basic " + base64.b64encode(b"admin:admin").decode()
    request = urllib.request.Request(base + "/fmi/data/vLatest/databases/Music" + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def scenario(host):
    with FMSODataClient(host=host, database="Music", token=basic_auth("admin", "admin"), timeout_ms=30_000) as db:
        check("version from the ServerVersion annotation", db.version() == "22", repr(db.version()))
        meta = db.metadata()
        names = sorted(s.name for s in meta.entity_sets)
        check("metadata: entity sets", names == ["Albums", "Artists"], repr(names))
        artists = next((t for t in meta.entity_types if t.name == "Artists_"), None)
        props = {p.name: p.type for p in artists.properties} if artists else {}
        check("metadata: typed properties", props.get("born") == "Edm.Date" and props.get("rating") == "Edm.Decimal"
              and props.get("lastSeen") == "Edm.DateTimeOffset", repr(props))

        rows = db.from_("Artists").select("name", "city").filter(lambda f: f.eq("city", "Dallas")).orderby("name").count().get()
        check("query: filter, select, orderby, count", [r["name"] for r in rows.value] == ["Kate Bush", "Pinkish Black"]
              and rows.count == 2, repr(rows))
        check("query: only the selected fields", all(set(k for k in r if not k.startswith("@")) == {"name", "city"} for r in rows.value),
              repr(rows.value))
        page = db.from_("Artists").orderby("rating", "desc").top(2).skip(1).get()
        check("query: top and skip", len(page.value) == 2, repr(page))
        quoted = db.from_("Artists").filter(lambda f: f.eq("name", "O'Brien")).get()
        check("query: a quote in a literal stays a literal", quoted.value == [], repr(quoted))
        albums = db.from_("Albums").filter("year ge 1978 and contains(title,'o')").get()
        check("query: raw filter with a function", sorted(a["title"] for a in albums.value)
              == ["Concept Unification", "Hounds of Love", "Music for Airports", "Razed to the Ground"], repr(albums.value))

        created = db.from_("Artists").create({"name": "Ada", "city": "London", "born": "1815-12-10", "rating": 5})
        check("create: 201 with the row", isinstance(created, dict) and created.get("name") == "Ada"
              and created.get("born") == "1815-12-10", repr(created))
        rowid = int(re.search(r"\((\d+)\)$", created.get("@odata.id", "")).group(1)) if created else 0
        check("create: the serial auto-enter", created.get("id") == 6, repr(created))
        one = db.from_("Artists").by_key(rowid).get()
        check("by key: get", one.get("city") == "London", repr(one))
        db.from_("Artists").by_key(rowid).patch({"city": "Paris"})
        check("by key: patch (204)", db.from_("Artists").by_key(rowid).get().get("city") == "Paris")
        check("by key: field value", db.from_("Artists").by_key(rowid).field_value("city") == "Paris")

        token = data_api(host, "POST", "/sessions", {})["response"]["token"]
        record = data_api(host, "GET", f"/layouts/Artists/records/{rowid}", token=token)["response"]["data"][0]["fieldData"]
        check("the Data API reads the OData write", record["city"] == "Paris" and record["born"] == "12/10/1815", repr(record))
        data_api(host, "PATCH", f"/layouts/Artists/records/{rowid}", {"fieldData": {"city": "Rome"}}, token=token)
        check("OData reads the Data API write", db.from_("Artists").by_key(rowid).get().get("city") == "Rome")

        db.from_("Artists").by_key(rowid).delete()
        expect_error("by key: deleted record is 404", lambda: db.from_("Artists").by_key(rowid).get(), status=404, code="-1023")
        expect_error("unknown field is 8309", lambda: db.from_("Artists").select("nope").get(), status=400, code="8309")
        expect_error("$search is refused", lambda: db.from_("Artists").search("Eno").get(), status=400)
        expect_error("validation: not empty", lambda: db.from_("Artists").create({"city": "Nowhere"}), status=400, code="509")

        batch = db.batch()
        batch.changeset(lambda cs: (cs.create("Artists", {"name": "Batch One"}), cs.patch("Artists", 1, {"city": "Dallas"})))
        batch.add("Artists", {"$filter": "name eq 'Batch One'", "$select": "name"})
        sent = batch.send()
        check("batch: change set and read", [r.status for r in sent.responses] == [201, 204, 200] and sent.ok, repr(sent.responses))
        read = sent.responses[-1].body if sent.responses else None
        check("batch: the read sees the change set", isinstance(read, dict) and [r.get("name") for r in read.get("value", [])] == ["Batch One"],
              repr(read))
        failing = db.batch()
        failing.changeset(lambda cs: (cs.create("Artists", {"name": "Rolled Back"}), cs.create("Artists", {"city": "no name"})))
        result = failing.send()
        check("batch: a failing change set answers one error", [r.status for r in result.responses] == [400] and not result.ok,
              repr(result.responses))
        check("batch: the failing change set is rolled back",
              db.from_("Artists").filter("name eq 'Rolled Back'").get().value == [])

        # Webhooks: a receiver on loopback gets the change made through the Data API.
        arrived = queue.Queue()

        class Receiver(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                arrived.put((self.headers.get("X-Secret"), body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        receiver = http.server.HTTPServer(("127.0.0.1", 0), Receiver)
        threading.Thread(target=receiver.serve_forever, daemon=True).start()
        try:
            hook = db.create_webhook({"webhook": f"http://127.0.0.1:{receiver.server_port}/hook", "tableName": "Albums",
                                      "select": "title", "filter": "year gt 2000", "endpointHeaders": {"X-Secret": "s"}})
            check("webhook: created", hook.get("id") == "1", repr(hook))
            listed = db.get_all_webhooks()
            check("webhook: listed", [w.get("tableName") for w in listed.get("webhooks", [])] == ["Albums"], repr(listed))
            data_api(host, "POST", "/layouts/Albums/records", {"fieldData": {"title": "Old", "year": 1999}}, token=token)
            data_api(host, "POST", "/layouts/Albums/records", {"fieldData": {"title": "New", "year": 2024}}, token=token)
            secret, body = arrived.get(timeout=60)
            payload = json.loads(body)
            check("webhook: the matching change is delivered with its headers", secret == "s"
                  and [r.get("title") for r in payload.get("value", [])] == ["New"], repr(payload))
            db.remove_webhook(hook.get("id"))
            check("webhook: removed", db.get_all_webhooks().get("webhooks") == [])
        finally:
            receiver.shutdown()

        # Schema changes: a new table is usable at once, through both APIs' store.
        made = db.create_table({"tableName": "Venues", "fields": [{"name": "code", "type": "varchar(10)", "primary": True},
                                                                  {"name": "capacity", "type": "int"}]})
        check("schema: create table", isinstance(made, dict) and made.get("tableName") == "Venues", repr(made))
        db.add_fields({"tableName": "Venues", "fields": [{"name": "opened", "type": "date"}]})
        db.from_("Venues").create({"code": "HALL", "capacity": 300, "opened": "1999-05-01"})
        venue = db.from_("Venues").by_key("HALL").get()
        check("schema: the new table and field hold records", venue.get("capacity") == 300 and venue.get("opened") == "1999-05-01",
              repr(venue))
        db.metadata(MetadataOptions(refresh=True))
        db.create_index("Venues", "capacity")
        db.delete_index("Venues", "capacity")
        db.delete_field("Venues", "opened", confirm=True)
        db.delete_table("Venues", confirm=True)
        expect_error("schema: a dropped table is gone", lambda: db.from_("Venues").get(), status=404, code="-1020")

        hello = db.script("Hello")
        check("script: result", hello.result_parameter == "Hello from the emulator", repr(hello))
        echo = db.script("Echo", parameter="O'Brien")
        check("script: parameter", echo.result_parameter == "O'Brien", repr(echo))
        expect_error("script: error code raises", lambda: db.script("Fail"))

    with FMSODataClient(host=host, database="Music", token=basic_auth("admin", "wrong"), timeout_ms=30_000) as bad:
        expect_error("wrong password is 401", lambda: bad.from_("Artists").get(), status=401)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    emulator = subprocess.Popen([sys.argv[1], "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        host = None
        for line in emulator.stdout:
            m = re.search(r"listening on (http://\S+)", line)
            if m:
                host = m.group(1).rstrip("/")
                break
        if host is None:
            print("fm-emulator did not start", file=sys.stderr)
            return 1
        scenario(host)
    finally:
        emulator.terminate()
        emulator.wait(timeout=30)
    failed = [r for r in results if not r[1]]
    print(f"fms-odata-py 0.2.0 against fm-emulator OData: {len(results) - len(failed)}/{len(results)} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
