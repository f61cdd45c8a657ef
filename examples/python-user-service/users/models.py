"""Domain model."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class User:
    """A registered user. Instances are immutable; use :meth:`deactivated`."""

    id: int
    email: str
    first_name: str
    last_name: str
    nickname: str | None = None
    active: bool = True

    def deactivated(self) -> User:
        """Return a copy of this user with ``active`` set to False."""
        return replace(self, active=False)
