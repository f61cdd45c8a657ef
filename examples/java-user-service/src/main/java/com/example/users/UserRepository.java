package com.example.users;

import java.util.List;
import java.util.Optional;

/** Storage abstraction for {@link User} records. */
public interface UserRepository {

    /** Inserts or replaces the user with the same id and returns it. */
    User save(User user);

    Optional<User> findById(long id);

    /** Looks a user up by email address, ignoring case. */
    Optional<User> findByEmail(String email);

    /** Returns all users ordered by id. */
    List<User> findAll();
}
