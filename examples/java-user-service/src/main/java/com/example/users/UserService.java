package com.example.users;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

/** Application service for registering and looking up users. */
public class UserService {

    private final UserRepository repository;
    private final AtomicLong nextId = new AtomicLong(1);

    public UserService(UserRepository repository) {
        this.repository = Objects.requireNonNull(repository, "repository");
    }

    /**
     * Registers a new, active user.
     *
     * @param nickname optional nickname, may be {@code null}
     * @throws IllegalArgumentException if the email is invalid or already registered
     */
    public User register(String email, String firstName, String lastName, String nickname) {
        if (!EmailValidator.isValid(email)) {
            throw new IllegalArgumentException("Invalid email: " + email);
        }
        String normalizedEmail = email.trim();
        if (repository.findByEmail(normalizedEmail).isPresent()) {
            throw new IllegalArgumentException("Email already registered: " + normalizedEmail);
        }
        User user = new User(nextId.getAndIncrement(), normalizedEmail, firstName, lastName, nickname, true);
        return repository.save(user);
    }

    /**
     * Returns the name to show for a user: the trimmed nickname if the user
     * has a non-blank one, otherwise "firstName lastName".
     *
     * @throws UserNotFoundException if no user has the given id
     */
    public String getDisplayName(long id) {
        User user = repository.findById(id).orElseThrow(() -> new UserNotFoundException(id));
        String nickname = user.getNickname().trim();
        if (!nickname.isEmpty()) {
            return nickname;
        }
        return user.getFirstName() + " " + user.getLastName();
    }

    /**
     * Marks a user as inactive.
     *
     * @throws UserNotFoundException if no user has the given id
     */
    public User deactivate(long id) {
        User user = repository.findById(id).orElseThrow(() -> new UserNotFoundException(id));
        return repository.save(user.deactivated());
    }

    /** Display names of all active users, ordered by id. */
    public List<String> listActiveDisplayNames() {
        return repository.findAll().stream()
                .filter(User::isActive)
                .map(u -> getDisplayName(u.getId()))
                .collect(Collectors.toList());
    }
}
