package com.example.users;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;

/** A simple, non-persistent {@link UserRepository} backed by a sorted map. */
public class InMemoryUserRepository implements UserRepository {

    private final Map<Long, User> users = new TreeMap<>();

    @Override
    public synchronized User save(User user) {
        Objects.requireNonNull(user, "user");
        users.put(user.getId(), user);
        return user;
    }

    @Override
    public synchronized Optional<User> findById(long id) {
        return Optional.ofNullable(users.get(id));
    }

    @Override
    public synchronized Optional<User> findByEmail(String email) {
        if (email == null) {
            return Optional.empty();
        }
        String wanted = email.trim().toLowerCase(Locale.ROOT);
        return users.values().stream()
                .filter(u -> u.getEmail().toLowerCase(Locale.ROOT).equals(wanted))
                .findFirst();
    }

    @Override
    public synchronized List<User> findAll() {
        return new ArrayList<>(users.values());
    }
}
