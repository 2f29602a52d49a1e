//! A run's id, made in one place ([`RunId::new`]: a random UUID) and read back from what earlier
//! versions stored (any non-empty text without control characters: it is shown and matched, never
//! parsed further). Ironic's markers (`extra.bm2ironic.run`), the run table, the run files and the
//! events all carry it as the same string.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(transparent)]
pub struct RunId(String);

impl RunId {
    /// A new run's id.
    pub fn new() -> RunId {
        RunId(uuid::Uuid::new_v4().to_string())
    }

    /// An id as stored or typed. `None` for text no run could have as its id (empty, over 64
    /// characters, or holding control characters): such a value matches no run.
    pub fn parse(s: &str) -> Option<RunId> {
        let ok = !s.is_empty() && s.len() <= 64 && !s.chars().any(char::is_control);
        ok.then(|| RunId(s.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first 8 characters, as file names and narrow screens show it.
    pub fn short(&self) -> &str {
        self.0.get(..8).unwrap_or(&self.0)
    }
}

impl std::ops::Deref for RunId {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for RunId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for RunId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl From<RunId> for String {
    fn from(id: RunId) -> String {
        id.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_made_once_and_read_back_as_stored() {
        let a = RunId::new();
        assert_ne!(a, RunId::new());
        assert_eq!(RunId::parse(a.as_str()), Some(a.clone()));
        assert_eq!(serde_json::to_string(&a).unwrap(), format!("\"{a}\""));
        assert_eq!(a.short().len(), 8);
        for bad in ["", "a\u{1b}[2J", &"x".repeat(65)] {
            assert_eq!(RunId::parse(bad), None, "{bad:?}");
        }
    }
}
