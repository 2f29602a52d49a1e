//! JSON text as Ironic itself writes it into its TEXT columns: oslo's `jsonutils.dumps` escapes every
//! non-ASCII character (`\uXXXX`, surrogate pairs above the BMP). Writing it the same way keeps a
//! 4-byte UTF-8 character (an emoji in a BMC user name) out of a `utf8mb3` MySQL column, where the raw
//! bytes would fail the whole load with "Incorrect string value".

use serde_json::Value;

/// `value` serialised with every non-ASCII character escaped.
pub fn to_db_text(value: &Value) -> String {
    ascii_json(value.to_string())
}

/// JSON text with every non-ASCII character escaped (as Ironic writes it): `raw` itself when it is
/// ASCII already.
pub fn ascii_json(raw: String) -> String {
    if raw.is_ascii() {
        return raw;
    }
    let mut out = String::with_capacity(raw.len() + 16);
    for c in raw.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            // non-ASCII only occurs inside JSON strings, where \u escapes mean the same character
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn non_ascii_is_escaped_and_reads_back_the_same() {
        let v = json!({"ipmi_username": "r\u{f6}ot\u{1F600}", "n": 1, "q": "a\"b\\c"});
        let text = to_db_text(&v);
        assert!(text.is_ascii(), "{text}");
        assert!(text.contains("\\u00f6") && text.contains("\\ud83d\\ude00"), "{text}");
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), v);
        assert_eq!(to_db_text(&json!({"a": "plain"})), r#"{"a":"plain"}"#);
    }
}
