//! Text that came from a user or a server, made safe to keep and to show.

/// A URL as recorded and shown: a password in it replaced by `***`
/// (`http://user:***@host/`), everything else as given. Only the authority
/// (between `://` and the first `/`, `?` or `#`) is looked at, and the last
/// `@` in it ends the credentials, as URL parsers read it, so a password
/// holding `@` is hidden whole. Texts that are not URLs come back unchanged.
pub fn redact_url(text: &str) -> String {
    let Some(s) = text.find("://") else { return text.to_string() };
    let rest = &text[s + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else { return text.to_string() };
    match rest[..at].split_once(':') {
        Some((user, _)) => format!("{}{user}:***{}", &text[..s + 3], &rest[at..]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden_whole_and_nothing_else_changes() {
        assert_eq!(redact_url("mysql://u:pw@h/db"), "mysql://u:***@h/db");
        assert_eq!(redact_url("http://alice:s3cret@127.0.0.1:8080/x?a=b@c"), "http://alice:***@127.0.0.1:8080/x?a=b@c");
        assert_eq!(redact_url("http://alice:p@ss@host/"), "http://alice:***@host/");
        assert_eq!(redact_url("http://host:8080/a@b"), "http://host:8080/a@b");
        assert_eq!(redact_url("http://token@host/"), "http://token@host/");
        assert_eq!(redact_url("http://host/"), "http://host/");
        assert_eq!(redact_url("specimen:scales"), "specimen:scales");
    }
}
