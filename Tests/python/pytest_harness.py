#!/usr/bin/env python3
"""The DocC article's pytest fixture, as printed there, drives fm-emulator under pytest-xdist.

Usage: pytest_harness.py PATH/TO/fm-emulator
Takes the `conftest.py` of "The control API from any language" (SwiftFMEmulator.docc), runs it in a
temporary folder with two pytest-xdist workers (each its own emulator; a reset before each test must give
every test the schema's records), then runs a test that ends its pytest with os._exit (no teardown, as
pytest-timeout does) and waits, on the process itself (pidfd, Linux), for that emulator to stop: the
fixture's --stop-on-stdin-close must end it. Exits non-zero on any failure.
"""
import os
import pathlib
import re
import select
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTICLE = ROOT / "Sources/SwiftFMEmulator/SwiftFMEmulator.docc/ControlAPIFromAnyLanguage.md"

TESTS = '''
import base64, json, os, urllib.request
import pytest

def call(url, method="GET", body=None, headers={}):
    request = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(), method=method,
                                     headers={"Content-Type": "application/json", **headers})
    with urllib.request.urlopen(request) as answer:
        return json.load(answer)

@pytest.mark.parametrize("n", range(6))
def test_each_test_starts_from_the_schema_records(fm, n):
    data = fm["url"] + "/fmi/data/vLatest/databases/Music"
    basic = "Basic " + base64.b64encode(b"admin:admin").decode()
    token = call(data + "/sessions", "POST", {}, {"Authorization": basic})["response"]["token"]
    bearer = {"Authorization": "Bearer " + token}
    call(data + "/layouts/Artists/records", "POST", {"fieldData": {"name": f"test {n}"}}, bearer)
    assert call(data + "/layouts/Artists/records", headers=bearer)["response"]["dataInfo"]["foundCount"] == 6

def test_dies_without_teardown(fm):
    if not os.environ.get("HARNESS_DIE"):
        return
    children = child_pids()
    with open(os.environ["HARNESS_DIE"], "w") as out:
        out.write(" ".join(children))
    os._exit(1)

def child_pids():
    pid = os.getpid()
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            found += f.read().split()
    return found
'''


def conftest_from_article():
    blocks = re.findall(r"```python\n(.*?)```", ARTICLE.read_text(encoding="utf-8"), re.S)
    matching = [b for b in blocks if "def fm_emulator" in b]
    if len(matching) != 1:
        sys.exit(f"pytest_harness: expected one conftest block in {ARTICLE}, found {len(matching)}")
    return matching[0]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    emulator = pathlib.Path(sys.argv[1]).resolve()
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        work = pathlib.Path(folder)
        (work / "bin").mkdir()
        (work / "bin" / "fm-emulator").symlink_to(emulator)
        shutil.copy(ROOT / "Sources/SwiftFMEmulator/Resources/demo-schema.json", work / "my-app.json")
        (work / "conftest.py").write_text(conftest_from_article(), encoding="utf-8")
        (work / "test_harness.py").write_text(TESTS, encoding="utf-8")
        environment = dict(os.environ, PATH=f"{work / 'bin'}{os.pathsep}{os.environ['PATH']}")
        environment.pop("HARNESS_DIE", None)
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "error::ResourceWarning"]

        run = subprocess.run(command + ["-n", "2", "test_harness.py"], cwd=work, env=environment,
                             capture_output=True, text=True, timeout=600)
        if run.returncode != 0:
            failures.append("the article's conftest under two xdist workers:\n" + run.stdout[-3000:] + run.stderr[-2000:])

        marker = work / "children.txt"
        environment["HARNESS_DIE"] = str(marker)
        subprocess.run(command + ["test_harness.py::test_dies_without_teardown"], cwd=work, env=environment,
                       capture_output=True, text=True, timeout=600)
        pids = [int(p) for p in marker.read_text().split()] if marker.exists() else []
        if not pids:
            failures.append("the dying test did not name its emulator")
        for pid in pids:
            try:
                descriptor = os.pidfd_open(pid)
            except ProcessLookupError:
                continue  # already gone
            try:
                poller = select.poll()
                poller.register(descriptor, select.POLLIN)
                if not poller.poll(300_000):
                    failures.append(f"emulator {pid} still runs 300 s after its pytest died")
                    os.kill(pid, 9)
            finally:
                os.close(descriptor)

    if failures:
        for failure in failures:
            print("FAIL", failure, file=sys.stderr)
        sys.exit(1)
    print("pytest harness: the article's fixture ran under two xdist workers; a killed pytest left no emulator")


if __name__ == "__main__":
    main()
