package com.example.users;

import java.util.Objects;

/**
 * A registered user. Instances are immutable; state changes such as
 * deactivation produce a new instance.
 */
public final class User {

    private final long id;
    private final String email;
    private final String firstName;
    private final String lastName;
    private final String nickname;
    private final boolean active;

    public User(long id, String email, String firstName, String lastName, String nickname, boolean active) {
        this.id = id;
        this.email = Objects.requireNonNull(email, "email");
        this.firstName = Objects.requireNonNull(firstName, "firstName");
        this.lastName = Objects.requireNonNull(lastName, "lastName");
        this.nickname = nickname; // optional, may be null
        this.active = active;
    }

    public long getId() {
        return id;
    }

    public String getEmail() {
        return email;
    }

    public String getFirstName() {
        return firstName;
    }

    public String getLastName() {
        return lastName;
    }

    /** Returns the nickname, or {@code null} if the user has none. */
    public String getNickname() {
        return nickname;
    }

    public boolean isActive() {
        return active;
    }

    /** Returns a copy of this user with {@code active} set to false. */
    public User deactivated() {
        return new User(id, email, firstName, lastName, nickname, false);
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof User)) {
            return false;
        }
        User other = (User) o;
        return id == other.id
                && active == other.active
                && email.equals(other.email)
                && firstName.equals(other.firstName)
                && lastName.equals(other.lastName)
                && Objects.equals(nickname, other.nickname);
    }

    @Override
    public int hashCode() {
        return Objects.hash(id, email, firstName, lastName, nickname, active);
    }

    @Override
    public String toString() {
        return "User{id=" + id
                + ", email='" + email + '\''
                + ", firstName='" + firstName + '\''
                + ", lastName='" + lastName + '\''
                + ", nickname=" + (nickname == null ? "null" : "'" + nickname + "'")
                + ", active=" + active
                + '}';
    }
}
