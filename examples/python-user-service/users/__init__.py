"""A small in-memory user-management service (Horizon example repository)."""

from users.models import User
from users.repository import InMemoryUserRepository
from users.service import UserNotFoundError, UserService
from users.validation import is_valid_email

__all__ = [
    "InMemoryUserRepository",
    "User",
    "UserNotFoundError",
    "UserService",
    "is_valid_email",
]
