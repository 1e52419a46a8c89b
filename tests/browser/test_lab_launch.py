"""`make lab` (scripts/lab.py) serves the course safely: token required, loopback only,
the token never on a command line."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import psutil
import pytest

pytestmark = pytest.mark.browser


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def _get(url: str, token: str | None = None) -> tuple[int, str, bytes]:
    """Status, Location header and body of a GET, without following redirects."""
    headers = {"Authorization": f"token {token}"} if token else {}
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        resp = opener.open(urllib.request.Request(url, headers=headers), timeout=10)
        return resp.status, resp.headers.get("Location", ""), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Location", ""), b""


def test_lab_answers_with_the_printed_token(lab):
    status, _, body = _get(f"{lab.url}/api/contents", lab.token)
    assert status == 200
    assert "00_welcome.ipynb" in {item["name"] for item in json.loads(body)["content"]}
    status, _, body = _get(f"{lab.url}/lab?token={lab.token}")
    assert status == 200 and b"JupyterLab" in body


@pytest.mark.parametrize("path", ["/lab", "/lab/tree/00_welcome.ipynb"])
def test_lab_pages_redirect_to_login_without_token(lab, path):
    status, location, _ = _get(lab.url + path)
    assert status == 302
    assert "/login" in location


@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_api_refuses_missing_or_wrong_token(lab, token):
    for path in ("/api/contents", "/api/kernels"):
        assert _get(lab.url + path, token)[0] == 403, path
    assert _get(f"{lab.url}/api/contents?token=wrong")[0] == 403


def _living_processes(root: psutil.Process) -> list[tuple[str, list]]:
    """Command line and TCP sockets of the server and each child still alive.

    The server starts short-lived children (kernel-spec probes, for one); a child that exits
    between the listing and the questions is skipped, the server itself never is.
    """
    found = [(" ".join(root.cmdline()), root.net_connections(kind="tcp"))]
    for child in root.children(recursive=True):
        try:
            found.append((" ".join(child.cmdline()), child.net_connections(kind="tcp")))
        except psutil.NoSuchProcess:
            continue
    return found


def test_server_listens_on_loopback_only_and_keeps_token_off_argv(lab):
    processes = _living_processes(psutil.Process(lab.proc.pid))
    assert all(lab.token not in cmdline for cmdline, _ in processes)
    port = int(lab.url.rsplit(":", 1)[1])
    listening = {
        c.laddr.ip
        for _, connections in processes
        for c in connections
        if c.status == psutil.CONN_LISTEN and c.laddr.port == port
    }
    assert listening == {"127.0.0.1"}
