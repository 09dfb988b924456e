#!/usr/bin/env python3
"""Independent check of the emulator's Claris ID (Amazon Cognito) side: pycognito and python-fmrest.

Usage: clarisid_check.py PATH/TO/fm-emulator
Starts `fm-emulator --claris-id --port 3000 --control-port 0` (python-fmrest only accepts plain http on
port 3000) and points boto3 at it (AWS_ENDPOINT_URL_COGNITO_IDENTITY_PROVIDER). pycognito signs in with
SRP (the emulator verifies the claim; pycognito verifies the RS256 tokens against the emulator's JWKS),
is refused with a wrong password, refreshes, answers an MFA code the control API set, is refused a
revoked refresh token; python-fmrest 1.8.0's CloudServer logs in through Cognito and reads; an ID token
past its `exp` gets FileMaker Cloud's 401. Fails (never skips) when pycognito or python-fmrest is missing.
"""
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

try:
    import pycognito
    from pycognito.exceptions import SoftwareTokenMFAChallengeException
except ImportError as missing:
    print(f"FAIL pycognito is required for the Claris ID check ({missing}); .ci/run installs it with pip", file=sys.stderr)
    sys.exit(1)
try:
    import fmrest
    from fmrest.cloudserver import CloudServer
except ImportError as missing:
    print(f"FAIL python-fmrest is required for the Claris ID check ({missing})", file=sys.stderr)
    sys.exit(1)

URL = "http://127.0.0.1:3000"
POOL = "us-west-2_NqkuZcXQY"
CLIENT = "4l9rvl4mv5es1eep1qe97cautn"
results = []


def check(name, condition, detail=""):
    results.append((name, bool(condition), detail))
    if not condition:
        print(f"FAIL {name}: {detail}", file=sys.stderr)


def error_code(error):
    response = getattr(error, "response", None) or {}
    return (response.get("Error") or {}).get("Code", type(error).__name__)


def control(base, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read() or b"{}")


def fmid_login(token):
    request = urllib.request.Request(URL + "/fmi/data/vLatest/databases/Music/sessions", data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json", "Authorization": "FMID " + token})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.headers.get("Content-Type", ""), json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read()


def cognito(username="admin"):
    return pycognito.Cognito(user_pool_id=POOL, client_id=CLIENT, username=username)


def run(control_base):
    # pycognito verifies the tokens' RS256 signatures with the pool's JWKS; the emulator serves it.
    with urllib.request.urlopen(f"{URL}/{POOL}/.well-known/jwks.json", timeout=60) as response:
        os.environ["COGNITO_JWKS"] = response.read().decode()

    user = cognito()
    user.authenticate(password="admin")
    check("pycognito signs in with SRP", bool(user.id_token) and bool(user.refresh_token), repr(user.id_token)[:40])
    status, _, body = fmid_login(user.id_token)
    check("FMID login with the ID token", status == 200 and len(body["response"]["token"]) == 52, f"{status} {body}")

    try:
        cognito().authenticate(password="wrong")
        check("wrong password refused", False, "signed in")
    except Exception as error:  # noqa: BLE001
        check("wrong password refused with NotAuthorizedException", error_code(error) == "NotAuthorizedException", repr(error))
    try:
        cognito("nobody").authenticate(password="x")
        check("unknown user refused", False, "signed in")
    except Exception as error:  # noqa: BLE001
        check("unknown user refused with UserNotFoundException", error_code(error) == "UserNotFoundException", repr(error))

    old = user.id_token
    user.renew_access_token()
    check("REFRESH_TOKEN_AUTH gives a new ID token", user.id_token and user.id_token != old, "same token")

    fms = CloudServer(URL, user="admin", password="admin", database="Music", layout="Artists", verify_ssl=False)
    fms.login()
    records = list(fms.get_records(limit=3))
    check("python-fmrest CloudServer logs in through Cognito and reads", len(records) == 3, repr(records))
    fms.logout()

    control(control_base, "POST", "/v1/claris-id/mfa", {"username": "guest", "code": "246810"})
    mfa = cognito("guest")
    try:
        mfa.authenticate(password="guest")
        check("MFA challenge raised", False, "signed in without a code")
    except SoftwareTokenMFAChallengeException:
        mfa.respond_to_software_token_mfa_challenge("246810")
        check("SOFTWARE_TOKEN_MFA answered with the control API's code", bool(mfa.id_token), "no token")

    control(control_base, "POST", "/v1/claris-id/revoke-refresh-tokens", {})
    try:
        user.renew_access_token()
        check("revoked refresh token refused", False, "refreshed")
    except Exception as error:  # noqa: BLE001
        check("revoked refresh token refused with NotAuthorizedException", error_code(error) == "NotAuthorizedException", repr(error))

    counters = control(control_base, "GET", "/v1/claris-id")
    check("control API counts", counters["signIns"] == 3 and counters["refreshes"] == 1 and counters["failedSignIns"] == 2, repr(counters))

    # Two hours later (the emulator's clock), the ID token is past its exp: FileMaker Cloud's 401.
    control(control_base, "POST", "/v1/clock", {"advance": 7200})
    status, content_type, _ = fmid_login(user.id_token)
    check("expired ID token: 401 text/html at login", status == 401 and content_type.startswith("text/html"), f"{status} {content_type}")


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    os.environ["AWS_ENDPOINT_URL_COGNITO_IDENTITY_PROVIDER"] = URL
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    process = subprocess.Popen([sys.argv[1], "--claris-id", "--port", "3000", "--control-port", "0"],
                               stdout=subprocess.PIPE, text=True)
    try:
        first = process.stdout.readline().strip()
        second = process.stdout.readline().strip()
        if not first.startswith("listening on") or not second.startswith("control on"):
            print(f"FAIL fm-emulator did not start: {first!r} {second!r}", file=sys.stderr)
            return 1
        run(second.split(" ", 2)[2])
    except Exception as error:  # noqa: BLE001
        check("scenario ran to the end", False, f"{type(error).__name__}: {error}")
    finally:
        process.terminate()
        process.wait(timeout=60)
    failed = [r for r in results if not r[1]]
    print(f"clarisid_check (pycognito {getattr(pycognito, '__version__', '?')}, python-fmrest {fmrest.__version__}): "
          f"{len(results) - len(failed)}/{len(results)} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
