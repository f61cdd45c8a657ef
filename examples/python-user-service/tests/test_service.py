import pytest

from users import InMemoryUserRepository, UserNotFoundError, UserService


@pytest.fixture
def repository():
    return InMemoryUserRepository()


@pytest.fixture
def service(repository):
    return UserService(repository)


def test_register_stores_active_user(service, repository):
    user = service.register("ada@example.com", "Ada", "Lovelace", "ada")

    assert user.active
    assert repository.find_by_id(user.id) == user


def test_register_rejects_invalid_email(service, repository):
    with pytest.raises(ValueError):
        service.register("not-an-email", "Ada", "Lovelace")
    assert repository.find_all() == []


def test_register_rejects_duplicate_email(service, repository):
    service.register("ada@example.com", "Ada", "Lovelace")

    with pytest.raises(ValueError):
        service.register("ADA@example.com", "Another", "Ada")
    assert len(repository.find_all()) == 1


def test_display_name_uses_trimmed_nickname(service):
    user = service.register("grace@example.com", "Grace", "Hopper", "  Amazing Grace ")

    assert service.display_name(user.id) == "Amazing Grace"


def test_display_name_falls_back_to_full_name_when_nickname_blank(service):
    user = service.register("alan@example.com", "Alan", "Turing", "   ")

    assert service.display_name(user.id) == "Alan Turing"


def test_display_name_falls_back_to_full_name_when_nickname_missing(service):
    user = service.register("linus@example.com", "Linus", "Torvalds")

    assert service.display_name(user.id) == "Linus Torvalds"


def test_display_name_of_unknown_user_raises(service):
    with pytest.raises(UserNotFoundError) as excinfo:
        service.display_name(42)
    assert excinfo.value.user_id == 42


def test_deactivate_marks_user_inactive(service, repository):
    user = service.register("ken@example.com", "Ken", "Thompson", "ken")

    result = service.deactivate(user.id)

    assert not result.active
    assert not repository.find_by_id(user.id).active


def test_deactivate_unknown_user_raises(service):
    with pytest.raises(UserNotFoundError):
        service.deactivate(7)


def test_list_active_display_names_skips_inactive_users(service):
    service.register("ada@example.com", "Ada", "Lovelace", "ada")
    grace = service.register("grace@example.com", "Grace", "Hopper", "grace")
    service.deactivate(grace.id)

    assert service.list_active_display_names() == ["ada"]


def test_list_active_display_names_includes_users_without_nickname(service):
    service.register("ada@example.com", "Ada", "Lovelace", "ada")
    service.register("dennis@example.com", "Dennis", "Ritchie")

    assert service.list_active_display_names() == ["ada", "Dennis Ritchie"]
