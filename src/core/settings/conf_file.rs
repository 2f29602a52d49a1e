//! Operator config files (oslo.config INI: nova.conf, ironic.conf): the parser, and what bm2ironic
//! reads of each (nova.conf's connections, host and `[baremetal]` section; ironic.conf's database).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::core::db::secret::Secret;
use crate::core::db::url::{DbUrl, UrlError};
use crate::core::settings::baremetal::BaremetalConf;
use crate::core::settings::file::{self, FileProblem, MAX_CONFIG_FILE};
use crate::core::settings::heartbeat::Heartbeats;

#[derive(Debug, thiserror::Error)]
pub enum ConfError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    /// not a regular file, over the bound, not UTF-8
    #[error("cannot read {path}: {problem}")]
    File { path: PathBuf, problem: FileProblem },
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

/// The text of a config file: a regular file of at most [`MAX_CONFIG_FILE`] bytes of UTF-8.
pub fn read_text(path: &Path) -> Result<String, ConfError> {
    file::read_text(path, MAX_CONFIG_FILE).map_err(|problem| match problem {
        FileProblem::Io(source) => ConfError::Read { path: path.to_path_buf(), source },
        problem => ConfError::File { path: path.to_path_buf(), problem },
    })
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
        IniFile::parse(path, &read_text(path)?)
    }

    pub fn parse(path: &Path, text: &str) -> Result<IniFile, ConfError> {
        if text.starts_with('\u{feff}') {
            // oslo.config reads with Python's "utf-8" codec, which keeps the mark: its parser then
            // fails on line 1 ("No ':' or '=' found in assignment: '\ufeff[DEFAULT]'")
            return Err(ConfError::Syntax {
                path: path.into(),
                line: 1,
                reason: "the file starts with a byte order mark (U+FEFF), which oslo.config refuses too (nova and Ironic would not start with it): save the file without one".into(),
            });
        }
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

    /// A value as written in `section` itself (no `[DEFAULT]` fallback), blank ones included.
    pub fn get_exact(&self, section: &str, key: &str) -> Option<&str> {
        self.sections.get(section).and_then(|m| m.get(key)).map(String::as_str)
    }

    /// The options written in `section`, in name order (empty when there is no such section).
    pub fn options(&self, section: &str) -> Vec<(&str, &str)> {
        self.sections
            .get(section)
            .map(|m| m.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect())
            .unwrap_or_default()
    }

    /// `[section] key` as oslo.config gives it to the service: `$name` and `${name}` replaced by the
    /// value of option `name` (in `section`, else `[DEFAULT]`; `${group.name}` in `[group]`),
    /// recursively; `$$` and `\$` are a `$`. `Ok(None)` when the file does not set it. An option
    /// the file does not set cannot be substituted here (its default is the service's: nova's
    /// `state_path` defaults to where its Python package is installed), so it is refused, naming
    /// the setting, rather than guessed.
    pub fn interpolated(&self, section: &str, key: &str) -> Result<Option<String>, ConfError> {
        let Some(raw) = self.get_exact(section, key) else { return Ok(None) };
        self.substitute(section, raw, 0).map(Some).map_err(|reason| ConfError::BadValue {
            path: self.path.clone(),
            setting: format!("[{section}] {key} = {raw}"),
            reason,
        })
    }

    fn substitute(&self, section: &str, value: &str, depth: usize) -> Result<String, String> {
        if depth > 8 {
            return Err("its substitutions refer to each other without end".into());
        }
        let value = value.replace("\\$", "$$");
        let b = value.as_bytes();
        let mut out = String::with_capacity(value.len());
        let mut k = 0;
        // oslo.config's Template: idpattern `[_a-z][\._a-z0-9]*`, case-insensitive
        let ident = |from: usize| {
            let mut e = from;
            while e < b.len() && (b[e].is_ascii_alphanumeric() || b[e] == b'_' || (e > from && b[e] == b'.')) {
                if e == from && b[e].is_ascii_digit() {
                    break;
                }
                e += 1;
            }
            e
        };
        while k < b.len() {
            if b[k] != b'$' {
                let next = value[k..].find('$').map_or(b.len(), |n| k + n);
                out.push_str(&value[k..next]);
                k = next;
                continue;
            }
            let (name, end) = match b.get(k + 1) {
                Some(b'$') => {
                    out.push('$');
                    k += 2;
                    continue;
                }
                Some(b'{') => match value[k + 2..].find('}') {
                    Some(n) if ident(k + 2) == k + 2 + n && n > 0 => (&value[k + 2..k + 2 + n], k + 3 + n),
                    _ => return Err(format!("'{}' is not a substitution oslo.config reads", &value[k..])),
                },
                _ => {
                    let e = ident(k + 1);
                    if e == k + 1 {
                        // a `$` before no name is left as it is (oslo.config's safe_substitute)
                        out.push('$');
                        k += 1;
                        continue;
                    }
                    (&value[k + 1..e], e)
                }
            };
            let found = match name.split_once('.') {
                Some((g, o)) => self.get_exact(g, o).map(|v| (g, v)),
                None => None,
            }
            .or_else(|| self.get_exact(section, name).map(|v| (section, v)))
            .or_else(|| self.get_exact("DEFAULT", name).map(|v| ("DEFAULT", v)));
            let Some((in_section, v)) = found else {
                let default = if name == "state_path" || name == "pybasedir" {
                    " (nova's own default for it is the directory its Python package is installed in, which bm2ironic cannot know)"
                } else {
                    ""
                };
                return Err(format!(
                    "it uses ${name}, which this file does not set{default}: set [DEFAULT] {name} in it, or write the path out"
                ));
            };
            out.push_str(&self.substitute(in_section, v, depth + 1)?);
            k = end;
        }
        Ok(out)
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
    /// `[DEFAULT] service_down_time`, `report_interval`, `servicegroup_driver`: when Nova counts
    /// this host's nova-compute down
    pub heartbeats: Heartbeats,
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
            // as nova read it: `$state_path/tftp` is nova's state_path, not ours
            tftp_root: ini.interpolated("baremetal", "tftp_root")?.filter(|v| !v.trim().is_empty()),
            flavor_extra_specs,
        };
        let nova_db = match ini.url("database", "connection")? {
            Some(u) => Some(u),
            None => ini.url("DEFAULT", "sql_connection")?,
        };
        let int = |key: &str| -> Result<Option<i64>, ConfError> {
            let Some(v) = ini.get("DEFAULT", key).filter(|v| !v.trim().is_empty()) else { return Ok(None) };
            v.trim().parse::<i64>().map(Some).map_err(|_| ConfError::BadValue {
                path: ini.path.clone(),
                setting: format!("[DEFAULT] {key} = {}", crate::core::text::visible_line(v)),
                reason: "not a whole number of seconds, as Nova reads it".into(),
            })
        };
        let heartbeats = Heartbeats::from_conf(
            &ini.path,
            int("service_down_time")?,
            int("report_interval")?,
            ini.get("DEFAULT", "servicegroup_driver"),
        );
        Ok(NovaConf {
            heartbeats,
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

impl crate::core::kind::HasKind for ConfError {
    /// What the operator wrote in the file (its syntax, a URL, a value, a blank) is theirs to fix;
    /// a file that cannot be read, or has no `[baremetal]` section, is the world's.
    fn kind(&self) -> crate::core::kind::Kind {
        use crate::core::kind::Kind;
        match self {
            ConfError::Syntax { .. }
            | ConfError::BadUrl { .. }
            | ConfError::Blank { .. }
            | ConfError::BadValue { .. } => Kind::Usage,
            ConfError::Read { .. } | ConfError::File { .. } | ConfError::NoBaremetalSection { .. } => Kind::Runtime,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const NOVA_CONF: &str = "\
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

    pub(crate) fn nova_conf() -> NovaConf {
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
    fn default_power_manager_is_ipmi() {
        let ini = IniFile::parse(Path::new("n"), "[baremetal]\nsql_connection = sqlite:////x.db\n").unwrap();
        assert_eq!(NovaConf::from_ini(ini).unwrap().baremetal.power_manager(), BaremetalConf::DEFAULT_POWER_MANAGER);
    }

    #[test]
    fn when_nova_counts_nova_compute_down_is_read_from_default() {
        let c = nova_conf();
        assert_eq!((c.heartbeats.down_after, c.heartbeats.unknowable.as_deref()), (60, None));
        let text = "[DEFAULT]\nservice_down_time = 180\nreport_interval = 30\n[baremetal]\nx = 1\n";
        let c = NovaConf::from_ini(IniFile::parse(Path::new("nova.conf"), text).unwrap()).unwrap();
        assert_eq!(c.heartbeats.down_after, 180);
        let text = "[DEFAULT]\nservicegroup_driver = mc\n[baremetal]\nx = 1\n";
        let c = NovaConf::from_ini(IniFile::parse(Path::new("nova.conf"), text).unwrap()).unwrap();
        assert!(c.heartbeats.unknowable.is_some());
        for bad in ["sixty", "1.5", "60s"] {
            let text = format!("[DEFAULT]\nreport_interval = {bad}\n[baremetal]\nx = 1\n");
            let e = NovaConf::from_ini(IniFile::parse(Path::new("/etc/nova/nova.conf"), &text).unwrap()).unwrap_err();
            let e = e.to_string();
            assert!(e.contains("/etc/nova/nova.conf") && e.contains(&format!("report_interval = {bad}")), "{e}");
        }
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
    fn substitutions_as_oslo_config_makes_them() {
        let ini = IniFile::parse(
            Path::new("nova.conf"),
            "[DEFAULT]\nstate_path = /srv/nova\nroot = $state_path/x\n[baremetal]\na = $state_path/tftp\nb = ${state_path}b\nc = $root/y\nd = cost $$5 and \\$6\ne = ${baremetal.a}/z\nf = $nope/tftp\ng = $\nh = $h\n",
        )
        .unwrap();
        let v = |k: &str| ini.interpolated("baremetal", k).map_err(|e| e.to_string());
        assert_eq!(v("a").unwrap().as_deref(), Some("/srv/nova/tftp"));
        assert_eq!(v("b").unwrap().as_deref(), Some("/srv/novab"));
        assert_eq!(v("c").unwrap().as_deref(), Some("/srv/nova/x/y"));
        assert_eq!(v("d").unwrap().as_deref(), Some("cost $5 and $6"));
        assert_eq!(v("e").unwrap().as_deref(), Some("/srv/nova/tftp/z"));
        assert_eq!(v("g").unwrap().as_deref(), Some("$"));
        assert_eq!(v("missing").unwrap(), None);
        let e = v("f").unwrap_err();
        assert!(
            e.contains("[baremetal] f = $nope/tftp") && e.contains("uses $nope, which this file does not set"),
            "{e}"
        );
        assert!(v("h").unwrap_err().contains("without end"));
        let no_state = IniFile::parse(Path::new("nova.conf"), "[baremetal]\ntftp_root = $state_path/tftp\n").unwrap();
        let e = no_state.interpolated("baremetal", "tftp_root").unwrap_err().to_string();
        assert!(e.contains("[baremetal] tftp_root = $state_path/tftp") && e.contains("cannot know"), "{e}");
    }
}
