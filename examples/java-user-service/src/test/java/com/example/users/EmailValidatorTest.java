package com.example.users;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class EmailValidatorTest {

    @Test
    void acceptsWellFormedAddresses() {
        assertTrue(EmailValidator.isValid("ada@example.com"));
        assertTrue(EmailValidator.isValid("first.last+tag@mail.example.org"));
    }

    @Test
    void rejectsMalformedAddresses() {
        assertFalse(EmailValidator.isValid("ada"));
        assertFalse(EmailValidator.isValid("ada@"));
        assertFalse(EmailValidator.isValid("@example.com"));
        assertFalse(EmailValidator.isValid("ada@example"));
        assertFalse(EmailValidator.isValid("ada lovelace@example.com"));
    }

    @Test
    void rejectsNullAndBlank() {
        assertFalse(EmailValidator.isValid(null));
        assertFalse(EmailValidator.isValid(""));
        assertFalse(EmailValidator.isValid("   "));
    }
}
