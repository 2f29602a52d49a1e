//! The words of `bm2ironic config`: which file a change is for, a value that may be a secret, one
//! change (section, option, old -> new, why), and what the computation takes and gives.

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use crate::core::db::secret::Secret;
use crate::core::db::url::{redact_url, DbUrl};
use crate::core::ironic::target::TargetKind;
use crate::core::settings::conf_file::IniFile;

/// The file a change is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfFile {
    Nova,
    Ironic,
}

/// A value written into a config file. A secret (a password, a URL that holds one) is shown
/// masked everywhere and only written into the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfValue {
    Plain(String),
    Secret { value: Secret, shown: String },
}

impl ConfValue {
    pub fn plain(v: impl Into<String>) -> ConfValue {
        ConfValue::Plain(v.into())
    }

    /// A password: shown as `***`.
    pub fn password(v: Secret) -> ConfValue {
        ConfValue::Secret { value: v, shown: "***".into() }
    }

    /// What an existing file says for `key`: a password option or a URL that holds a password is
    /// a secret.
    pub fn existing(key: &str, v: &str) -> ConfValue {
        if is_password_key(key) {
            ConfValue::password(Secret::new(v.to_string()))
        } else if redact_url(v) != v {
            ConfValue::Secret { value: Secret::new(v.to_string()), shown: redact_url(v) }
        } else {
            ConfValue::Plain(v.to_string())
        }
    }

    /// A database URL in the SQLAlchemy form the target release reads, shown redacted.
    pub fn db_url(url: &DbUrl, target: TargetKind) -> ConfValue {
        let raw = sqlalchemy_form(url.expose_url(), target);
        ConfValue::Secret { shown: redact_url(&raw), value: Secret::new(raw) }
    }

    /// The value as it is written into the file.
    pub fn written(&self) -> &str {
        match self {
            ConfValue::Plain(s) => s,
            ConfValue::Secret { value, .. } => value.expose(),
        }
    }

    /// The value as it may be shown.
    pub fn shown(&self) -> &str {
        match self {
            ConfValue::Plain(s) => s,
            ConfValue::Secret { shown, .. } => shown,
        }
    }
}

/// Option names whose values are passwords (oslo's `secret=True` options bm2ironic meets).
pub fn is_password_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    k.contains("password") || k.ends_with("_pass") || k == "admin_auth_token" || k == "admin_token"
}

/// `postgres://` is sqlx's spelling; SQLAlchemy wants `postgresql`. A modern release gets the pure
/// Python MySQL driver (`mysql+pymysql`) when no driver is named; Juno keeps `mysql://` (MySQLdb).
fn sqlalchemy_form(raw: &str, target: TargetKind) -> String {
    let (scheme, rest) = raw.split_once("://").unwrap_or((raw, ""));
    let scheme = match (scheme, target) {
        ("postgres", TargetKind::Juno) => "postgresql",
        ("postgres" | "postgresql", TargetKind::Modern) => "postgresql+psycopg2",
        ("mysql", TargetKind::Modern) => "mysql+pymysql",
        (s, _) => s,
    };
    format!("{scheme}://{rest}")
}

/// One change to one option. `old` None: the option is added; `new` None: it is removed
/// (commented out in the written file).
#[derive(Debug, Clone)]
pub struct ConfChange {
    pub file: ConfFile,
    pub section: String,
    pub option: String,
    pub old: Option<ConfValue>,
    pub new: Option<ConfValue>,
    pub why: String,
}

impl ConfChange {
    pub fn action(&self) -> &'static str {
        match (&self.old, &self.new) {
            (None, _) => "add",
            (Some(_), None) => "remove",
            (Some(_), Some(_)) => "set",
        }
    }
}

impl Serialize for ConfChange {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("ConfChange", 7)?;
        st.serialize_field("file", &self.file)?;
        st.serialize_field("section", &self.section)?;
        st.serialize_field("option", &self.option)?;
        st.serialize_field("action", self.action())?;
        st.serialize_field("old", &self.old.as_ref().map(ConfValue::shown))?;
        st.serialize_field("new", &self.new.as_ref().map(ConfValue::shown))?;
        st.serialize_field("why", &self.why)?;
        st.end()
    }
}

/// The Ironic service user that nova-compute and Ironic's own token check use.
#[derive(Debug, Clone)]
pub struct ServiceUser {
    pub username: String,
    pub password: Secret,
}

/// What the computation takes: the existing files and the operator's choices.
#[derive(Debug, Clone)]
pub struct ConfInputs {
    pub target: TargetKind,
    /// the existing nova.conf (of a baremetal nova-compute host)
    pub nova: IniFile,
    /// an existing ironic.conf to start from (None: a new file)
    pub ironic: Option<IniFile>,
    /// Ironic's API endpoint (`--ironic-url`), without or with `/v1`
    pub ironic_url: Option<String>,
    /// Ironic's database (`[database] connection` of ironic.conf)
    pub ironic_db: Option<DbUrl>,
    /// `--ironic-username` and its password; None: Nova's own service user from `[keystone_authtoken]`
    pub service_user: Option<ServiceUser>,
    /// the Ironic API runs without Keystone (`auth_strategy = noauth`)
    pub noauth: bool,
    /// `[DEFAULT] host` for the nova-compute that runs every Ironic node (`--host`)
    pub host: Option<String>,
    /// `[ironic] region_name` (modern Nova)
    pub region: Option<String>,
    /// `[pxe] tftp_server` (default: nova.conf's `my_ip`)
    pub tftp_server: Option<String>,
}

/// What the computation gives: every change, warnings about what it could not fill in, and the
/// steps that follow.
#[derive(Debug, Clone, Serialize)]
pub struct ConfPlan {
    pub target: TargetKind,
    pub changes: Vec<ConfChange>,
    pub warnings: Vec<String>,
    pub next_steps: Vec<String>,
}

impl ConfPlan {
    pub fn of(&self, file: ConfFile) -> Vec<&ConfChange> {
        self.changes.iter().filter(|c| c.file == file).collect()
    }
}

/// The changes to one file, each compared with what the existing file says (an option already
/// set to the value is no change).
#[derive(Debug)]
pub struct ChangeList<'a> {
    pub file: ConfFile,
    /// the existing file (None: a new one)
    pub existing: Option<&'a IniFile>,
    pub changes: Vec<ConfChange>,
}

impl<'a> ChangeList<'a> {
    pub fn new(file: ConfFile, existing: Option<&'a IniFile>) -> ChangeList<'a> {
        ChangeList { file, existing, changes: Vec::new() }
    }

    fn old(&self, section: &str, option: &str) -> Option<ConfValue> {
        self.existing.and_then(|i| i.get_exact(section, option)).map(|v| ConfValue::existing(option, v))
    }

    /// Sets `[section] option = new`, unless it already says so.
    pub fn set(&mut self, section: &str, option: &str, new: ConfValue, why: &str) {
        let old = self.old(section, option);
        if old.as_ref().map(ConfValue::written) == Some(new.written()) {
            return;
        }
        self.changes.push(ConfChange {
            file: self.file,
            section: section.into(),
            option: option.into(),
            old,
            new: Some(new),
            why: why.into(),
        });
    }

    /// `set` with a plain value.
    pub fn set_plain(&mut self, section: &str, option: &str, new: &str, why: &str) {
        self.set(section, option, ConfValue::plain(new), why);
    }

    /// Removes `[section] option` when the existing file has it.
    pub fn remove(&mut self, section: &str, option: &str, why: &str) {
        if let Some(old) = self.old(section, option) {
            self.changes.push(ConfChange {
                file: self.file,
                section: section.into(),
                option: option.into(),
                old: Some(old),
                new: None,
                why: why.into(),
            });
        }
    }

    /// Removes every option of `[section]` (the written file comments the whole section out).
    pub fn remove_section(&mut self, section: &str, why: &str) {
        let names: Vec<String> = self
            .existing
            .map(|i| i.options(section).into_iter().map(|(k, _)| k.to_string()).collect())
            .unwrap_or_default();
        for k in names {
            self.remove(section, &k, why);
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfGenError {
    #[error("{0}")]
    Missing(String),
    #[error("{what}: {reason}")]
    BadValue { what: String, reason: String },
}

// what `config` needs and was not given, or was given wrong: the operator's to fix
crate::core::kind::always!(Usage: ConfGenError);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_masked_when_shown() {
        let v = ConfValue::existing("admin_password", "s3cret");
        assert_eq!(v.shown(), "***");
        assert_eq!(v.written(), "s3cret");
        let u = ConfValue::existing("connection", "mysql://nova:pw@db/nova");
        assert!(!u.shown().contains("pw@"), "{}", u.shown());
        assert_eq!(ConfValue::existing("host", "h1").shown(), "h1");
        let d = DbUrl::parse("postgres://ironic:pw@db:5432/ironic").unwrap();
        assert!(ConfValue::db_url(&d, TargetKind::Modern).written().starts_with("postgresql+psycopg2://ironic:pw@"));
        assert!(!ConfValue::db_url(&d, TargetKind::Juno).shown().contains("pw"));
    }
}
