package com.example.users;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class UserServiceTest {

    private InMemoryUserRepository repository;
    private UserService service;

    @BeforeEach
    void setUp() {
        repository = new InMemoryUserRepository();
        service = new UserService(repository);
    }

    @Test
    void registerStoresActiveUser() {
        User user = service.register("ada@example.com", "Ada", "Lovelace", "ada");

        assertTrue(user.isActive());
        assertEquals(user, repository.findById(user.getId()).orElseThrow());
    }

    @Test
    void registerRejectsInvalidEmail() {
        assertThrows(IllegalArgumentException.class,
                () -> service.register("not-an-email", "Ada", "Lovelace", null));
        assertTrue(repository.findAll().isEmpty());
    }

    @Test
    void registerRejectsDuplicateEmail() {
        service.register("ada@example.com", "Ada", "Lovelace", null);

        assertThrows(IllegalArgumentException.class,
                () -> service.register("ADA@example.com", "Another", "Ada", null));
        assertEquals(1, repository.findAll().size());
    }

    @Test
    void displayNameUsesTrimmedNickname() {
        User user = service.register("grace@example.com", "Grace", "Hopper", "  Amazing Grace ");

        assertEquals("Amazing Grace", service.getDisplayName(user.getId()));
    }

    @Test
    void displayNameFallsBackToFullNameWhenNicknameBlank() {
        User user = service.register("alan@example.com", "Alan", "Turing", "   ");

        assertEquals("Alan Turing", service.getDisplayName(user.getId()));
    }

    @Test
    void displayNameFallsBackToFullNameWhenNicknameMissing() {
        User user = service.register("linus@example.com", "Linus", "Torvalds", null);

        assertEquals("Linus Torvalds", service.getDisplayName(user.getId()));
    }

    @Test
    void displayNameOfUnknownUserThrows() {
        UserNotFoundException e = assertThrows(UserNotFoundException.class, () -> service.getDisplayName(42));
        assertEquals(42, e.getUserId());
    }

    @Test
    void deactivateMarksUserInactive() {
        User user = service.register("ken@example.com", "Ken", "Thompson", "ken");

        User result = service.deactivate(user.getId());

        assertFalse(result.isActive());
        assertFalse(repository.findById(user.getId()).orElseThrow().isActive());
    }

    @Test
    void deactivateUnknownUserThrows() {
        assertThrows(UserNotFoundException.class, () -> service.deactivate(7));
    }

    @Test
    void listActiveDisplayNamesSkipsInactiveUsers() {
        service.register("ada@example.com", "Ada", "Lovelace", "ada");
        User grace = service.register("grace@example.com", "Grace", "Hopper", "grace");
        service.deactivate(grace.getId());

        assertEquals(List.of("ada"), service.listActiveDisplayNames());
    }

    @Test
    void listActiveDisplayNamesIncludesUsersWithoutNickname() {
        service.register("ada@example.com", "Ada", "Lovelace", "ada");
        service.register("dennis@example.com", "Dennis", "Ritchie", null);

        assertEquals(List.of("ada", "Dennis Ritchie"), service.listActiveDisplayNames());
    }
}
