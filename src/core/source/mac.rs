//! A MAC address in the one form Ironic stores (`aa:bb:cc:dd:ee:ff`), read from however an operator
//! typed it into nova_bm (docs/mapping.md, "Ports"). Held inline in 17 bytes: a 100,000-node
//! inventory has 200,000 of them, which as `String`s were as many allocations and 10 MB of `plan`'s
//! peak memory.

use std::fmt;

/// A normalised MAC: 17 ASCII bytes, lower-case hex pairs separated by `:`. Made only by
/// `normalize_mac`, so it is always that form.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mac([u8; 17]);

impl Mac {
    pub fn as_str(&self) -> &str {
        // ASCII by construction (`normalize_mac` writes only hex digits and colons)
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl serde::Serialize for Mac {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Normalises a MAC as operators type them (`AA:BB:CC:DD:EE:FF`, `aa-bb-cc-dd-ee-ff`,
/// `aabb.ccdd.eeff`, `aabbccddeeff`, single-digit octets `a:b:c:d:e:f`) to `aa:bb:cc:dd:ee:ff`.
/// None when it is not a 6-octet MAC.
pub fn normalize_mac(input: &str) -> Option<Mac> {
    let s = input.trim();
    // a MAC is ASCII; the byte slicing below relies on it (a 12-byte non-ASCII address panicked)
    if s.is_empty() || !s.is_ascii() {
        return None;
    }
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut octets = [0u8; 6];
    if s.contains([':', '-']) {
        let mut k = 0;
        for part in s.split([':', '-']) {
            let b = part.as_bytes();
            let v = match b {
                [lo] => hex(*lo)?,
                [hi, lo] => hex(*hi)? << 4 | hex(*lo)?,
                _ => return None,
            };
            *octets.get_mut(k)? = v;
            k += 1;
        }
        if k != 6 {
            return None;
        }
    } else {
        let mut digits = [0u8; 12];
        let mut k = 0;
        if s.contains('.') {
            let parts = s.split('.');
            let mut count = 0;
            for part in parts {
                count += 1;
                if part.len() != 4 || count > 3 {
                    return None;
                }
                for c in part.bytes() {
                    digits[k] = c;
                    k += 1;
                }
            }
            if count != 3 {
                return None;
            }
        } else {
            if s.len() != 12 {
                return None;
            }
            digits.copy_from_slice(s.as_bytes());
        }
        for (o, pair) in octets.iter_mut().zip(digits.chunks(2)) {
            *o = hex(pair[0])? << 4 | hex(pair[1])?;
        }
    }
    // written directly: `format!` with six `{:02x}` was most of this function's time
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = [b':'; 17];
    for (k, o) in octets.iter().enumerate() {
        out[3 * k] = HEX[usize::from(o >> 4)];
        out[3 * k + 1] = HEX[usize::from(o & 15)];
    }
    Some(Mac(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_ascii_address_is_not_a_mac_and_no_panic() {
        assert_eq!(normalize_mac("/ⴗূ𞢇="), None);
        assert_eq!(normalize_mac("ⴗⴗⴗⴗ"), None);
        assert_eq!(normalize_mac("ａａ:bb:cc:dd:ee:ff"), None);
    }

    /// The allocating version this one replaced (kept to compare with).
    fn normalize_mac_before(input: &str) -> Option<String> {
        let s = input.trim();
        // a MAC is ASCII; the byte slicing below relies on it (a 12-byte non-ASCII address panicked)
        if s.is_empty() || !s.is_ascii() {
            return None;
        }
        let octets: Vec<String> = if s.contains([':', '-']) {
            let parts: Vec<&str> = s.split([':', '-']).collect();
            if parts.len() != 6 || parts.iter().any(|p| p.is_empty() || p.len() > 2) {
                return None;
            }
            parts.iter().map(|p| format!("{:0>2}", p.to_ascii_lowercase())).collect()
        } else {
            let hex: String = if s.contains('.') {
                let parts: Vec<&str> = s.split('.').collect();
                if parts.len() != 3 || parts.iter().any(|p| p.len() != 4) {
                    return None;
                }
                parts.concat()
            } else {
                s.to_string()
            };
            if hex.len() != 12 {
                return None;
            }
            (0..6).map(|i| hex[i * 2..i * 2 + 2].to_ascii_lowercase()).collect()
        };
        if octets.iter().all(|o| o.chars().all(|c| c.is_ascii_hexdigit())) {
            Some(octets.join(":"))
        } else {
            None
        }
    }

    #[test]
    fn mac_forms() {
        for (i, o) in [
            ("52:54:00:AB:cd:01", Some("52:54:00:ab:cd:01")),
            ("52-54-00-AB-CD-01", Some("52:54:00:ab:cd:01")),
            ("5254.00ab.cd01", Some("52:54:00:ab:cd:01")),
            ("525400ABCD01", Some("52:54:00:ab:cd:01")),
            ("2:54:0:ab:cd:1", Some("02:54:00:ab:cd:01")),
            (" 52:54:00:ab:cd:01 ", Some("52:54:00:ab:cd:01")),
            ("52:54:00:ab:cd", None),
            ("52:54:00:ab:cd:zz", None),
            ("52:54:00:ab:cd:01:02", None),
            ("not-a-mac", None),
            ("", None),
            ("52::54:00:ab:cd", None),
        ] {
            assert_eq!(normalize_mac(i).as_ref().map(Mac::as_str), o, "{i}");
        }
    }

    proptest::proptest! {
        #[test]
        fn mac_normalisation_is_unchanged(s in proptest::prop_oneof![
            "[0-9a-fA-Fg:. -]{0,20}",
            "\\PC{0,20}",
            " ?([0-9a-fA-F]{1,3}[:-]){4,6}[0-9a-fA-Fx]{0,3} ?",
            "[0-9a-fA-F]{3,5}\\.[0-9a-fA-F]{4}\\.[0-9a-fA-F]{4,5}",
            "[0-9a-fA-FG]{11,13}",
        ]) {
            proptest::prop_assert_eq!(normalize_mac(&s).map(|m| m.to_string()), normalize_mac_before(&s));
        }
    }
}
