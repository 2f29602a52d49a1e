//! The fields of the connections form: which one ([`Field`], also named by the connection tests'
//! effects and messages), and one field's input, its kind (a database, the Ironic API, a plain
//! option), whether it is well-formed, and where its connection test stands ([`Entry`]).

use tui_input::Input;

use crate::core::db::url::{redact_url, DbUrl};

/// The form's fields, in screen order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    NovaBmDb,
    IronicDb,
    NovaDb,
    NovaApiDb,
    IronicApi,
    DeployKernel,
    DeployRamdisk,
    DefaultArch,
    ResourceClass,
}

impl Field {
    pub const ALL: [Field; 9] = [
        Field::NovaBmDb,
        Field::IronicDb,
        Field::NovaDb,
        Field::NovaApiDb,
        Field::IronicApi,
        Field::DeployKernel,
        Field::DeployRamdisk,
        Field::DefaultArch,
        Field::ResourceClass,
    ];

    pub(crate) fn index(self) -> usize {
        Field::ALL.iter().position(|f| *f == self).unwrap_or(0)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldStatus {
    Empty,
    Invalid(String),
    Untested,
    Testing,
    Ok(String),
    Failed(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    Database,
    Http,
    Text,
}

/// One input of the form.
#[derive(Debug, Clone)]
pub struct Entry {
    pub label: &'static str,
    pub input: Input,
    pub kind: FieldKind,
    pub required: bool,
    pub reveal: bool,
    pub status: FieldStatus,
    /// bumped by every edit: a test result for an older value is dropped
    pub generation: u64,
    /// edited and not tested since: (the tick the edit was first seen at)
    pub(super) pending: Option<Option<usize>>,
}

impl Entry {
    pub(super) fn new(label: &'static str, kind: FieldKind, required: bool, value: Option<String>) -> Entry {
        let mut f = Entry {
            label,
            input: Input::new(value.unwrap_or_default()),
            kind,
            required,
            reveal: false,
            status: FieldStatus::Empty,
            generation: 0,
            pending: None,
        };
        f.validate();
        f
    }

    pub fn value(&self) -> &str {
        self.input.value().trim()
    }

    /// What the screen shows: URLs with the password masked unless revealed.
    pub fn shown(&self) -> String {
        if self.reveal || self.kind == FieldKind::Text {
            self.input.value().to_string()
        } else {
            redact_url(self.input.value()).replace("***", "•••")
        }
    }

    /// A connection (database or API), not a plain option.
    pub fn is_connection(&self) -> bool {
        self.kind != FieldKind::Text
    }

    /// Ready to be tested: a connection with a well-formed value.
    pub(super) fn testable(&self) -> bool {
        self.is_connection()
            && matches!(self.status, FieldStatus::Untested | FieldStatus::Ok(_) | FieldStatus::Failed(_))
    }

    pub fn has_secret(&self) -> bool {
        self.kind != FieldKind::Text && redact_url(self.input.value()) != self.input.value()
    }

    pub(super) fn validate(&mut self) {
        let v = self.value();
        self.status = if self.input.value().is_empty() {
            FieldStatus::Empty
        } else if v.is_empty() {
            // blanks are a mistake, never a value (an empty field is "not given")
            FieldStatus::Invalid("only blanks: clear the field or give a value".into())
        } else {
            match self.kind {
                FieldKind::Database => match DbUrl::parse(v) {
                    Ok(_) => FieldStatus::Untested,
                    Err(e) => FieldStatus::Invalid(e.reason),
                },
                FieldKind::Http if !(v.starts_with("http://") || v.starts_with("https://") || is_cloud_name(v)) => {
                    FieldStatus::Invalid("must start with http(s):// or a cloud".into())
                }
                _ => FieldStatus::Untested,
            }
        };
    }
}

/// A cloud of clouds.yaml rather than a URL (Keystone finds Ironic in the catalog).
pub fn is_cloud_name(v: &str) -> bool {
    // no dots: `ironic.example` is a host typed without its scheme, not a cloud
    !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric() || "-_".contains(c))
}
