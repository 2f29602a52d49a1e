//! Text from a 2014 database, a conductor's log or an operator's file can hold terminal escape
//! sequences (`ESC ] 0;title BEL`, `ESC [2J`, OSC 52 clipboard writes). This is the one sanitiser
//! every human-facing output uses: control characters are shown visibly (`\x1b`), never emitted.
//! JSON output needs none of it (serde_json escapes control characters itself).

use std::borrow::Cow;

/// Characters that must never reach a terminal raw: C0 controls (bar newline and tab, which
/// `visible` keeps), DEL, C1 controls, and the Unicode bidirectional overrides that reorder text.
fn is_unsafe(c: char, keep_layout: bool) -> bool {
    match c {
        '\n' | '\t' => !keep_layout,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

fn escape(s: &str, keep_layout: bool) -> Cow<'_, str> {
    // printable ASCII (nearly all text) is checked a byte at a time, without decoding characters
    let safe_byte = |b: u8| (0x20..0x7f).contains(&b) || (keep_layout && (b == b'\n' || b == b'\t'));
    if s.bytes().all(safe_byte) || !s.chars().any(|c| is_unsafe(c, keep_layout)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if !is_unsafe(c, keep_layout) {
            out.push(c);
        } else if (c as u32) < 0x100 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    Cow::Owned(out)
}

/// Multi-line text for a terminal: newlines and tabs kept, every other control shown visibly.
pub fn visible(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

/// One line, one table cell: newlines and tabs shown visibly too, so a value cannot break the layout.
pub fn visible_line(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

/// Words said twice in a row ("not run: not run", "the the"), case and punctuation aside.
#[cfg(test)]
pub(crate) fn doubled_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let words: Vec<String> = line
            .split_whitespace()
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase())
            .filter(|w| !w.is_empty())
            .collect();
        for pair in words.windows(2) {
            if pair[0] == pair[1] && pair[0].chars().any(char::is_alphabetic) {
                out.push(format!("'{} {}' in: {line}", pair[0], pair[1]));
            }
        }
        for pair in words.windows(4) {
            // ("interface 13: interface 13 (MAC) ..." names its subject, then describes it)
            let numbered = pair.iter().any(|w| w.chars().any(|c| c.is_ascii_digit()));
            if pair[0] == pair[2] && pair[1] == pair[3] && !numbered {
                out.push(format!("'{} {}' twice in: {line}", pair[0], pair[1]));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_are_shown_not_emitted() {
        assert_eq!(visible("host\x1b]0;pwned\x07"), "host\\x1b]0;pwned\\x07");
        assert_eq!(visible("a\x1b[2Jb"), "a\\x1b[2Jb");
        assert_eq!(visible("\x1b]52;c;ZXZpbA==\x07"), "\\x1b]52;c;ZXZpbA==\\x07");
        assert_eq!(visible("line one\n\tline two"), "line one\n\tline two");
        assert_eq!(visible_line("a\nb\rc"), "a\\x0ab\\x0dc");
        assert_eq!(visible("\u{9b}31m"), "\\x9b31m", "C1 CSI");
        assert_eq!(visible("abc\u{202e}def"), "abc\\u{202e}def");
        assert!(matches!(visible("plain ünïcode ✓"), Cow::Borrowed(_)));
    }

    proptest::proptest! {
        #[test]
        fn the_ascii_shortcut_agrees_with_every_character(s in "[ -~\t\n\r\x00-\x1f\x7f\u{80}-\u{a0}\u{202a}-\u{202e}é]{0,24}") {
            for keep in [false, true] {
                let unsafe_chars = s.chars().any(|c| is_unsafe(c, keep));
                proptest::prop_assert_eq!(matches!(escape(&s, keep), Cow::Borrowed(_)), !unsafe_chars);
                proptest::prop_assert!(!escape(&s, keep).chars().any(|c| is_unsafe(c, keep)));
            }
        }
    }
}
