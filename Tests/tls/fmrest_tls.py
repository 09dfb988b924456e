#!/usr/bin/env python3
"""python-fmrest over HTTPS through the TLS front of Tests/tls/run.sh.

Usage: fmrest_tls.py https://127.0.0.1:PORT CA.crt
The CA is trusted through python-fmrest's verify_ssl (requests' `verify`, a CA bundle path); the
demo solution (database Music, layout Artists) is served by fm-emulator behind nginx.
"""
import io
import sys

import fmrest

base, ca = sys.argv[1], sys.argv[2]
failures = []


def check(name, condition, detail=""):
    if not condition:
        failures.append(name)
        print(f"FAIL {name}: {detail}", file=sys.stderr)


fms = fmrest.Server(base, user="admin", password="admin", database="Music", layout="Artists", verify_ssl=ca,
                    api_version="vLatest")
token = fms.login()
check("login over HTTPS", bool(token), repr(token))
record_id = fms.create_record({"name": "TLS via python-fmrest"})
check("create", isinstance(record_id, int) and record_id > 0, repr(record_id))
payload = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
check("upload a container", fms.upload_container(record_id, "headshot", io.BytesIO(payload)) is True)
record = fms.get_record(record_id)
url = record.headshot
check("container URL carries https and the client's host", url.startswith(base + "/Streaming_SSL/"), url)
name, content_type, length, response = fms.fetch_file(url)
check("download: bytes round-trip", response.content == payload, f"{len(response.content)} bytes")
hops = [r.headers.get("Location", "") for r in response.history]
check("download: the 302 stays on https", hops and all(h.startswith(base + "/") for h in hops), repr(hops))
found = fms.find([{"name": "TLS via*"}])
check("find", [r.record_id for r in found] == [record_id], repr([r.record_id for r in found]))
check("logout", fms.logout() is True)

# Without the CA the handshake must fail (requests' default bundle does not know it).
try:
    fmrest.Server(base, user="admin", password="admin", database="Music", layout="Artists", verify_ssl=True,
                  api_version="vLatest").login()
    check("an unknown CA is refused", False, "login succeeded without the CA")
except Exception as error:  # noqa: BLE001 - requests' SSLError, wrapped or not
    check("an unknown CA is refused", "SSL" in repr(error) or "certificate" in str(error).lower(), repr(error))

print(f"python-fmrest over HTTPS: {'ok' if not failures else 'FAILED: ' + ', '.join(failures)}")
sys.exit(1 if failures else 0)
