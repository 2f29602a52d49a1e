//! The settings, resolved once for every face: each connection from a flag, else a `BM2IRONIC_*`
//! environment variable, else nova.conf / ironic.conf, remembering where each came from (to warn
//! about a password visible in `ps`); how the Ironic API is reached (URL, Keystone, a fixed token);
//! and where API runs are kept without an Ironic database. The CLI and the wizard only collect
//! the raw values. The config files themselves are parsed in `conf_file.rs`.

pub mod baremetal;
pub mod conf_file;
pub mod file;
pub mod heartbeat;
pub mod project;

use std::path::{Path, PathBuf};

use crate::core::auth::{self, AuthError};
use crate::core::db::secret::Secret;
use crate::core::db::url::{DbUrl, UrlError};
use crate::core::ironic::api::ApiTarget;
use crate::core::source::tftp::TftpRoot;
use conf_file::{ConfError, IronicConf, NovaConf};

/// Where a setting's value came from (shown to the operator, and used to warn about `ps`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    Flag,
    Env(String),
    ConfigFile(PathBuf),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Flag => f.write_str("command line"),
            Origin::Env(name) => write!(f, "environment {name}"),
            Origin::ConfigFile(p) => write!(f, "{}", p.display()),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Setting<T> {
    pub value: T,
    pub origin: Origin,
}

/// What the command line says (raw strings, not yet parsed).
#[derive(Debug, Default, Clone)]
pub struct ConnectionFlags {
    pub nova_bm_db: Option<String>,
    pub ironic_db: Option<String>,
    pub nova_db: Option<String>,
    pub nova_api_db: Option<String>,
    pub ironic_url: Option<String>,
    pub nova_conf: Option<PathBuf>,
    pub ironic_conf: Option<PathBuf>,
    /// `--tftp-root DIR` or `HOST=DIR` (repeatable)
    pub tftp_root: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{origin}: {source}")]
    Url { origin: Origin, source: UrlError },
    #[error(transparent)]
    Conf(#[from] ConfError),
    #[error("{origin}: '{value}' is not an http(s) URL for the Ironic API")]
    IronicUrl { origin: Origin, value: String },
    /// `--flag ''` or `VAR=` (the easy mistake is an unset shell variable): never taken as a value
    #[error("{what} is empty (an unset shell variable?): give a value, or leave it out")]
    Blank { what: String },
    #[error("{0}")]
    TftpRoot(String),
}

impl crate::core::kind::HasKind for SettingsError {
    /// Malformed input is the operator's; a config file's problems are the file's own kind.
    fn kind(&self) -> crate::core::kind::Kind {
        use crate::core::kind::Kind;
        match self {
            SettingsError::Url { .. }
            | SettingsError::IronicUrl { .. }
            | SettingsError::Blank { .. }
            | SettingsError::TftpRoot(_) => Kind::Usage,
            SettingsError::Conf(e) => e.kind(),
        }
    }
}

/// Every connection, resolved: flag > environment > config file.
#[derive(Debug, Clone, Default)]
pub struct ConnectionSettings {
    pub nova_bm_db: Option<Setting<DbUrl>>,
    pub ironic_db: Option<Setting<DbUrl>>,
    pub nova_db: Option<Setting<DbUrl>>,
    /// modern Nova's API database (flavors); None: flavors are looked for in `nova_db`
    pub nova_api_db: Option<Setting<DbUrl>>,
    pub ironic_url: Option<Setting<String>>,
    pub nova_conf: Option<NovaConf>,
    pub ironic_conf: Option<IronicConf>,
    /// copies of the compute hosts' TFTP trees: `--tftp-root` (repeatable) > `BM2IRONIC_TFTP_ROOT`
    /// (one bare DIR) > nova.conf `[baremetal] tftp_root`; empty: none given
    pub tftp_roots: Vec<TftpRoot>,
}

pub const ENV_TFTP_ROOT: &str = "BM2IRONIC_TFTP_ROOT";
pub const ENV_NOVA_BM_DB: &str = "BM2IRONIC_NOVA_BM_DB";
pub const ENV_IRONIC_DB: &str = "BM2IRONIC_IRONIC_DB";
pub const ENV_NOVA_DB: &str = "BM2IRONIC_NOVA_DB";
pub const ENV_NOVA_API_DB: &str = "BM2IRONIC_NOVA_API_DB";
pub const ENV_IRONIC_URL: &str = "BM2IRONIC_IRONIC_URL";

impl ConnectionSettings {
    /// Resolves the settings. `env` is a lookup (the process environment in production, a map in tests).
    pub fn resolve(
        flags: &ConnectionFlags,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ConnectionSettings, SettingsError> {
        let nova_conf = flags.nova_conf.as_deref().map(NovaConf::load).transpose()?;
        let ironic_conf = flags.ironic_conf.as_deref().map(IronicConf::load).transpose()?;

        // a flag or variable that is set but blank is a mistake, not "unset"
        let given =
            |flag: &Option<String>, name: &str, var: &str| -> Result<(Option<String>, Option<String>), SettingsError> {
                if flag.as_deref().is_some_and(|v| v.trim().is_empty()) {
                    return Err(SettingsError::Blank { what: name.to_string() });
                }
                let e = env(var);
                if flag.is_none() && e.as_deref().is_some_and(|v| v.trim().is_empty()) {
                    return Err(SettingsError::Blank { what: format!("environment variable {var}") });
                }
                Ok((flag.clone(), e))
            };
        let db = |flag: &Option<String>,
                  name: &str,
                  var: &str,
                  from_conf: Option<(&DbUrl, &Path)>|
         -> Result<Option<Setting<DbUrl>>, SettingsError> {
            let (flag, env_value) = given(flag, name, var)?;
            let (raw, origin) = match (&flag, env_value) {
                (Some(v), _) => (v.clone(), Origin::Flag),
                (None, Some(v)) => (v, Origin::Env(var.to_string())),
                (None, None) => {
                    return Ok(from_conf
                        .map(|(u, p)| Setting { value: u.clone(), origin: Origin::ConfigFile(p.to_path_buf()) }))
                }
            };
            let value = DbUrl::parse(&raw).map_err(|source| SettingsError::Url { origin: origin.clone(), source })?;
            Ok(Some(Setting { value, origin }))
        };

        let nova_bm_db = db(
            &flags.nova_bm_db,
            "--nova-bm-db",
            ENV_NOVA_BM_DB,
            nova_conf.as_ref().and_then(|c| c.nova_bm_db.as_ref().map(|u| (u, c.path.as_path()))),
        )?;
        let nova_db = db(
            &flags.nova_db,
            "--nova-db",
            ENV_NOVA_DB,
            nova_conf.as_ref().and_then(|c| c.nova_db.as_ref().map(|u| (u, c.path.as_path()))),
        )?;
        let nova_api_db = db(
            &flags.nova_api_db,
            "--nova-api-db",
            ENV_NOVA_API_DB,
            nova_conf.as_ref().and_then(|c| c.nova_api_db.as_ref().map(|u| (u, c.path.as_path()))),
        )?;
        let ironic_db = db(
            &flags.ironic_db,
            "--ironic-db",
            ENV_IRONIC_DB,
            ironic_conf.as_ref().and_then(|c| c.ironic_db.as_ref().map(|u| (u, c.path.as_path()))),
        )?;

        let ironic_url = match given(&flags.ironic_url, "--ironic-url", ENV_IRONIC_URL)? {
            (Some(v), _) => Some(Setting { value: v, origin: Origin::Flag }),
            (None, Some(v)) => Some(Setting { value: v, origin: Origin::Env(ENV_IRONIC_URL.into()) }),
            (None, None) => None,
        };
        if let Some(s) = &ironic_url {
            if !(s.value.starts_with("http://") || s.value.starts_with("https://")) {
                return Err(SettingsError::IronicUrl {
                    origin: s.origin.clone(),
                    value: crate::core::db::url::redact_url(&s.value),
                });
            }
        }
        let tftp_roots = tftp_roots(flags, env, nova_conf.as_ref())?;
        Ok(ConnectionSettings {
            nova_bm_db,
            ironic_db,
            nova_db,
            nova_api_db,
            ironic_url,
            nova_conf,
            ironic_conf,
            tftp_roots,
        })
    }

    /// Where the flavors are: the Nova API database (modern Nova) when given, else the Nova database.
    pub fn flavors_db(&self) -> Option<&Setting<DbUrl>> {
        self.nova_api_db.as_ref().or(self.nova_db.as_ref())
    }

    /// Warnings for the operator: passwords given on the command line are visible in `ps`.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (flag, var, s) in [
            ("--nova-bm-db", ENV_NOVA_BM_DB, &self.nova_bm_db),
            ("--ironic-db", ENV_IRONIC_DB, &self.ironic_db),
            ("--nova-db", ENV_NOVA_DB, &self.nova_db),
            ("--nova-api-db", ENV_NOVA_API_DB, &self.nova_api_db),
        ] {
            if let Some(s) = s {
                if s.origin == Origin::Flag && s.value.password.as_ref().is_some_and(|p| !p.is_empty()) {
                    out.push(format!(
                        "warning: the password in {flag} is visible to other local users (ps, /proc); prefer the environment variable {var} or --nova-conf/--ironic-conf"
                    ));
                }
            }
        }
        out
    }
}

/// A fixed token for the Ironic API, used only without Keystone credentials.
pub const ENV_IRONIC_TOKEN: &str = "BM2IRONIC_IRONIC_TOKEN";
/// Where API runs are recorded without an Ironic database.
pub const ENV_STATE_DIR: &str = "BM2IRONIC_STATE_DIR";

/// The token of `BM2IRONIC_IRONIC_TOKEN` (blank: none).
fn fixed_token(env: &dyn Fn(&str) -> Option<String>) -> Option<Secret> {
    env(ENV_IRONIC_TOKEN).filter(|t| !t.trim().is_empty()).map(Secret::new)
}

impl ConnectionSettings {
    /// How to reach the Ironic API: the URL of these settings (`--ironic-url`, `BM2IRONIC_IRONIC_URL`;
    /// it overrides the catalog), Keystone credentials (`os_cloud`, else `OS_CLOUD`, else the `OS_*`
    /// variables), and `BM2IRONIC_IRONIC_TOKEN` when there are no Keystone credentials. Every face
    /// reaches the API through this (or [`api_target_of_field`] for the wizard's one field).
    pub fn api_target(
        &self,
        os_cloud: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ApiTarget, AuthError> {
        let auth = auth::resolve(os_cloud, env)?;
        let token = if auth.is_none() { fixed_token(env) } else { None };
        Ok(ApiTarget { url: self.ironic_url.as_ref().map(|s| s.value.clone()), auth, token })
    }
}

/// The wizard's Ironic API field: a URL (noauth, or `BM2IRONIC_IRONIC_TOKEN`), or the name of a
/// cloud of clouds.yaml (Keystone; the endpoint from the catalog). Empty: no API.
pub fn api_target_of_field(value: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<ApiTarget, AuthError> {
    let value = value.trim();
    if value.is_empty() {
        return Ok(ApiTarget::default());
    }
    if value.contains("://") {
        return Ok(ApiTarget { url: Some(value.to_string()), auth: None, token: fixed_token(env) });
    }
    Ok(ApiTarget { url: None, auth: Some(auth::config::from_cloud(value, env)?), token: None })
}

/// The password of the Ironic service user `bm2ironic config --ironic-username` names (only from
/// the environment: a password on the command line is visible in `ps`).
pub const ENV_IRONIC_SERVICE_PASSWORD: &str = "BM2IRONIC_IRONIC_SERVICE_PASSWORD";

pub fn ironic_service_password(env: &dyn Fn(&str) -> Option<String>) -> Option<crate::core::db::secret::Secret> {
    env(ENV_IRONIC_SERVICE_PASSWORD).filter(|v| !v.is_empty()).map(crate::core::db::secret::Secret::new)
}

/// The TFTP trees: every `--tftp-root`, else `BM2IRONIC_TFTP_ROOT` (one bare DIR), else nova.conf
/// `[baremetal] tftp_root` (for every host).
fn tftp_roots(
    flags: &ConnectionFlags,
    env: &dyn Fn(&str) -> Option<String>,
    conf: Option<&NovaConf>,
) -> Result<Vec<TftpRoot>, SettingsError> {
    if !flags.tftp_root.is_empty() {
        return flags.tftp_root.iter().map(|r| TftpRoot::parse(r).map_err(SettingsError::TftpRoot)).collect();
    }
    if let Some(v) = env(ENV_TFTP_ROOT) {
        if v.trim().is_empty() {
            return Err(SettingsError::Blank { what: format!("environment variable {ENV_TFTP_ROOT}") });
        }
        return Ok(vec![TftpRoot { host: None, dir: PathBuf::from(v.trim()) }]);
    }
    Ok(conf
        .and_then(|c| c.baremetal.tftp_root.as_ref())
        .map(|d| vec![TftpRoot { host: None, dir: PathBuf::from(d) }])
        .unwrap_or_default())
}

/// Where API runs are kept without an Ironic database: `flag` (`--state-dir`) >
/// `BM2IRONIC_STATE_DIR` > `~/.local/state/bm2ironic/runs` (beside the audit log) > `./bm2ironic-runs`.
pub fn state_dir(flag: Option<PathBuf>, env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    flag.filter(|p| !p.as_os_str().is_empty())
        .or_else(|| env(ENV_STATE_DIR).filter(|v| !v.is_empty()).map(PathBuf::from))
        .or_else(|| crate::audit::default_dir().map(|d| d.join("runs")))
        .unwrap_or_else(|| PathBuf::from("bm2ironic-runs"))
}

/// The audit log's directory as given: `flag` (`--log-dir`) > `BM2IRONIC_LOG_DIR`; None leaves it to
/// the audit log's default ([`crate::audit::default_dir`]).
pub fn log_dir(flag: Option<PathBuf>, env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    flag.or_else(|| env(crate::audit::ENV_LOG_DIR).map(PathBuf::from))
}

/// The Keystone cloud named for the Ironic API: `flag` (`--os-cloud`) > `OS_CLOUD`; a blank one is none.
pub fn os_cloud(flag: Option<&str>, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    flag.map(str::to_string).or_else(|| env("OS_CLOUD")).filter(|c| !c.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use conf_file::tests::NOVA_CONF;

    #[test]
    fn the_log_dir_and_the_cloud_flag_over_environment() {
        let env = |k: &str| match k {
            "BM2IRONIC_LOG_DIR" => Some("/from/env".to_string()),
            "OS_CLOUD" => Some("envcloud".to_string()),
            _ => None,
        };
        let none = |_: &str| None;
        let blank = |k: &str| (k == "OS_CLOUD").then(String::new);
        assert_eq!(log_dir(Some("/flag".into()), &env), Some(PathBuf::from("/flag")));
        assert_eq!(log_dir(None, &env), Some(PathBuf::from("/from/env")));
        assert_eq!(log_dir(None, &none), None);
        assert_eq!(os_cloud(Some("flagcloud"), &env).as_deref(), Some("flagcloud"));
        assert_eq!(os_cloud(None, &env).as_deref(), Some("envcloud"));
        assert_eq!(os_cloud(None, &blank), None, "OS_CLOUD= (unset in a shell script) names no cloud");
        assert_eq!(os_cloud(Some(""), &env), None);
    }

    #[test]
    fn flavors_are_in_nova_api_when_given_else_in_nova() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("nova.conf");
        std::fs::write(&p, NOVA_CONF).unwrap();
        let flags = ConnectionFlags { nova_conf: Some(p.clone()), ..Default::default() };
        let s = ConnectionSettings::resolve(&flags, &|_| None).unwrap();
        assert_eq!(s.nova_db.as_ref().unwrap().value.database.as_deref(), Some("nova"));
        assert_eq!(s.flavors_db().unwrap().value.database.as_deref(), Some("nova_api"));
        let env = |k: &str| (k == ENV_NOVA_API_DB).then(|| "sqlite:////srv/api.sqlite".to_string());
        let s = ConnectionSettings::resolve(&flags, &env).unwrap();
        assert_eq!(s.nova_api_db.as_ref().unwrap().origin, Origin::Env(ENV_NOVA_API_DB.into()));
        let flags = ConnectionFlags {
            nova_db: Some("sqlite:////srv/nova.sqlite".into()),
            nova_api_db: Some("mysql://u:flagpw@h/nova_api".into()),
            ..Default::default()
        };
        let s = ConnectionSettings::resolve(&flags, &|_| None).unwrap();
        assert!(s.warnings().iter().any(|w| w.contains("--nova-api-db") && !w.contains("flagpw")));
        let flags = ConnectionFlags { nova_db: Some("sqlite:////srv/nova.sqlite".into()), ..Default::default() };
        let s = ConnectionSettings::resolve(&flags, &|_| None).unwrap();
        assert!(s.flavors_db().unwrap().value.redacted().to_string().ends_with("/srv/nova.sqlite"));
    }

    #[test]
    fn precedence_flag_then_env_then_conf() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("nova.conf");
        std::fs::write(&p, NOVA_CONF).unwrap();
        let mut flags = ConnectionFlags { nova_conf: Some(p.clone()), ..Default::default() };
        let env_with = |v: &'static str| move |k: &str| (k == ENV_NOVA_BM_DB).then(|| v.to_string());

        let s = ConnectionSettings::resolve(&flags, &|_| None).unwrap();
        assert_eq!(s.nova_bm_db.as_ref().unwrap().origin, Origin::ConfigFile(p.clone()));
        assert!(s.warnings().is_empty());

        let s = ConnectionSettings::resolve(&flags, &env_with("postgresql://u:envpw@h/nova_bm")).unwrap();
        assert_eq!(s.nova_bm_db.as_ref().unwrap().origin, Origin::Env(ENV_NOVA_BM_DB.into()));
        assert!(s.warnings().is_empty(), "env passwords are not visible in ps");

        flags.nova_bm_db = Some("sqlite:////tmp/flag.db".into());
        let s = ConnectionSettings::resolve(&flags, &env_with("postgresql://u:envpw@h/nova_bm")).unwrap();
        assert_eq!(s.nova_bm_db.as_ref().unwrap().origin, Origin::Flag);
        assert!(s.warnings().is_empty(), "no password, no warning");

        flags.nova_bm_db = Some("mysql://u:flagpw@h/nova_bm".into());
        let s = ConnectionSettings::resolve(&flags, &|_| None).unwrap();
        let w = s.warnings();
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("--nova-bm-db") && w[0].contains(ENV_NOVA_BM_DB) && !w[0].contains("flagpw"));
    }

    #[test]
    fn malformed_flag_url_is_a_usage_error() {
        let flags = ConnectionFlags { nova_bm_db: Some("mysql://u:pw@h:notaport/x".into()), ..Default::default() };
        let e = ConnectionSettings::resolve(&flags, &|_| None).unwrap_err();
        assert_eq!(crate::core::kind::HasKind::kind(&e), crate::core::kind::Kind::Usage);
        assert!(e.to_string().contains("command line"));
    }

    #[test]
    fn the_api_target_is_resolved_once_for_every_face() {
        let env = |k: &str| match k {
            ENV_IRONIC_TOKEN => Some("tok-123".to_string()),
            _ => None,
        };
        let s = ConnectionSettings {
            ironic_url: Some(Setting { value: "http://ironic:6385".into(), origin: Origin::Flag }),
            ..Default::default()
        };
        let t = s.api_target(None, &env).unwrap();
        assert_eq!(t.url.as_deref(), Some("http://ironic:6385"));
        assert!(t.auth.is_none());
        assert_eq!(t.token.as_ref().map(|t| t.expose().to_string()).as_deref(), Some("tok-123"));
        // a blank token is none
        let blank = |k: &str| (k == ENV_IRONIC_TOKEN).then(|| "  ".to_string());
        assert!(s.api_target(None, &blank).unwrap().token.is_none());
        // the wizard's field: the same URL gives the same target
        let f = api_target_of_field(" http://ironic:6385 ", &env).unwrap();
        assert_eq!((f.url, f.token.map(|t| t.expose().to_string())), (t.url, Some("tok-123".to_string())));
        assert!(!api_target_of_field("", &env).unwrap().given());
        // a cloud name that clouds.yaml does not have is named
        let e = api_target_of_field("no-such-cloud", &|_| None).unwrap_err().to_string();
        assert!(e.contains("no-such-cloud"), "{e}");
    }

    #[test]
    fn state_dir_flag_then_env_then_default() {
        let env = |k: &str| (k == ENV_STATE_DIR).then(|| "/srv/runs".to_string());
        assert_eq!(state_dir(Some("/flag".into()), &env), PathBuf::from("/flag"));
        assert_eq!(state_dir(None, &env), PathBuf::from("/srv/runs"));
        assert_ne!(state_dir(None, &|_| None), PathBuf::from("/srv/runs"));
    }
}
