package com.example.users;

import java.util.regex.Pattern;

/** Minimal syntactic validation of email addresses. */
public final class EmailValidator {

    private static final Pattern EMAIL =
            Pattern.compile("^[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)*\\.[A-Za-z]{2,}$");

    private EmailValidator() {
    }

    public static boolean isValid(String email) {
        return email != null && EMAIL.matcher(email.trim()).matches();
    }
}
