"""Minimal syntactic validation of email addresses."""

from __future__ import annotations

import re

_EMAIL = re.compile(r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}$")


def is_valid_email(email: str | None) -> bool:
    return email is not None and _EMAIL.fullmatch(email.strip()) is not None
