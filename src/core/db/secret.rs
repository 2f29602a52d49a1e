//! Secrets: passwords and tokens travel in `Secret`, whose `Debug` and `Display` print `***`.
//! The only way to the plain value is `expose()`, so every place that reveals one is greppable.

use std::fmt;

#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The plain value. Call only where it goes to the server it belongs to.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Replaces every occurrence of this secret in `text` with `***` (last line of defence for
    /// messages that come from a driver or a server and might echo what we sent).
    pub fn scrub(&self, text: &str) -> String {
        if self.0.len() < 3 {
            // too short to scrub without mangling ordinary words; such a password is a finding anyway
            return text.to_string();
        }
        text.replace(&self.0, "***")
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl serde::Serialize for Secret {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("***")
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        // Best effort: overwrite the bytes before the allocation is freed.
        // SAFETY: writing zero bytes keeps the String valid UTF-8.
        unsafe {
            for b in self.0.as_bytes_mut() {
                std::ptr::write_volatile(b, 0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_hide_the_value() {
        let s = Secret::new("hunter22");
        assert_eq!(format!("{s}"), "***");
        assert_eq!(format!("{s:?}"), "***");
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"***\"");
        assert_eq!(s.expose(), "hunter22");
    }

    #[test]
    fn scrub_removes_every_occurrence() {
        let s = Secret::new("hunter22");
        assert_eq!(s.scrub("a hunter22 b hunter22"), "a *** b ***");
    }
}
