//! Text from a 2014 database, a conductor's log or an operator's file can hold terminal escape
//! sequences (`ESC ] 0;title BEL`, `ESC [2J`, OSC 52 clipboard writes), characters that reorder or hide
//! text (U+202E, U+200B: `bm-compute-1` plus a zero-width space looks like the real host) and line
//! separators that forge a new line (U+2028, or `\n` in an audit record). This is the one text
//! discipline of every output channel (docs/faults.md, "Text"):
//! - [`visible`] / [`visible_line`]: such characters shown as `\x1b` / `\u{202e}`, never emitted;
//! - [`shown`] / [`shown_line`]: the same after the one redactor (`core::redact`): what a terminal,
//!   a report or the audit log receives;
//! - [`json`]: JSON with those characters written as `\u` escapes (the same string once decoded).

use std::borrow::Cow;

/// Characters that must never reach a terminal raw: C0 controls (bar newline and tab, which
/// `visible` keeps), DEL, C1 controls, and the invisible and reordering ones below.
fn is_unsafe(c: char, keep_layout: bool) -> bool {
    match c {
        '\n' | '\t' => !keep_layout,
        // C0 controls, DEL, C1 controls (U+0085 NEL, U+009B CSI among them)
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        _ => is_invisible_or_reordering(c),
    }
}

/// Characters that show nothing, reorder the text around them, or break a line: bidirectional
/// controls and marks, zero-width characters, the byte order mark, Unicode's line and paragraph
/// separators, the soft hyphen, fillers drawn as blanks, interlinear annotations and tag characters.
fn is_invisible_or_reordering(c: char) -> bool {
    matches!(c,
        '\u{ad}' | '\u{34f}' | '\u{61c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}' | '\u{180e}'
        | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{206f}' | '\u{3164}'
        | '\u{fe00}'..='\u{fe0f}' | '\u{feff}' | '\u{ffa0}' | '\u{fff9}'..='\u{fffb}' | '\u{e0000}'..='\u{e0fff}')
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

/// Whether `s` holds a character no output may carry raw (newline and tab included).
pub fn has_unsafe(s: &str) -> bool {
    !s.bytes().all(|b| (0x20..0x7f).contains(&b)) && s.chars().any(|c| is_unsafe(c, false))
}

/// Multi-line text for a terminal: newlines and tabs kept, every other control shown visibly.
pub fn visible(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

/// One line, one table cell: newlines and tabs shown visibly too, so a value cannot break the layout.
pub fn visible_line(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

/// Multi-line text as an output channel receives it: redacted (core/redact.rs), then [`visible`].
pub fn shown(s: &str) -> Cow<'_, str> {
    match crate::core::redact::redact(s) {
        Cow::Borrowed(b) => visible(b),
        Cow::Owned(o) => Cow::Owned(visible(&o).into_owned()),
    }
}

/// One line as an output channel receives it: redacted, then [`visible_line`].
pub fn shown_line(s: &str) -> Cow<'_, str> {
    match crate::core::redact::redact(s) {
        Cow::Borrowed(b) => visible_line(b),
        Cow::Owned(o) => Cow::Owned(visible_line(&o).into_owned()),
    }
}

/// At most `max` characters of one line for a table cell or a pane, with `…` where it was cut
/// (a 1 MB value must not become a 1 MB row): escaped first, so an escape is never cut in half
/// unseen. The full text stays in `--json` and the report.
pub fn clipped(s: &str, max: usize) -> Cow<'_, str> {
    let v = visible_line(s);
    if v.len() <= max || v.chars().count() <= max {
        return v;
    }
    let mut out: String = v.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    Cow::Owned(out)
}

/// JSON for an output channel: serde_json escapes C0 controls itself but writes DEL, C1 controls,
/// bidirectional controls, zero-width characters and line separators raw; here they become `\uXXXX`
/// escapes (the decoded string is the same), and registered secrets are scrubbed.
pub mod json {
    use std::io::{self, Write};

    use serde::Serialize;
    use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};

    /// Wraps a serde_json formatter and escapes what [`super::is_unsafe`] names in every string.
    pub struct Escaping<F>(pub F);

    fn write_escaped<W: ?Sized + Write>(w: &mut W, fragment: &str) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if super::is_unsafe(c, false) {
                w.write_all(&fragment.as_bytes()[start..i])?;
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    write!(w, "\\u{u:04x}")?;
                }
                start = i + c.len_utf8();
            }
        }
        w.write_all(&fragment.as_bytes()[start..])
    }

    macro_rules! delegate {
        ($($name:ident($($arg:ident: $ty:ty),*);)*) => {$(
            #[inline]
            fn $name<W: ?Sized + Write>(&mut self, w: &mut W $(, $arg: $ty)*) -> io::Result<()> {
                self.0.$name(w $(, $arg)*)
            }
        )*};
    }

    impl<F: Formatter> Formatter for Escaping<F> {
        fn write_string_fragment<W: ?Sized + Write>(&mut self, w: &mut W, fragment: &str) -> io::Result<()> {
            write_escaped(w, fragment)
        }
        delegate! {
            begin_array();
            end_array();
            begin_array_value(first: bool);
            end_array_value();
            begin_object();
            end_object();
            begin_object_key(first: bool);
            end_object_key();
            begin_object_value();
            end_object_value();
        }
    }

    /// Scrubs registered secrets from encoded JSON (a secret never holds a quote or a backslash
    /// after encoding in a way that this would break: `***` replaces it inside the string).
    fn scrubbed(bytes: Vec<u8>) -> String {
        let text = String::from_utf8(bytes).unwrap_or_default();
        match crate::core::redact::redact(&text) {
            std::borrow::Cow::Borrowed(_) => text,
            std::borrow::Cow::Owned(o) => o,
        }
    }

    /// One line of JSON (NDJSON, a `--json` value).
    pub fn to_line<T: Serialize + ?Sized>(value: &T) -> String {
        let mut out = Vec::with_capacity(128);
        let mut ser = serde_json::Serializer::with_formatter(&mut out, Escaping(CompactFormatter));
        let _ = value.serialize(&mut ser);
        scrubbed(out)
    }

    /// Pretty JSON (a report, a state file).
    pub fn to_pretty<T: Serialize + ?Sized>(value: &T) -> String {
        let mut out = Vec::with_capacity(1024);
        let mut ser = serde_json::Serializer::with_formatter(&mut out, Escaping(PrettyFormatter::new()));
        let _ = value.serialize(&mut ser);
        scrubbed(out)
    }

    /// Pretty JSON written to `w` as it is encoded (an inventory of 100k nodes is 150 MB of it).
    /// Registered secrets are not scrubbed here: a stream is never held whole; the caller writes
    /// only values that hold no password (the inventory masks them).
    pub fn write_pretty<W: Write, T: Serialize + ?Sized>(w: W, value: &T) -> serde_json::Result<()> {
        let mut ser = serde_json::Serializer::with_formatter(w, Escaping(PrettyFormatter::new()));
        value.serialize(&mut ser)
    }
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

    #[test]
    fn invisible_and_reordering_characters_are_shown() {
        for (c, shown) in [
            ('\u{200b}', "\\u{200b}"),
            ('\u{feff}', "\\u{feff}"),
            ('\u{2028}', "\\u{2028}"),
            ('\u{2029}', "\\u{2029}"),
            ('\u{2066}', "\\u{2066}"),
            ('\u{200f}', "\\u{200f}"),
            ('\u{e0041}', "\\u{e0041}"),
        ] {
            assert_eq!(visible_line(&format!("bm-compute-1{c}")), format!("bm-compute-1{shown}"));
        }
        assert!(matches!(visible("日本語 – ok"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_escapes_what_serde_json_writes_raw_and_decodes_to_the_same() {
        let v = serde_json::json!({"host": "a\u{9b}31m\u{202e}b\u{200b}\u{2028}\u{1b}]0;t\u{7}", "n": [1, "é"]});
        for text in [json::to_line(&v), json::to_pretty(&v)] {
            assert!(!text.chars().any(|c| is_unsafe(c, true)), "{text:?}");
            assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), v);
        }
        assert_eq!(json::to_line(&v), r#"{"host":"a\u009b31m\u202eb\u200b\u2028\u001b]0;t\u0007","n":[1,"é"]}"#);
    }

    #[test]
    fn clipped_cells_keep_their_start_and_say_they_were_cut() {
        assert_eq!(clipped("short", 10), "short");
        let long = "x".repeat(1_000_000);
        let c = clipped(&long, 40);
        assert_eq!(c.chars().count(), 40);
        assert!(c.ends_with('…'));
        assert_eq!(clipped("a\u{1b}[2Jb", 40), "a\\x1b[2Jb");
    }

    proptest::proptest! {
        #[test]
        fn the_ascii_shortcut_agrees_with_every_character(s in "[ -~\t\n\r\x00-\x1f\x7f\u{80}-\u{a0}\u{200b}-\u{200f}\u{2028}-\u{202e}\u{feff}é]{0,24}") {
            for keep in [false, true] {
                let unsafe_chars = s.chars().any(|c| is_unsafe(c, keep));
                proptest::prop_assert_eq!(matches!(escape(&s, keep), Cow::Borrowed(_)), !unsafe_chars);
                proptest::prop_assert!(!escape(&s, keep).chars().any(|c| is_unsafe(c, keep)));
            }
        }
    }
}
