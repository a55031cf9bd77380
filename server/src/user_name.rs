//! What a user name may be, in one place for every way a user is made (`POST /admin/users`,
//! `caseload user add`, an OpenID Connect issuer's claim) and for `/login`, which refuses a
//! name no user can have before it looks anything up.
//!
//! A name is 1 to [`MAX_CHARS`] characters of lowercase ASCII letters, digits and `._@+-`,
//! starting with a letter or digit. Uppercase ASCII is folded to lowercase when a name is
//! made, so `Admin` is `admin`; anything else (spaces, control characters, zero-width and
//! other look-alike Unicode) is refused rather than normalised, so two names that print alike
//! are never two users. Names made before this rule keep working at `/login`.

/// The longest user name, in characters (all ASCII, so also in bytes).
pub const MAX_CHARS: usize = 64;

/// The shortest password a new user or a password change takes.
pub const MIN_PASSWORD_CHARS: usize = 8;

/// The rule, as messages state it.
pub const RULE: &str = "a user name is 1 to 64 characters: lowercase letters, digits and ._@+-, \
                        starting with a letter or digit";

/// The name a new user gets for `requested`: ASCII case folded, or why it cannot be one.
pub fn normalise(requested: &str) -> Result<String, String> {
    let name = requested.to_ascii_lowercase();
    let allowed = |character: char| {
        character.is_ascii_lowercase()
            || character.is_ascii_digit()
            || matches!(character, '.' | '_' | '@' | '+' | '-')
    };
    let starts_well = name
        .chars()
        .next()
        .is_some_and(|first| first.is_ascii_lowercase() || first.is_ascii_digit());
    if name.len() <= MAX_CHARS && starts_well && name.chars().all(allowed) {
        Ok(name)
    } else {
        Err(format!("{RULE}; got {}", shown(requested)))
    }
}

/// Whether a login may name this user: anything a name made now or before could be. Longer
/// ones are refused before any lookup, so they are never kept or logged whole.
pub fn may_exist(name: &str) -> bool {
    !name.is_empty() && name.chars().count() <= MAX_CHARS
}

/// Whether `password` is long enough for a new user or a password change.
pub fn password_problem(password: &str) -> Option<String> {
    (password.chars().count() < MIN_PASSWORD_CHARS)
        .then(|| format!("a password is at least {MIN_PASSWORD_CHARS} characters"))
}

/// A name as it may be written to a log or the audit log: at most [`MAX_CHARS`] characters,
/// control and other invisible characters escaped, in quotes, with `…` when cut.
pub fn shown(name: &str) -> String {
    let mut shown = String::from("\"");
    for (index, character) in name.chars().enumerate() {
        if index == MAX_CHARS {
            shown.push('…');
            break;
        }
        if character.is_control() || matches!(character, '"' | '\\') || is_invisible(character) {
            shown.extend(character.escape_default());
        } else {
            shown.push(character);
        }
    }
    shown.push('"');
    shown
}

/// A name as the audit log records it: as it is when it is plain (printable, visible, no
/// quotes, at most [`MAX_CHARS`]), otherwise [`shown`].
pub fn for_log(name: &str) -> String {
    let plain = may_exist(name)
        && name.chars().all(|character| {
            !character.is_control() && !matches!(character, '"' | '\\') && !is_invisible(character)
        });
    if plain { name.to_owned() } else { shown(name) }
}

/// Characters that print as nothing, or as a space, and so hide in a name.
fn is_invisible(character: char) -> bool {
    matches!(
        character,
        '\u{00A0}'
            | '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{17B4}'
            | '\u{17B5}'
            | '\u{180E}'
            | '\u{2000}'..='\u{200F}'
            | '\u{2028}'..='\u{202F}'
            | '\u{205F}'..='\u{206F}'
            | '\u{3000}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_folded_or_refused() {
        let cases: &[(&str, Option<&str>)] = &[
            ("alice", Some("alice")),
            ("Admin", Some("admin")),
            ("ci.bot+eu@example.com", Some("ci.bot+eu@example.com")),
            ("r2-d2_x", Some("r2-d2_x")),
            ("", None),
            ("admin\u{200B}", None),
            ("bob smith", None),
            ("line\nbreak", None),
            ("-leading", None),
            (".hidden", None),
            ("émile", None),
            ("ａdmin", None),
        ];
        for (requested, expected) in cases {
            assert_eq!(
                normalise(requested).ok().as_deref(),
                *expected,
                "{requested:?}"
            );
        }
        assert!(normalise(&"a".repeat(MAX_CHARS)).is_ok());
        assert!(normalise(&"a".repeat(MAX_CHARS + 1)).is_err());
    }

    #[test]
    fn a_refusal_quotes_a_capped_escaped_name() {
        let long = format!("x\u{1b}[2J{}", "y".repeat(100_000));
        let message = normalise(&long).expect_err("refused");
        assert!(message.len() < 300, "{} bytes", message.len());
        assert!(message.contains("\\u{1b}"), "{message}");
        assert!(message.ends_with("…\""), "{message}");
        assert_eq!(shown("admin\u{200B}"), "\"admin\\u{200b}\"");
        assert_eq!(for_log("eve"), "eve");
        assert_eq!(for_log("admin\u{200B}"), "\"admin\\u{200b}\"");
        assert!(for_log(&"z".repeat(10_000)).len() < 100);
    }

    #[test]
    fn logins_name_at_most_the_longest_name() {
        assert!(may_exist("Old Name From Before"));
        assert!(may_exist(&"é".repeat(MAX_CHARS)));
        assert!(!may_exist(&"a".repeat(MAX_CHARS + 1)));
        assert!(!may_exist(""));
    }

    #[test]
    fn passwords_have_a_minimum_length() {
        assert!(password_problem("seven77").is_some());
        assert!(password_problem("eight888").is_none());
    }
}
