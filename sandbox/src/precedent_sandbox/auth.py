"""Authentication: who is asking, from a static token file as kube-apiserver's
``--token-auth-file``.

The file is CSV, one token a line: ``token,user,uid,"group1,group2"`` (the group column is
optional). A request with ``Authorization: Bearer <token>`` for a listed token is that user,
with ``system:authenticated`` added to its groups; an unknown token is 401 ``Unauthorized``; a
request with no token is anonymous (``system:anonymous`` in ``system:unauthenticated``), which
RBAC then refuses unless granted.

Without a token file the sandbox authenticates nobody: every request is :data:`ADMIN`, a
member of ``system:masters``. The user of the request being served is :data:`CURRENT_USER`, a
context variable (each aiohttp request runs in its own task, so it never leaks across
requests); the store's admission and the review endpoints read it.
"""

from __future__ import annotations

import csv
import io
import logging
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "ADMIN",
    "ANONYMOUS",
    "AUTHENTICATED",
    "CURRENT_USER",
    "MASTERS",
    "TokenFileError",
    "UserInfo",
    "read_token_file",
]

log = logging.getLogger(__name__)

MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"


@dataclass(frozen=True, slots=True)
class UserInfo:
    """An authenticated (or anonymous) user, as ``user.Info`` in Kubernetes."""

    name: str
    """The user name: ``bob``, ``system:serviceaccount:ns:name``, ``system:anonymous``."""
    uid: str = ""
    """The uid from the token file's third column."""
    groups: tuple[str, ...] = field(default_factory=tuple)
    """Groups, ``system:authenticated`` or ``system:unauthenticated`` included."""

    def as_dict(self) -> dict[str, object]:
        """``userInfo`` as review objects and CEL's ``request.userInfo`` carry it."""
        body: dict[str, object] = {"username": self.name, "groups": list(self.groups)}
        if self.uid:
            body["uid"] = self.uid
        return body


ADMIN = UserInfo("system:admin", "", (MASTERS, AUTHENTICATED))
"""Every request's user when authentication is off: all-powerful, as before authentication."""
ANONYMOUS = UserInfo("system:anonymous", "", (UNAUTHENTICATED,))
"""A request without a token when authentication is on."""

CURRENT_USER: ContextVar[UserInfo] = ContextVar("precedent_sandbox_user", default=ADMIN)
"""The user of the request being served."""


class TokenFileError(ValueError):
    """A token file that cannot be read; the message names the file and line."""


def read_token_file(path: str | Path) -> dict[str, UserInfo]:
    """Tokens and their users from a ``--token-auth-file`` CSV (a later duplicate wins)."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as error:
        raise TokenFileError(f"token file {source}: {error.strerror or error}") from None
    return parse_tokens(text, str(source))


def parse_tokens(text: str, name: str = "<tokens>") -> dict[str, UserInfo]:
    """Parse token-file text; see :func:`read_token_file`."""
    tokens: dict[str, UserInfo] = {}
    for number, record in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not record or all(not cell.strip() for cell in record):
            continue
        if len(record) < 3:
            raise TokenFileError(
                f"token file {name}, line {number}: must have at least 3 columns "
                f"(token, user name, user uid), found {len(record)}"
            )
        token, user, uid = (cell.strip() for cell in record[:3])
        if not token or not user:
            missing = "token" if not token else "user name"
            raise TokenFileError(f"token file {name}, line {number}: the {missing} is empty")
        groups = [g.strip() for g in record[3].split(",") if g.strip()] if len(record) > 3 else []
        if token in tokens:
            log.warning("duplicate token in token file %s, line %d: the later wins", name, number)
        if AUTHENTICATED not in groups:
            groups.append(AUTHENTICATED)
        tokens[token] = UserInfo(user, uid, tuple(groups))
    return tokens


def bearer_token(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer …`` header, or None if there is none."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip()
