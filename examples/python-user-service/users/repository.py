"""In-memory storage for users."""

from __future__ import annotations

import threading

from users.models import User


class InMemoryUserRepository:
    """A simple, non-persistent repository keyed by user id."""

    def __init__(self) -> None:
        self._users: dict[int, User] = {}
        self._lock = threading.Lock()

    def save(self, user: User) -> User:
        """Insert or replace the user with the same id and return it."""
        with self._lock:
            self._users[user.id] = user
        return user

    def find_by_id(self, user_id: int) -> User | None:
        with self._lock:
            return self._users.get(user_id)

    def find_by_email(self, email: str | None) -> User | None:
        """Look a user up by email address, ignoring case."""
        if email is None:
            return None
        wanted = email.strip().lower()
        with self._lock:
            for user in self._users.values():
                if user.email.lower() == wanted:
                    return user
        return None

    def find_all(self) -> list[User]:
        """Return all users ordered by id."""
        with self._lock:
            return [self._users[key] for key in sorted(self._users)]
