"""Who may talk to Horizon's web surfaces (``agent server``, ``agent ui``): one rule for both.

A web page the user opens can send requests to ``127.0.0.1`` (a form, ``fetch`` without reading
the answer) and, by DNS rebinding (its own name re-pointed at 127.0.0.1), even read the answers.
These ASGI middlewares stop both; ``docs/security.md`` ("Network surfaces") says what each
surface accepts.

- ``WebGuard``: a request whose ``Host`` header does not name this machine (``LOCAL_HOSTS``, or a
  name given with ``--allow-host``) is answered 421 Misdirected Request: a rebinding page's
  requests carry its own name. A state-changing request (any method but GET, HEAD, OPTIONS) that
  sends an ``Origin`` other than the server's own (scheme, host and port of its allowed ``Host``)
  is answered 403.
- ``JsonBodies`` (``agent server``): a request that carries a body which is not
  ``application/json`` is answered 415 before anything reads it; an HTML form or a CORS-"simple"
  ``fetch`` cannot send ``application/json``.
- ``BearerAuth`` (``agent server``): every request needs ``Authorization: Bearer TOKEN``
  (``server_token``: made at first start, kept in a 0600 file), else 401 with ``WWW-Authenticate``.
- ``FormTokens`` (``agent ui``): a per-browser secret in a ``SameSite=Strict; HttpOnly`` cookie;
  the pages' forms carry an HMAC of it under the process's key, and a POST needs both to match.

No import beyond the standard library: the middlewares speak ASGI directly.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import hmac
import ipaddress
import json
import os
import re
import secrets
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from core.errors import UserError

__all__ = ["LOCAL_HOSTS", "BearerAuth", "FormTokens", "JsonBodies", "WebGuard", "allowed_hosts", "check_host_name",
           "server_token", "token_path"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The names of this machine every surface serves (as a ``Host`` header's host part).
LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]")
#: Methods that change nothing (no Origin check, no body check).
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Where ``agent server`` keeps its token, under ``$HORIZON_HOME``.
TOKEN_FILE = "server.token"

_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*")


# ------------------------------------------------------------------------------------------------
# host names


def check_host_name(name: str) -> str:
    """``name`` as a ``Host`` header's host part: lower case, an IPv6 address in brackets.

    Args:
        name: a DNS name (``horizon.example.org``) or an address (``192.168.1.5``, ``::1``,
            ``[fd00::5]``), without scheme or port.

    Raises:
        UserError: anything else (a port, a scheme, a wildcard, spaces), saying what to give.
    """
    text = name.strip().lower()
    bare = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        address = None
    if address is not None:
        return f"[{address.compressed}]" if address.version == 6 else address.compressed
    if text != bare or not _NAME.fullmatch(text) or len(text) > 253:
        raise UserError(f"--allow-host {name!r} is not a host name: give a name such as horizon.example.org or an address "
                        "such as 192.168.1.5, without scheme, port or wildcard")
    return text


def allowed_hosts(extra: Iterable[str] = (), bind: str | None = None) -> frozenset[str]:
    """The ``Host`` names a surface serves: ``LOCAL_HOSTS``, ``extra`` (``--allow-host``), and
    ``bind`` when it is one address (``--host 192.168.1.5``; not ``0.0.0.0`` or ``::``).

    Raises:
        UserError: a name of ``extra`` is not a host name (``check_host_name``).
    """
    names = set(LOCAL_HOSTS) | {check_host_name(n) for n in extra}
    if bind and bind.strip() not in ("", "0.0.0.0", "::", "[::]"):
        try:
            names.add(check_host_name(bind))
        except UserError:
            pass  # a bind name that is no host name: uvicorn says so when it binds
    return frozenset(names)


def _host_part(header: str) -> str | None:
    """The host part of a ``Host`` header (``[::1]:8766`` -> ``[::1]``), None when malformed."""
    text = header.strip().lower()
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or (text[end + 1:] and not re.fullmatch(r":\d{1,5}", text[end + 1:])):
            return None
        return text[: end + 1]
    host, _, port = text.partition(":")
    if not host or (port and not port.isdigit()) or (_ and not port):
        return None
    return host


def _local_peer(scope: Scope) -> bool:
    """Whether the request's peer (``scope["client"]``) is this machine: a loopback address, or no IP
    address at all (a Unix socket; Starlette's ``TestClient``, whose peer is ``"testclient"``)."""
    client = scope.get("client")
    if not client:
        return True
    try:
        address = ipaddress.ip_address(str(client[0]).strip("[]").split("%", 1)[0])
    except ValueError:
        return True  # not an IP peer: nothing reached it over the network
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def _origin_key(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port with the scheme's default) of an origin or base URL; None when malformed."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.scheme, parts.hostname.lower(), port or (443 if parts.scheme == "https" else 80)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


def _printable(text: str, limit: int = 80) -> str:
    """Untrusted header text for a one-line answer: escaped, cut."""
    shown = ascii(text[:limit])
    return shown + ("..." if len(text) > limit else "")


async def _answer(send: Send, status: int, text: str, headers: Iterable[tuple[bytes, bytes]] = (), *,
                  media: bytes = b"text/plain; charset=utf-8") -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", media), (b"content-length", str(len(body)).encode()),
                            (b"x-content-type-options", b"nosniff"), *headers]})
    await send({"type": "http.response.body", "body": body})


# ------------------------------------------------------------------------------------------------
# the middlewares


class WebGuard:
    """Serve only requests addressed to this machine, and state changes only from the server's own pages.

    ``Host`` not in ``hosts``: 421 and one line naming the host and ``--allow-host``; so is a
    loopback ``Host`` (``LOCAL_HOSTS``) from a peer that is not loopback (``scope["client"]``): a
    client on the network cannot pass for this machine's own by writing ``Host: 127.0.0.1``. A request
    whose method is not in ``SAFE_METHODS`` (or a WebSocket) with an ``Origin`` header that is
    not ``scheme://Host`` of this request: 403. No ``Origin`` at all passes (curl, Python's
    clients; browsers send it on every cross-origin POST).

    Args:
        app: the ASGI app.
        hosts: ``allowed_hosts()``.
        command: the command to name in the 421 line (``agent server``).
        every_method: check ``Origin`` on every request, GET included (``agent mcp``'s event
            streams are GETs that the pages of other origins have no business opening).
        allow_flag: the command has ``--allow-host`` (the 421 line names it).
    """

    def __init__(self, app: ASGIApp, hosts: frozenset[str], command: str, every_method: bool = False,
                 allow_flag: bool = True) -> None:
        self.app, self.hosts, self.command = app, hosts, command
        self.every_method, self.allow_flag = every_method, allow_flag

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": refusal[1][:120]})
        else:
            await _answer(send, *refusal)

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """``(status, line)`` when the request must be refused, None when it may pass."""
        host_header = _header(scope, b"host")
        host = _host_part(host_header) if host_header is not None else None
        if host is None or host not in self.hosts:
            named = "no Host header" if host_header is None else f"Host {_printable(host_header)}"
            fix = (f"to serve another name start it with: {self.command} --allow-host NAME" if self.allow_flag
                   else f"{self.command} serves only these names")
            return 421, f"refused: {named} does not name this server (it answers {', '.join(sorted(self.hosts))}); {fix}\n"
        if host in LOCAL_HOSTS and not _local_peer(scope):
            return 421, (f"refused: Host {_printable(host_header)} names this machine's loopback, but the request came from "
                         f"{_printable(str(scope['client'][0]))} on the network; a client elsewhere uses an SSH tunnel to "
                         f"127.0.0.1" + (f" or the name given with {self.command} --allow-host NAME" if self.allow_flag else "") + "\n")
        origin = _header(scope, b"origin")
        if origin is not None and (self.every_method or scope["type"] == "websocket" or scope.get("method", "GET") not in SAFE_METHODS):
            scheme = {"ws": "http", "wss": "https"}.get(scope.get("scheme", "http"), scope.get("scheme", "http"))
            own = _origin_key(f"{scheme}://{host_header.strip()}")
            if own is None or _origin_key(origin.strip()) != own:
                return 403, (f"refused: a request from the page of another site (Origin {_printable(origin)}) cannot change "
                             f"anything here; use this server's own pages ({scheme}://{host_header.strip()})\n")
        return None


class JsonBodies:
    """Refuse, with 415 and before the app reads it, a request body that is not ``application/json``.

    Applies to every method but ``SAFE_METHODS``: a ``Content-Type`` other than ``application/json``
    (parameters such as ``charset`` allowed) is refused, and so is a body without one; a request
    without body and without ``Content-Type`` (``POST /api/runs/ID/cancel``) passes.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in SAFE_METHODS:
            kind = _header(scope, b"content-type")
            length = _header(scope, b"content-length")
            has_body = _header(scope, b"transfer-encoding") is not None or (length is not None and length.strip() != "0")
            media = kind.split(";", 1)[0].strip().lower() if kind is not None else None
            if (media is not None and media != "application/json") or (media is None and has_body):
                what = f"Content-Type {_printable(kind)}" if kind is not None else "a body without Content-Type"
                await _answer(send, 415, json.dumps({"error": f"refused: {what}; send JSON with Content-Type: application/json"}),
                              media=b"application/json")
                return
        await self.app(scope, receive, send)


class BearerAuth:
    """Serve only requests with ``Authorization: Bearer <token>`` (compared in constant time).

    Missing or wrong: 401, ``WWW-Authenticate: Bearer realm="horizon"`` (``error="invalid_token"``
    when a wrong one was sent, RFC 6750) and a JSON ``{"error"}`` saying where the token is.

    Args:
        app: the ASGI app.
        token: the token (``server_token``).
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        if len(token) < 16:
            raise ValueError("a bearer token needs at least 16 characters")
        self.app, self._token = app, token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        given = _header(scope, b"authorization") or ""
        scheme, _, credentials = given.strip().partition(" ")
        if scheme.lower() == "bearer" and secrets.compare_digest(credentials.strip().encode("latin-1"), self._token):
            await self.app(scope, receive, send)
            return
        challenge = b'Bearer realm="horizon"' + (b', error="invalid_token"' if given else b"")
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": "missing or wrong bearer token"})
            return
        what = "wrong token" if given else "no token"
        await _answer(send, 401, json.dumps({"error": f"refused: {what}; send Authorization: Bearer TOKEN, TOKEN being the "
                                                      f"contents of the server's token file ($HORIZON_HOME/{TOKEN_FILE} "
                                                      "unless agent server was given --token-file)"}),
                      [(b"www-authenticate", challenge)], media=b"application/json")


class FormTokens:
    """Form tokens bound to each browser: a random secret in a ``SameSite=Strict; HttpOnly``
    cookie, and in the forms an HMAC-SHA256 of it under a key of this process.

    A page of another site can neither read the cookie nor the token (no script reads an HttpOnly
    cookie; the pages are only served to this machine's names, ``WebGuard``), nor make a browser
    send the cookie with its form (Strict); a token read from one browser is useless with another
    browser's cookie. ``middleware`` gives a request without a valid cookie a new secret and sets
    it on the answer.
    """

    COOKIE = "horizon_form"
    _SECRET = re.compile(r"[A-Za-z0-9_-]{43}")

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)

    def middleware(self, app: ASGIApp) -> ASGIApp:
        """``app`` wrapped: each HTTP request has its client's secret (``scope["horizon.form_secret"]``)."""

        async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            secret = self._cookie(scope)
            if secret is not None:
                scope["horizon.form_secret"] = secret
                await app(scope, receive, send)
                return
            secret = secrets.token_urlsafe(32)
            scope["horizon.form_secret"] = secret
            attributes = "; Path=/; HttpOnly; SameSite=Strict" + ("; Secure" if scope.get("scheme") == "https" else "")
            cookie = (b"set-cookie", f"{self.COOKIE}={secret}{attributes}".encode())

            async def with_cookie(message: MutableMapping[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    message = {**message, "headers": [*message.get("headers", []), cookie]}
                await send(message)

            await app(scope, receive, with_cookie)

        return wrapped

    def cookie(self, scope: Scope) -> str | None:
        """The secret of the request's ``horizon_form`` cookie, None when it came without a valid one."""
        return self._cookie(scope)

    def _cookie(self, scope: Scope) -> str | None:
        """The request's secret from its ``Cookie`` header, None when missing or malformed."""
        for key, value in scope.get("headers", ()):
            if key != b"cookie":
                continue
            for pair in value.decode("latin-1").split(";"):
                name, _, secret = pair.strip().partition("=")
                if name == self.COOKIE and self._SECRET.fullmatch(secret):
                    return secret
        return None

    def _sign(self, secret: str) -> str:
        digest = hmac.new(self._key, secret.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def token(self, scope: Scope) -> str:
        """The token the forms of the page answering this request carry (empty outside ``middleware``)."""
        secret = scope.get("horizon.form_secret")
        return self._sign(secret) if secret else ""

    def valid(self, scope: Scope, given: str) -> bool:
        """Whether ``given`` (a POSTed form's token) belongs to the cookie the request came with.

        A request whose secret was made for it (it came without the cookie) is never valid.
        """
        secret = self._cookie(scope)
        return secret is not None and bool(given) and hmac.compare_digest(given.encode(), self._sign(secret).encode())


# ------------------------------------------------------------------------------------------------
# agent server's token


def token_path(home: Path) -> Path:
    """The default token file: ``home / "server.token"``."""
    return home / TOKEN_FILE


def server_token(path: Path) -> str:
    """``agent server``'s bearer token: read from ``path``, or made there at the first start.

    A new token (``secrets.token_urlsafe(32)``) is written with ``core.safe_io.write_private``
    (a new file, mode 0600, never through a link, in a folder no other user can write) under a
    temporary name, then published at ``path`` with ``os.link``, which fails when a file is there:
    of two first starts at once, the later one reads the earlier one's complete file. An
    existing file is used only if it is a regular file of this user's that only this user can
    read, holding one token of at least 16 characters (a file you wrote yourself, for a proxy
    that shares it, works).

    Raises:
        UserError: a symbolic link at ``path`` (never followed: someone could point it at a token
            they know), a file others can read, a folder others can write, or an empty or short
            token; each says what to do.
    """
    try:
        return _read_token(path)
    except FileNotFoundError:
        pass
    token = secrets.token_urlsafe(32)
    try:
        published = _publish_token(path, token)
    except OSError as exc:
        raise UserError(f"cannot make the server's token file {path}: {exc.strerror or exc}; pass --token-file PATH in a "
                        "folder of your own") from None
    if not published:  # another start published its token first: a complete file, read it
        try:
            return _read_token(path)
        except FileNotFoundError:
            raise UserError(f"the server's token file {path} appeared and vanished while this server started; start it "
                            "again") from None
    return token


def _read_token(path: Path) -> str:
    """The token in ``path`` (``core.safe_io.read_private``); FileNotFoundError when none is there."""
    from core.safe_io import read_private

    try:
        text = read_private(path).decode("utf-8", errors="replace").strip()
    except FileNotFoundError:
        raise
    except OSError as exc:
        if os.path.islink(path):
            raise UserError(f"the server's token file {path} is a symbolic link, which is never followed (someone could point "
                            "it at a token they know): remove it (a new token is made) or pass --token-file PATH") from None
        raise UserError(f"the server's token file cannot be used: {exc}") from None
    if len(text) < 16 or any(c.isspace() for c in text):
        raise UserError(f"the server's token file {path} does not hold one token of 16 characters or more: delete it "
                        "(a new one is made at the next start) or write one there")
    return text


def _publish_token(path: Path, token: str) -> bool:
    """Write ``token`` to a private temporary file beside ``path`` and publish it there with a hard
    link, which fails when anything (another start's token, a link) is at ``path`` already: a
    reader never sees a half-written file. False when something was there first.

    A file system without hard links gets ``write_private(path)`` itself (``O_EXCL``).
    """
    from core.safe_io import write_private

    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.new")
    write_private(temporary, token + "\n")
    try:
        os.link(temporary, path, follow_symlinks=False)
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.EXDEV):
            raise
        try:
            write_private(path, token + "\n")
        except FileExistsError:
            return False
    finally:
        temporary.unlink(missing_ok=True)
    return True
