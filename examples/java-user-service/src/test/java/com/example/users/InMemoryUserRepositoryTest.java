package com.example.users;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class InMemoryUserRepositoryTest {

    private final InMemoryUserRepository repository = new InMemoryUserRepository();

    @Test
    void findByIdReturnsSavedUser() {
        User user = new User(1, "ada@example.com", "Ada", "Lovelace", null, true);
        repository.save(user);

        assertEquals(user, repository.findById(1).orElseThrow());
    }

    @Test
    void findByIdReturnsEmptyForUnknownId() {
        assertFalse(repository.findById(99).isPresent());
    }

    @Test
    void saveReplacesUserWithSameId() {
        repository.save(new User(1, "ada@example.com", "Ada", "Lovelace", null, true));
        repository.save(new User(1, "ada@example.com", "Ada", "Lovelace", "ada", false));

        assertEquals(1, repository.findAll().size());
        assertEquals("ada", repository.findById(1).orElseThrow().getNickname());
    }

    @Test
    void findByEmailIgnoresCase() {
        repository.save(new User(1, "Ada@Example.com", "Ada", "Lovelace", null, true));

        assertTrue(repository.findByEmail("ada@example.COM").isPresent());
        assertFalse(repository.findByEmail("grace@example.com").isPresent());
    }

    @Test
    void findAllIsOrderedById() {
        repository.save(new User(3, "c@example.com", "C", "Three", null, true));
        repository.save(new User(1, "a@example.com", "A", "One", null, true));
        repository.save(new User(2, "b@example.com", "B", "Two", null, true));

        List<Long> ids = repository.findAll().stream().map(User::getId).toList();
        assertEquals(List.of(1L, 2L, 3L), ids);
    }
}
