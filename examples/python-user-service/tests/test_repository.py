from users import InMemoryUserRepository, User


def test_find_by_id_returns_saved_user():
    repository = InMemoryUserRepository()
    user = User(1, "ada@example.com", "Ada", "Lovelace")
    repository.save(user)

    assert repository.find_by_id(1) == user


def test_find_by_id_returns_none_for_unknown_id():
    assert InMemoryUserRepository().find_by_id(99) is None


def test_save_replaces_user_with_same_id():
    repository = InMemoryUserRepository()
    repository.save(User(1, "ada@example.com", "Ada", "Lovelace"))
    repository.save(User(1, "ada@example.com", "Ada", "Lovelace", nickname="ada", active=False))

    assert len(repository.find_all()) == 1
    assert repository.find_by_id(1).nickname == "ada"


def test_find_by_email_ignores_case():
    repository = InMemoryUserRepository()
    repository.save(User(1, "Ada@Example.com", "Ada", "Lovelace"))

    assert repository.find_by_email("ada@example.COM") is not None
    assert repository.find_by_email("grace@example.com") is None


def test_find_all_is_ordered_by_id():
    repository = InMemoryUserRepository()
    repository.save(User(3, "c@example.com", "C", "Three"))
    repository.save(User(1, "a@example.com", "A", "One"))
    repository.save(User(2, "b@example.com", "B", "Two"))

    assert [u.id for u in repository.find_all()] == [1, 2, 3]
