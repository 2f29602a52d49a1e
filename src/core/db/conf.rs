//! Operator config files (oslo.config INI: nova.conf, ironic.conf) and where each connection
//! setting comes from: flag > `BM2IRONIC_*` environment variable > config file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::core::db::secret::Secret;
use crate::core::db::url::{DbUrl, UrlError};

#[derive(Debug, thiserror::Error)]
pub enum ConfError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path} line {line}: {reason}")]
    Syntax { path: PathBuf, line: usize, reason: String },
    #[error("{path} has no [baremetal] section: it is not the nova.conf of a nova-compute that runs the baremetal driver (give that host's nova.conf, or --nova-bm-db)")]
    NoBaremetalSection { path: PathBuf },
    #[error("{path}: [{section}] {key}: {source}")]
    BadUrl { path: PathBuf, section: String, key: String, source: UrlError },
    /// `setting` is `[section] key = value`
    #[error("{path}: {setting}: {reason}")]
    BadValue { path: PathBuf, setting: String, reason: String },
    #[error("{path}: [{section}] {key} is empty: give a value or remove the line")]
    Blank { path: PathBuf, section: String, key: String },
}

/// An oslo.config style INI file: `[section]`, `key = value`, `#`/`;` comment lines, indented
/// continuation lines. Later duplicates win (as in oslo.config for single-valued options).
#[derive(Debug, Default, Clone)]
pub struct IniFile {
    pub path: PathBuf,
    sections: BTreeMap<String, BTreeMap<String, String>>,
}

impl IniFile {
    pub fn load(path: &Path) -> Result<IniFile, ConfError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ConfError::Read { path: path.to_path_buf(), source })?;
        IniFile::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<IniFile, ConfError> {
        let mut ini = IniFile { path: path.to_path_buf(), sections: BTreeMap::new() };
        let mut section: Option<String> = None;
        let mut last_key: Option<String> = None;
        for (n, raw) in text.lines().enumerate() {
            let line_no = n + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
                continue;
            }
            if raw.starts_with([' ', '\t']) {
                // continuation of the previous value
                if let (Some(s), Some(k)) = (&section, &last_key) {
                    let v = ini.sections.get_mut(s).and_then(|m| m.get_mut(k));
                    if let Some(v) = v {
                        v.push('\n');
                        v.push_str(trimmed);
                        continue;
                    }
                }
                return Err(ConfError::Syntax {
                    path: path.into(),
                    line: line_no,
                    reason: "indented line with nothing to continue".into(),
                });
            }
            if let Some(name) = trimmed.strip_prefix('[') {
                let Some(name) = name.strip_suffix(']') else {
                    return Err(ConfError::Syntax {
                        path: path.into(),
                        line: line_no,
                        reason: "section header without ']'".into(),
                    });
                };
                section = Some(name.trim().to_string());
                ini.sections.entry(name.trim().to_string()).or_default();
                last_key = None;
                continue;
            }
            let Some((k, v)) = trimmed.split_once(['=', ':']) else {
                return Err(ConfError::Syntax {
                    path: path.into(),
                    line: line_no,
                    reason: "expected 'key = value'".into(),
                });
            };
            let Some(s) = &section else {
                return Err(ConfError::Syntax {
                    path: path.into(),
                    line: line_no,
                    reason: "option outside any [section]".into(),
                });
            };
            let key = k.trim().to_string();
            ini.sections.get_mut(s).expect("section exists").insert(key.clone(), v.trim().to_string());
            last_key = Some(key);
        }
        Ok(ini)
    }

    pub fn has_section(&self, section: &str) -> bool {
        self.sections.contains_key(section)
    }

    /// A value, looked up in `section` and then `[DEFAULT]` (oslo semantics). Empty values count as unset.
    pub fn get(&self, section: &str, key: &str) -> Option<&str> {
        let v = self.sections.get(section).and_then(|m| m.get(key)).map(String::as_str);
        v.or_else(|| self.sections.get("DEFAULT").and_then(|m| m.get(key)).map(String::as_str))
            .filter(|v| !v.is_empty())
    }

    fn url(&self, section: &str, key: &str) -> Result<Option<DbUrl>, ConfError> {
        match self.sections.get(section).and_then(|m| m.get(key)) {
            None => Ok(None),
            Some(v) if v.trim().is_empty() => {
                Err(ConfError::Blank { path: self.path.clone(), section: section.into(), key: key.into() })
            }
            Some(v) => {
                let mut u = DbUrl::parse(v).map_err(|source| ConfError::BadUrl {
                    path: self.path.clone(),
                    section: section.into(),
                    key: key.into(),
                    source,
                })?;
                u.written_in = Some(format!("{} [{section}] {key}", self.path.display()));
                Ok(Some(u))
            }
        }
    }
}

/// What nova.conf's `[baremetal]` section says that the nova_bm rows do not.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct BaremetalConf {
    pub power_manager: Option<String>,
    pub virtual_power_ssh_host: Option<String>,
    pub virtual_power_ssh_port: Option<u16>,
    pub virtual_power_type: Option<String>,
    pub virtual_power_host_user: Option<String>,
    pub virtual_power_host_pass: Option<Secret>,
    pub virtual_power_host_key: Option<String>,
    pub deploy_kernel: Option<String>,
    pub deploy_ramdisk: Option<String>,
    /// `flavor_extra_specs = cpu_arch:x86_64,...` as a map
    pub flavor_extra_specs: BTreeMap<String, String>,
}

impl BaremetalConf {
    /// Default of nova's baremetal driver when `power_manager` is unset.
    pub const DEFAULT_POWER_MANAGER: &'static str = "nova.virt.baremetal.ipmi.IPMI";

    pub fn power_manager(&self) -> &str {
        self.power_manager.as_deref().unwrap_or(Self::DEFAULT_POWER_MANAGER)
    }

    pub fn cpu_arch(&self) -> Option<&str> {
        self.flavor_extra_specs.get("cpu_arch").map(String::as_str)
    }
}

/// A parsed nova.conf of a baremetal nova-compute host.
#[derive(Debug, Clone)]
pub struct NovaConf {
    pub path: PathBuf,
    pub nova_bm_db: Option<DbUrl>,
    /// `[database] connection` (instances, services; Juno/Kilo flavors)
    pub nova_db: Option<DbUrl>,
    /// `[api_database] connection` (modern Nova's flavors)
    pub nova_api_db: Option<DbUrl>,
    pub host: Option<String>,
    pub baremetal: BaremetalConf,
}

impl NovaConf {
    pub fn load(path: &Path) -> Result<NovaConf, ConfError> {
        NovaConf::from_ini(IniFile::load(path)?)
    }

    pub fn from_ini(ini: IniFile) -> Result<NovaConf, ConfError> {
        if !ini.has_section("baremetal") {
            return Err(ConfError::NoBaremetalSection { path: ini.path.clone() });
        }
        let g = |k: &str| ini.sections.get("baremetal").and_then(|m| m.get(k)).filter(|v| !v.is_empty()).cloned();
        let flavor_extra_specs = g("flavor_extra_specs")
            .map(|v| {
                v.split([',', '\n'])
                    .filter_map(|kv| {
                        kv.trim().split_once(':').map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let baremetal = BaremetalConf {
            power_manager: g("power_manager"),
            virtual_power_ssh_host: g("virtual_power_ssh_host"),
            virtual_power_ssh_port: match g("virtual_power_ssh_port") {
                None => None,
                Some(p) => {
                    Some(p.trim().parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| ConfError::BadValue {
                        path: ini.path.clone(),
                        setting: format!("[baremetal] virtual_power_ssh_port = {p}"),
                        reason: "not a TCP port (1-65535)".into(),
                    })?)
                }
            },
            virtual_power_type: g("virtual_power_type"),
            virtual_power_host_user: g("virtual_power_host_user"),
            virtual_power_host_pass: g("virtual_power_host_pass").map(Secret::new),
            virtual_power_host_key: g("virtual_power_host_key"),
            deploy_kernel: g("deploy_kernel"),
            deploy_ramdisk: g("deploy_ramdisk"),
            flavor_extra_specs,
        };
        let nova_db = match ini.url("database", "connection")? {
            Some(u) => Some(u),
            None => ini.url("DEFAULT", "sql_connection")?,
        };
        Ok(NovaConf {
            nova_bm_db: ini.url("baremetal", "sql_connection")?,
            nova_db,
            nova_api_db: ini.url("api_database", "connection")?,
            host: ini.get("DEFAULT", "host").map(str::to_string),
            path: ini.path.clone(),
            baremetal,
        })
    }
}

/// A parsed ironic.conf (only what we need: the database).
#[derive(Debug, Clone)]
pub struct IronicConf {
    pub path: PathBuf,
    pub ironic_db: Option<DbUrl>,
}

impl IronicConf {
    pub fn load(path: &Path) -> Result<IronicConf, ConfError> {
        let ini = IniFile::load(path)?;
        Ok(IronicConf { ironic_db: ini.url("database", "connection")?, path: ini.path })
    }
}

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
}

impl SettingsError {
    /// Malformed input is a usage error (exit 2); an unreadable or wrong file is a runtime one (1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            SettingsError::Url { .. }
                | SettingsError::IronicUrl { .. }
                | SettingsError::Blank { .. }
                | SettingsError::Conf(ConfError::BadUrl { .. } | ConfError::Blank { .. } | ConfError::BadValue { .. })
        )
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
}

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
        Ok(ConnectionSettings { nova_bm_db, ironic_db, nova_db, nova_api_db, ironic_url, nova_conf, ironic_conf })
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

#[cfg(test)]
mod tests {
    use super::*;

    const NOVA_CONF: &str = "\
[DEFAULT]
host = bm-compute-1
sql_connection = mysql://nova:novapw@db/nova

[database]
# newer form wins over [DEFAULT] sql_connection
connection = mysql+pymysql://nova:novapw@db/nova?charset=utf8

[api_database]
connection = mysql+pymysql://nova:apipw@db/nova_api?charset=utf8

[baremetal]
sql_connection = mysql+pymysql://nova:bmpw@db/nova_bm?charset=utf8
power_manager = nova.virt.baremetal.virtual_power_driver.VirtualPowerManager
virtual_power_ssh_host = 10.0.0.1
virtual_power_ssh_port = 2222
virtual_power_type = virsh
virtual_power_host_user = stack
virtual_power_host_pass = sshpw
deploy_kernel = 1111-kernel
deploy_ramdisk = 2222-ramdisk
flavor_extra_specs = cpu_arch:x86_64, hw:foo:bar
";

    fn nova_conf() -> NovaConf {
        NovaConf::from_ini(IniFile::parse(Path::new("nova.conf"), NOVA_CONF).unwrap()).unwrap()
    }

    #[test]
    fn nova_conf_baremetal_section() {
        let c = nova_conf();
        assert_eq!(c.nova_bm_db.as_ref().unwrap().database.as_deref(), Some("nova_bm"));
        assert_eq!(c.nova_db.as_ref().unwrap().param("charset"), Some("utf8"));
        assert_eq!(c.nova_api_db.as_ref().unwrap().database.as_deref(), Some("nova_api"));
        let bm = &c.baremetal;
        assert!(bm.power_manager().ends_with("VirtualPowerManager"));
        assert_eq!(bm.virtual_power_ssh_port, Some(2222));
        assert_eq!(bm.virtual_power_host_pass.as_ref().unwrap().expose(), "sshpw");
        assert_eq!(bm.cpu_arch(), Some("x86_64"));
        assert_eq!(bm.flavor_extra_specs.get("hw"), Some(&"foo:bar".to_string()));
        assert_eq!(bm.deploy_kernel.as_deref(), Some("1111-kernel"));
        assert!(!format!("{c:?}").contains("sshpw"));
        assert!(!format!("{c:?}").contains("bmpw"));
        assert!(!format!("{c:?}").contains("apipw"));
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
    fn default_power_manager_is_ipmi() {
        let ini = IniFile::parse(Path::new("n"), "[baremetal]\nsql_connection = sqlite:////x.db\n").unwrap();
        assert_eq!(NovaConf::from_ini(ini).unwrap().baremetal.power_manager(), BaremetalConf::DEFAULT_POWER_MANAGER);
    }

    #[test]
    fn nova_conf_without_baremetal_is_refused() {
        let ini = IniFile::parse(Path::new("/etc/nova/nova.conf"), "[DEFAULT]\nhost=x\n").unwrap();
        let e = NovaConf::from_ini(ini).unwrap_err();
        assert!(e.to_string().contains("no [baremetal] section"), "{e}");
    }

    #[test]
    fn ini_continuation_and_syntax_errors() {
        let ini = IniFile::parse(Path::new("x"), "[a]\nk = one\n  two\n").unwrap();
        assert_eq!(ini.get("a", "k"), Some("one\ntwo"));
        let e = IniFile::parse(Path::new("x"), "k = v\n").unwrap_err();
        assert!(e.to_string().contains("line 1"), "{e}");
        assert!(IniFile::parse(Path::new("x"), "[a\n").is_err());
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
        assert!(e.is_usage());
        assert!(e.to_string().contains("command line"));
    }
}
