"""Application service for registering and looking up users."""

from __future__ import annotations

import itertools

from users.models import User
from users.repository import InMemoryUserRepository
from users.validation import is_valid_email


class UserNotFoundError(LookupError):
    """Raised when no user exists with the requested id."""

    def __init__(self, user_id: int) -> None:
        super().__init__(f"User not found: {user_id}")
        self.user_id = user_id


class UserService:
    def __init__(self, repository: InMemoryUserRepository) -> None:
        self._repository = repository
        self._ids = itertools.count(1)

    def register(
        self,
        email: str,
        first_name: str,
        last_name: str,
        nickname: str | None = None,
    ) -> User:
        """Register a new, active user.

        Raises ValueError if the email is invalid or already registered.
        """
        if not is_valid_email(email):
            raise ValueError(f"Invalid email: {email!r}")
        normalized = email.strip()
        if self._repository.find_by_email(normalized) is not None:
            raise ValueError(f"Email already registered: {normalized}")
        user = User(
            id=next(self._ids),
            email=normalized,
            first_name=first_name,
            last_name=last_name,
            nickname=nickname,
        )
        return self._repository.save(user)

    def _get(self, user_id: int) -> User:
        user = self._repository.find_by_id(user_id)
        if user is None:
            raise UserNotFoundError(user_id)
        return user

    def display_name(self, user_id: int) -> str:
        """Return the trimmed nickname if the user has a non-blank one,
        otherwise "first_name last_name".

        Raises UserNotFoundError if no user has the given id.
        """
        user = self._get(user_id)
        nickname = user.nickname.strip()
        if nickname:
            return nickname
        return f"{user.first_name} {user.last_name}"

    def deactivate(self, user_id: int) -> User:
        """Mark a user as inactive. Raises UserNotFoundError if unknown."""
        user = self._get(user_id)
        return self._repository.save(user.deactivated())

    def list_active_display_names(self) -> list[str]:
        """Display names of all active users, ordered by id."""
        return [
            self.display_name(user.id)
            for user in self._repository.find_all()
            if user.active
        ]
