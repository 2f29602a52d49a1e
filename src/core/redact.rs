//! The one redactor: every text that leaves the process (terminal, report, audit log, proxy reply,
//! wizard screen) passes through [`redact`] at its channel's single exit (docs/faults.md, "Secrets").
//!
//! Two nets, because neither alone is enough:
//! - **By shape**: a URL's userinfo password (`scheme://user:PASSWORD@host`) and secret query values
//!   (`?password=`, `?token=`, ...), wherever such text appears. In one URL given whole ([`redact_url`]:
//!   an argument, a setting) the userinfo ends at its last `@`, as `DbUrl::parse` reads it, so a password
//!   holding spaces, `/` or `@` is hidden whole; in free text a URL ends at whitespace or a quote.
//! - **By value**: every password and token the process was given (the command line, the environment,
//!   the URLs and config files it parsed) is registered once ([`register_secret`]), and any occurrence of
//!   it is replaced, whatever surrounds it: a driver's error that echoes a password with a space in it is
//!   caught here though no shape matches.

use std::borrow::Cow;
use std::sync::RwLock;

use aho_corasick::{AhoCorasick, MatchKind};
use percent_encoding::percent_decode_str;

/// What replaces a secret.
pub const MASK: &str = "***";
/// Shorter values are not scrubbed by value (they would mangle ordinary words); such a password is
/// still hidden by shape.
pub const MIN_SECRET: usize = 4;
/// Registered values at most: a process is given a handful (a proxy validating callers' tokens does
/// not register them).
const MAX_SECRETS: usize = 256;

/// Query keys whose value is a secret (compared without case).
const SECRET_KEYS: [&str; 19] = [
    "password",
    "passwd",
    "pwd",
    "pass",
    "token",
    "auth_token",
    "x-auth-token",
    "access_token",
    "refresh_token",
    "id_token",
    "secret",
    "client_secret",
    "application_credential_secret",
    "api_key",
    "apikey",
    "key",
    "signature",
    "sig",
    "os_password",
];

struct Known {
    values: Vec<String>,
    matcher: Option<AhoCorasick>,
}

static KNOWN: RwLock<Known> = RwLock::new(Known { values: Vec::new(), matcher: None });

/// Remembers `value` as a secret: from now on it is replaced by `***` in every output.
pub fn register_secret(value: &str) {
    let value = value.trim_matches(|c: char| c == '\n' || c == '\r');
    if value.chars().count() < MIN_SECRET {
        return;
    }
    let Ok(mut known) = KNOWN.write() else { return };
    if known.values.iter().any(|v| v == value) || known.values.len() >= MAX_SECRETS {
        return;
    }
    known.values.push(value.to_string());
    // longest first: a secret that contains another is replaced whole
    known.matcher = AhoCorasick::builder().match_kind(MatchKind::LeftmostLongest).build(&known.values).ok();
}

/// Registers the secrets one URL holds (its userinfo password and secret query values, both as
/// written and percent-decoded). `text` is one URL, or an argument such as `--nova-bm-db=URL`.
pub fn register_url_secrets(text: &str) {
    for (start, end) in secret_spans_in_token(text) {
        let raw = &text[start..end];
        register_secret(raw);
        if let Ok(decoded) = percent_decode_str(raw).decode_utf8() {
            register_secret(&decoded);
        }
    }
}

/// Redacts free text: URL passwords and secret query values by shape, then every registered secret.
pub fn redact(text: &str) -> Cow<'_, str> {
    let shaped = redact_shapes(text, false);
    match scrub_known(&shaped) {
        Cow::Borrowed(_) => shaped,
        Cow::Owned(s) => Cow::Owned(s),
    }
}

/// Redacts one URL given whole (or one command-line argument): the userinfo password ends at the
/// last `@`, as the URL parser reads it, so a password with spaces or `@` in it is hidden whole.
pub fn redact_url(text: &str) -> String {
    let shaped = redact_shapes(text, true);
    scrub_known(&shaped).into_owned()
}

/// Every registered secret replaced by `***`.
fn scrub_known(text: &str) -> Cow<'_, str> {
    let Ok(known) = KNOWN.read() else { return Cow::Borrowed(text) };
    match &known.matcher {
        Some(m) if m.is_match(text) => Cow::Owned(m.replace_all(text, &vec![MASK; known.values.len()])),
        _ => Cow::Borrowed(text),
    }
}

fn redact_shapes(text: &str, whole_token: bool) -> Cow<'_, str> {
    let spans = if whole_token { secret_spans_in_token(text) } else { secret_spans_in_text(text) };
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in spans {
        if start < at {
            // overlapping the span before it (a query value that holds a userinfo, say): hidden up
            // to the further end of the two (it was dropped: the rest of the password showed)
            at = at.max(end);
            continue;
        }
        out.push_str(&text[at..start]);
        if end > start {
            out.push_str(MASK);
        }
        at = end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// A character a scheme may hold (RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )).
fn scheme_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')
}

/// Where free text ends a URL: whitespace, quotes and angle brackets.
fn ends_url(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`')
}

/// The byte spans of secrets in `text` read as one token (the last `@` ends the userinfo).
fn secret_spans_in_token(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    if let Some(i) = find_scheme_sep(text, 0) {
        let s = i + 3;
        let rest = &text[s..];
        if let Some(at) = rest.rfind('@') {
            if let Some(colon) = rest[..at].find(':') {
                spans.push((s + colon + 1, s + at));
            }
        }
    } else if let Some(at) = text.rfind('@') {
        // not a URL by shape (`mysql:/u:p@h`, `u:p@h`): whatever follows the userinfo's first ':'
        let start = text[..at].rfind(['/', '=']).map(|i| i + 1).unwrap_or(0);
        if let Some(colon) = text[start..at].find(':') {
            spans.push((start + colon + 1, at));
        }
    }
    query_secret_spans(text, &mut spans);
    spans.sort_unstable();
    spans
}

/// The byte spans of secrets in free text (a URL ends at whitespace or a quote).
fn secret_spans_in_text(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(i) = find_scheme_sep(text, from) {
        let s = i + 3;
        let end = text[s..].find(ends_url).map(|e| s + e).unwrap_or(text.len());
        let token = &text[s..end];
        if let Some(at) = token.rfind('@') {
            if let Some(colon) = token[..at].find(':') {
                spans.push((s + colon + 1, s + at));
            }
        }
        from = end.max(s);
    }
    query_secret_spans(text, &mut spans);
    spans.sort_unstable();
    spans
}

/// The next `://` at or after `from` that follows a scheme.
fn find_scheme_sep(text: &str, mut from: usize) -> Option<usize> {
    let b = text.as_bytes();
    while let Some(off) = text.get(from..)?.find("://") {
        let i = from + off;
        if i > 0
            && scheme_byte(b[i - 1])
            && b[..i].iter().rev().take_while(|c| scheme_byte(**c)).any(u8::is_ascii_alphabetic)
        {
            return Some(i);
        }
        from = i + 3;
    }
    None
}

/// `?key=VALUE`, `&key=VALUE`, `;key=VALUE` for a secret key: the VALUE's span.
fn query_secret_spans(text: &str, spans: &mut Vec<(usize, usize)>) {
    let b = text.as_bytes();
    for (eq, _) in text.match_indices('=') {
        let key_start = b[..eq].iter().rposition(|c| matches!(c, b'?' | b'&' | b';')).map(|p| p + 1);
        let Some(key_start) = key_start else { continue };
        let key = &text[key_start..eq];
        if !SECRET_KEYS.iter().any(|k| k.eq_ignore_ascii_case(key)) {
            continue;
        }
        let v = eq + 1;
        let end =
            text[v..].find(|c: char| matches!(c, '&' | ';' | '#') || ends_url(c)).map(|e| v + e).unwrap_or(text.len());
        if end > v {
            spans.push((v, end));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_passwords_are_hidden_whatever_they_hold() {
        assert_eq!(redact_url("mysql://nova:PW 123@db/nova_bm"), "mysql://nova:***@db/nova_bm");
        assert_eq!(redact_url("--nova-bm-db=mysql://nova:p\tw\u{a0}x\ny@db/x"), "--nova-bm-db=mysql://nova:***@db/x");
        assert_eq!(redact_url("mysql://nova:a@b/c@db/x"), "mysql://nova:***@db/x");
        assert_eq!(redact_url("http://user:pw@ironic:6385"), "http://user:***@ironic:6385");
        assert_eq!(redact_url("mysql:/u:p4ss@h"), "mysql:/u:***@h");
        assert_eq!(redact_url("mysql://nova@db/x"), "mysql://nova@db/x");
        assert_eq!(redact_url("sqlite:////var/lib/x.db"), "sqlite:////var/lib/x.db");
    }

    /// A secret query value that holds a URL's userinfo: the two spans overlap, and the userinfo's
    /// was dropped whole, showing the password (found by `tests/it/fuzz.rs`).
    #[test]
    fn overlapping_spans_hide_both() {
        let text = "postgresql://x\n&password=@/:y&z?mysql+pymysql://mysql://u:QGFqyBgOJJ8C1@h/db?x=1";
        let out = redact_url(text);
        assert!(!out.contains("QGFqyBgOJJ8C1"), "{out}");
        assert!(out.starts_with("postgresql://x\n&password=***") && out.ends_with("@h/db?x=1"), "{out}");
    }

    #[test]
    fn free_text_hides_every_url_and_query_secret() {
        let t = "cannot reach http://admin:s3cr3t@ironic:6385/v1 (ironic=http://u:pw@h:1/?token=abcdef&x=1) then mysql://n:q@db";
        let r = redact(t);
        for s in ["s3cr3t", ":pw@", "abcdef", ":q@"] {
            assert!(!r.contains(s), "{s} in {r}");
        }
        assert!(r.contains("x=1") && r.contains("http://admin:***@ironic:6385/v1"), "{r}");
        assert_eq!(
            redact("see https://ironic/v1?Password=x1&fields=uuid"),
            "see https://ironic/v1?Password=***&fields=uuid"
        );
        assert_eq!(redact("plain text, a=b, no URL"), "plain text, a=b, no URL");
        assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn registered_secrets_are_scrubbed_anywhere() {
        register_url_secrets("mysql://nova:Zq%20wide%20pw@db/nova_bm");
        let r = redact("driver said: access denied for 'Zq wide pw' and Zq%20wide%20pw");
        assert!(!r.contains("Zq wide pw") && !r.contains("Zq%20wide"), "{r}");
        register_secret("abc"); // too short to scrub by value
        assert_eq!(redact("abc"), "abc");
    }

    proptest::proptest! {
        #[test]
        fn a_password_in_a_url_never_survives(pw in "[^@/\u{0}]{4,16}", host in "[a-z]{1,8}") {
            let url = format!("mysql://nova:{pw}@{host}/nova_bm");
            let r = redact_url(&url);
            proptest::prop_assert!(!r.contains(&format!(":{pw}@")), "{}", r);
            proptest::prop_assert!(r.ends_with(&format!("@{host}/nova_bm")), "{}", r);
        }
    }
}
