"""scripts/lab.py when the port it chose is taken before JupyterLab binds it (another
program, a kernel's connection, a test's server): it starts again on another port, and
prints the URL of the server that answers. A real JupyterLab server is started."""

from __future__ import annotations

import socket
import urllib.request

from tests.scripts.helpers import load_script

lab = load_script("lab")


def test_a_port_taken_before_the_server_binds_it_gives_way_to_another(tmp_path):
    taken = socket.socket()
    taken.bind((lab.HOST, 0))
    taken.listen()
    port = taken.getsockname()[1]
    running = []
    try:
        proc, url = lab.start_lab(tmp_path, iter([port, lab.free_port()]), False, None, "a-token", running)
        assert url is not None and url != f"http://{lab.HOST}:{port}"
        assert len(running) == 2 and running[0].poll() is not None and running[1] is proc
        request = urllib.request.Request(f"{url}/api/status", headers={"Authorization": "token a-token"})
        assert b"started" in urllib.request.urlopen(request, timeout=10).read()
    finally:
        for started in running:
            if started.poll() is None:
                started.terminate()
                started.wait()
        taken.close()


def test_a_port_asked_for_is_the_only_one_tried():
    assert list(lab.candidate_ports(8899)) == [8899]
    ports = list(lab.candidate_ports(None))
    assert len(ports) == lab.PORT_TRIES and all(isinstance(p, int) and p > 0 for p in ports)
