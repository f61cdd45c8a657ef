import pytest

from users import is_valid_email


@pytest.mark.parametrize("email", ["ada@example.com", "first.last+tag@mail.example.org"])
def test_accepts_well_formed_addresses(email):
    assert is_valid_email(email)


@pytest.mark.parametrize(
    "email",
    ["ada", "ada@", "@example.com", "ada@example", "ada lovelace@example.com"],
)
def test_rejects_malformed_addresses(email):
    assert not is_valid_email(email)


@pytest.mark.parametrize("email", [None, "", "   "])
def test_rejects_none_and_blank(email):
    assert not is_valid_email(email)
