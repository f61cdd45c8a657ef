"""Attacks over the network: TCP, UDP, DNS, the internet, and Unix sockets of host services.

Each server runs in the test process (the host side). A control connection from the host shows
the server works, so a refused connection inside is the sandbox's doing.
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest


def _host_addresses() -> list[str]:
    """127.0.0.1 and this machine's other IPv4 addresses."""
    found = {"127.0.0.1"}
    try:
        found.update(a for a in socket.gethostbyname_ex(socket.gethostname())[2])
    except OSError:
        pass
    try:
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=5, check=False).stdout
        found.update(a for a in out.split() if a.count(".") == 3)
    except (OSError, subprocess.TimeoutExpired):
        pass
    return sorted(found)


class _Server:
    """A stream server (TCP or Unix) that counts the connections it accepts."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.accepted = 0
        sock.listen(16)
        sock.settimeout(0.2)
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.accepted += 1
            try:
                conn.sendall(b"HOST-SERVICE-BANNER\n")
            finally:
                conn.close()

    def close(self) -> None:
        self._stop = True
        self._thread.join(2)
        self.sock.close()


CONNECT = """
import socket, sys
family = socket.AF_UNIX if sys.argv[1] == "unix" else socket.AF_INET
for target in sys.argv[2:]:
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect(target.replace("@", "\\0", 1) if family == socket.AF_UNIX else (target.rsplit(":", 1)[0], int(target.rsplit(":", 1)[1])))
        print("CONNECTED", target, s.recv(64))
    except OSError as e:
        print("refused", target, "-", e.strerror or e)
    finally:
        s.close()
"""


def _client(run, kind: str, targets: list[str]):  # type: ignore[no-untyped-def]
    """Connect from inside the sandbox (a model's shell command)."""
    script = run.ws / ".connect.py"
    script.write_text(CONNECT)
    return run.sh(f"python3 .connect.py {kind} " + " ".join(f"'{t}'" for t in targets))


def _host_client(kind: str, targets: list[str]) -> str:
    return subprocess.run([sys.executable, "-c", CONNECT, kind, *targets], capture_output=True, text=True, timeout=30, check=False).stdout


@pytest.mark.attack(
    "N01",
    "connect over TCP to a service on the host (a server in the test process on 0.0.0.0: tried at 127.0.0.1 and "
    "every host address)",
    "own network namespace with only its own loopback: refused / unreachable; the server accepts nothing",
)
def test_tcp_to_host_services_is_refused(run, observe):
    server = _Server(socket.create_server(("0.0.0.0", 0)))
    try:
        port = server.sock.getsockname()[1]
        targets = [f"{a}:{port}" for a in _host_addresses()]
        control = _host_client("tcp", targets[:1])
        accepted_by_control = server.accepted
        result = _client(run, "tcp", targets)
    finally:
        server.close()
    observe(f"{'; '.join(run.out(result).splitlines())}; server accepted {server.accepted - accepted_by_control} from inside "
            f"(control from the host: {'connected' if 'CONNECTED' in control else 'FAILED'})")
    assert "CONNECTED" in control, "control: the host reaches its own server"
    assert "CONNECTED" not in result.output
    assert server.accepted == accepted_by_control


@pytest.mark.attack(
    "N02",
    "send UDP datagrams to a service on the host (a UDP server in the test process, at 127.0.0.1 and every host address)",
    "no route out of the sandbox's network namespace: the server receives nothing",
)
def test_udp_to_host_services_is_not_delivered(run, observe):
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("0.0.0.0", 0))
    port = server.getsockname()[1]
    try:
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        probe.sendto(b"control", ("127.0.0.1", port))
        probe.close()
        assert select.select([server], [], [], 2)[0], "control: the host reaches its own UDP server"
        server.recvfrom(64)
        sends = "; ".join(
            f"python3 -c \"import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
            f"print('sent', s.sendto(b'from-sandbox', ('{a}', {port})))\""
            for a in _host_addresses()
        )
        result = run.sh(sends)
        received = []
        while select.select([server], [], [], 0.5)[0]:
            received.append(server.recvfrom(64)[0])
    finally:
        server.close()
    observe(f"inside: {run.out(result).count('sent')} sent (to its own loopback), "
            f"{run.err(result).count('unreachable')} unreachable; host server received {len(received)}")
    assert not received


@pytest.mark.attack(
    "N03",
    "resolve names (getaddrinfo, getent hosts, a raw DNS query to the host's resolver) and look for a route out",
    "resolution fails; the only interface is lo and the routing table is empty",
)
def test_dns_and_routes_fail(run, observe):
    nameservers = []
    try:
        nameservers = [line.split()[1] for line in Path("/etc/resolv.conf").read_text().splitlines() if line.startswith("nameserver")]
    except (OSError, IndexError):
        pass
    query = "; ".join(
        f"python3 -c \"import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2); "
        f"s.sendto(bytes.fromhex('123401000001000000000000076578616d706c6503636f6d0000010001'), ('{ns}', 53)); print('ANSWER', s.recv(512))\""
        for ns in nameservers if ns.count(".") == 3
    ) or "true"
    result = run.sh(
        "python3 -c \"import socket; print('RESOLVED', socket.getaddrinfo('example.com', 443))\"; "
        "getent hosts example.com && echo RESOLVED; " + query + "; "
        "echo IFACES $(tail -n +3 /proc/net/dev | cut -d: -f1); echo ROUTES $(tail -n +2 /proc/net/route | wc -l)"
    )
    out = run.out(result)
    observe(f"{[line for line in out.splitlines() if line.startswith(('IFACES', 'ROUTES'))]}; "
            f"resolver(s) {nameservers}: {'answered' if 'ANSWER' in out else 'unreachable'}; "
            f"getaddrinfo: {'resolved' if 'RESOLVED' in out else 'failed'}")
    assert "RESOLVED" not in out and "ANSWER" not in out
    assert "IFACES lo" in out and "ROUTES 0" in out


@pytest.mark.attack(
    "N04",
    "reach the internet directly by IP (1.1.1.1:443, 8.8.8.8:53 TCP) and with curl",
    "network unreachable",
)
def test_internet_is_unreachable(run, observe):
    result = _client(run, "tcp", ["1.1.1.1:443", "8.8.8.8:53"])
    curl = run.sh("curl -sS --max-time 5 http://1.1.1.1/ || echo CURL-FAILED")
    observe(f"{'; '.join(run.out(result).splitlines())}; curl: {(run.err(curl).strip() or run.out(curl).strip()).split(' after ')[0]}")
    assert "CONNECTED" not in result.output
    assert run.out(result).count("unreachable") == 2
    assert "CURL-FAILED" in curl.output


@pytest.mark.attack(
    "N05",
    "connect to a host service's abstract Unix socket (no file: '@name', as D-Bus, X11 and some daemons use)",
    "abstract sockets belong to the network namespace: connection refused",
)
def test_abstract_unix_socket_is_unreachable(run, observe):
    name = f"@horizon-security-{uuid.uuid4().hex}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind("\0" + name[1:])
    server = _Server(sock)
    try:
        control = _host_client("unix", [name])
        result = _client(run, "unix", [name])
    finally:
        server.close()
    observe(f"inside: {run.out(result).strip()}; control from the host: {'connected' if 'CONNECTED' in control else 'FAILED'}")
    assert "CONNECTED" in control
    assert "CONNECTED" not in result.output and "refused" in result.output


@pytest.mark.attack(
    "N06",
    "connect to host services' Unix socket files where they live: under /run and /tmp (here a server in the test "
    "process's /tmp) and under the user's home",
    "/run, /tmp and the home are empty tmpfs inside: the socket files do not exist",
)
def test_unix_socket_files_in_hidden_folders_are_unreachable(make_run, monkeypatch, observe, tmp_path):
    paths: dict[str, Path] = {}

    def fake_home(case: Path) -> None:
        paths["home"] = case / "home" / "bob"
        paths["home"].mkdir(parents=True)
        monkeypatch.setenv("HOME", str(paths["home"]))

    run = make_run(before_open=fake_home)
    sockets = [tmp_path / "service.sock", paths["home"] / "agent.sock"]
    servers = []
    for path in sockets:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(str(path))
        servers.append(_Server(s))
    try:
        control = _host_client("unix", [str(p) for p in sockets])
        result = _client(run, "unix", [str(p) for p in sockets])
    finally:
        for server in servers:
            server.close()
    observe(f"inside: {'; '.join(line.split(' - ')[-1] for line in run.out(result).splitlines())}; "
            f"control from the host: {control.count('CONNECTED')}/2 connected")
    assert control.count("CONNECTED") == 2
    assert "CONNECTED" not in result.output
    assert run.out(result).count("No such file") == 2


@pytest.mark.attack(
    "L01",
    "LIMITATION: connect to a Unix socket file in a host folder that is not hidden (e.g. /var/lib/<service>/x.sock, "
    "or any path outside /run, /tmp, /dev/shm and the home folders)",
    "reachable (documented limitation: a read-only mount does not stop connect(); services normally keep their "
    "sockets under /run, which is hidden)",
)
def test_limitation_unix_socket_in_visible_folder(run, observe):
    path = run.visible / "s.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    server = _Server(sock)
    try:
        result = _client(run, "unix", [str(path)])
    finally:
        server.close()
        os.unlink(path)
    observe(f"inside: {run.out(result).strip()[:80]}")
    assert "CONNECTED" in result.output
