//! Text that came from a user or a server, made safe to keep and to show.
//!
//! - [`redact_url`]: a URL without its password, for the store and every output.
//! - [`escape_control`]: one line of such text for a terminal (no escape
//!   sequences, no carriage returns, no bidi overrides); [`escape_control_lines`]
//!   does it line by line for a whole printed block.
//! - [`escape_markup`]: such text inside Markdown, with no HTML tag left active.

use std::borrow::Cow;

/// True for characters a terminal acts on instead of showing: C0 controls
/// (ESC starts escape sequences, CR rewrites the line), DEL, C1 controls
/// (U+009B is a one-byte CSI) and the bidi embeddings, overrides and isolates
/// that make a text read differently from what it holds.
fn is_unsafe(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// One line of user or server text for a terminal: every control character
/// written as a visible escape (`\e`, `\r`, `\n`, `\t`, `\x07`, `\u{9b}`,
/// `\u{202e}`), everything else as is. Every label, target, server reply and
/// error message scalelab prints passes here.
pub fn escape_control(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\x1b' => out.push_str("\\e"),
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 && is_unsafe(c) => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if is_unsafe(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A printed block (tables, verdicts): [`escape_control`] on each line, the
/// line breaks kept.
pub fn escape_control_lines(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c != '\n' && is_unsafe(c)) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(s.split('\n').map(escape_control).collect::<Vec<_>>().join("\n"))
}

/// User or server text inside Markdown: `&`, `<` and `>` as entities, so a
/// label such as `<img src=x onerror=alert(1)>` or `<script>` shows as text
/// wherever the Markdown is rendered, never as HTML.
pub fn escape_markup(s: &str) -> Cow<'_, str> {
    if !s.contains(['&', '<', '>']) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;"))
}

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

/// `12,345`: `x` rounded half away from zero with thousands separated, the
/// one way every figure of a count or a rate is written in text.
pub fn thousands(x: f64) -> String {
    let r = (x.signum() * (x.abs() + 0.5).floor()) as i64;
    let digits = r.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if r < 0 {
        format!("-{out}")
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        assert_eq!(escape_control("bad chunk size '\x1b[2J'"), "bad chunk size '\\e[2J'");
        assert_eq!(escape_control("a\r\nb\tc\x07\x7f"), "a\\r\\nb\\tc\\x07\\x7f");
        assert_eq!(escape_control("\u{9b}31m \u{202e}txt.exe"), "\\u{9b}31m \\u{202e}txt.exe");
        assert!(matches!(escape_control("plain — ünïcode 50 clients"), Cow::Borrowed(_)));
        assert_eq!(escape_control_lines("row 1\nrow \x1b]0;x\x07 2\n"), "row 1\nrow \\e]0;x\\x07 2\n");
        assert_eq!(escape_markup("<img src=x onerror=alert(1)> & <script>"), "&lt;img src=x onerror=alert(1)&gt; &amp; &lt;script&gt;");
    }

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
