//! The project file, `bm2ironic.toml`: the plan options of one migration written once (the deploy
//! images, the architectures, the resource class, the free state, the load path, the decisions
//! file), read by every command that takes them and by the wizard, so nothing is retyped between
//! the rehearsal, the plan and the window. A flag given on the command line wins over the file.
//!
//! It never holds a password: database URLs, Keystone credentials and tokens are refused by name
//! (they belong in the environment, nova.conf/ironic.conf or clouds.yaml), and an unknown key is an
//! error (a typo must not silently drop an option). The rules: docs/config.md "The project file".

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::file::{read_text, FileProblem};

/// The file looked for in the working directory when `--config` is not given.
pub const FILE_NAME: &str = "bm2ironic.toml";

/// A project file is a few lines; past this it is not one.
const MAX_PROJECT_FILE: u64 = 1024 * 1024;

/// The options a project file may hold (each one a plan flag of the same name).
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ProjectOptions {
    pub deploy_kernel: Option<String>,
    pub deploy_ramdisk: Option<String>,
    pub default_arch: Option<String>,
    /// `[arch]` table: nova-compute host = cpu_arch (the `--arch HOST=ARCH` flags)
    #[serde(default)]
    pub arch: BTreeMap<String, String>,
    pub resource_class: Option<String>,
    /// `available`, `manageable` or `enroll` (checked by the command's own parser)
    pub free_state: Option<String>,
    /// `db` or `api`
    pub via: Option<String>,
    /// the decisions file, relative to the project file's directory
    pub resolutions: Option<PathBuf>,
    /// `NODE,PORT`
    pub object_version: Option<String>,
}

/// A project file read: where it is, and what it says.
#[derive(Debug, Clone)]
pub struct Project {
    pub path: PathBuf,
    pub options: ProjectOptions,
}

#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    #[error("project file {path}: not found (--config names a file that is not there)")]
    NotFound { path: String },
    #[error("project file {path}: {problem}")]
    Read { path: String, problem: FileProblem },
    #[error("project file {path}: {reason}")]
    Syntax { path: String, reason: String },
    #[error("project file {path}: `{key}` is not read from a project file: {why}")]
    Refused { path: String, key: String, why: &'static str },
    #[error("project file {path}: `{key}` is empty: give a value, or leave the key out")]
    Blank { path: String, key: String },
}

crate::core::kind::always!(Usage: ProjectError);

/// Keys an operator might try that must never be in a file left in a working directory.
fn refused(key: &str) -> Option<&'static str> {
    let k = key.to_ascii_lowercase();
    if k.ends_with("-db") || k.ends_with("_db") || k.contains("database") || k.contains("connection") {
        return Some("database URLs hold passwords: give them in the environment (BM2IRONIC_*_DB) or with --nova-conf/--ironic-conf");
    }
    if ["password", "token", "secret", "credential", "os-", "os_", "auth"].iter().any(|s| k.contains(s)) {
        return Some("credentials belong in clouds.yaml or the OS_* environment, never in a project file");
    }
    None
}

impl Project {
    /// The project file: `given` (`--config FILE`, which must exist), else `bm2ironic.toml` in
    /// `dir` when there is one, else none.
    pub fn find(given: Option<&Path>, dir: &Path) -> Result<Option<Project>, ProjectError> {
        let path = match given {
            Some(p) if !p.exists() => return Err(ProjectError::NotFound { path: p.display().to_string() }),
            Some(p) => p.to_path_buf(),
            None => match dir.join(FILE_NAME) {
                p if p.exists() => p,
                _ => return Ok(None),
            },
        };
        Project::read(&path).map(Some)
    }

    /// Reads and checks the project file at `path`.
    pub fn read(path: &Path) -> Result<Project, ProjectError> {
        let shown = path.display().to_string();
        let text =
            read_text(path, MAX_PROJECT_FILE).map_err(|problem| ProjectError::Read { path: shown.clone(), problem })?;
        let table: toml::Table =
            toml::from_str(&text).map_err(|e| ProjectError::Syntax { path: shown.clone(), reason: one_line(&e) })?;
        if let Some((key, why)) = table.keys().find_map(|k| refused(k).map(|why| (k.clone(), why))) {
            return Err(ProjectError::Refused { path: shown, key, why });
        }
        let mut options: ProjectOptions = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| ProjectError::Syntax { path: shown.clone(), reason: one_line(&e) })?;
        check_blanks(&options, &shown)?;
        // a deploy image given as a URL with a password: the password is a secret from here on,
        // as it is when given as a flag (never shown, even alone)
        for v in [&options.deploy_kernel, &options.deploy_ramdisk].into_iter().flatten() {
            crate::core::redact::register_url_secrets(v);
        }
        if let Some(r) = options.resolutions.as_mut().filter(|r| r.is_relative()) {
            *r = path.parent().unwrap_or(Path::new(".")).join(&*r);
        }
        Ok(Project { path: path.to_path_buf(), options })
    }

    /// The keys this file gives, for the line that says which options came from it.
    pub fn keys(&self) -> Vec<&'static str> {
        let o = &self.options;
        [
            ("deploy-kernel", o.deploy_kernel.is_some()),
            ("deploy-ramdisk", o.deploy_ramdisk.is_some()),
            ("default-arch", o.default_arch.is_some()),
            ("arch", !o.arch.is_empty()),
            ("resource-class", o.resource_class.is_some()),
            ("free-state", o.free_state.is_some()),
            ("via", o.via.is_some()),
            ("resolutions", o.resolutions.is_some()),
            ("object-version", o.object_version.is_some()),
        ]
        .into_iter()
        .filter_map(|(k, given)| given.then_some(k))
        .collect()
    }
}

/// A TOML error on one line (the parser's own text spans several, with a caret drawing).
fn one_line(e: &toml::de::Error) -> String {
    let at = e.span().map(|s| format!(" (at byte {})", s.start)).unwrap_or_default();
    format!("{}{at}", e.message().trim())
}

/// `deploy-kernel = ""` (a template left unfilled) is an error, as `--deploy-kernel ''` is.
fn check_blanks(o: &ProjectOptions, path: &str) -> Result<(), ProjectError> {
    let values = [
        ("deploy-kernel", o.deploy_kernel.as_deref()),
        ("deploy-ramdisk", o.deploy_ramdisk.as_deref()),
        ("default-arch", o.default_arch.as_deref()),
        ("resource-class", o.resource_class.as_deref()),
        ("free-state", o.free_state.as_deref()),
        ("via", o.via.as_deref()),
        ("object-version", o.object_version.as_deref()),
        ("resolutions", o.resolutions.as_ref().and_then(|p| p.to_str())),
    ];
    let arch = o.arch.iter().flat_map(|(h, a)| [("arch", Some(h.as_str())), ("arch", Some(a.as_str()))]);
    match values.into_iter().chain(arch).find(|(_, v)| v.is_some_and(|v| v.trim().is_empty())) {
        Some((key, _)) => Err(ProjectError::Blank { path: path.to_string(), key: key.to_string() }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, text: &str) -> PathBuf {
        let p = dir.join(FILE_NAME);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn reads_the_plan_options_and_finds_the_file_in_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Project::find(None, dir.path()).unwrap().is_none(), "no file: no project");
        write(
            dir.path(),
            "deploy-kernel = \"file:///k\"\ndeploy-ramdisk = \"file:///r\"\nvia = \"api\"\nresolutions = \"d.toml\"\n[arch]\nbm-compute-1 = \"x86_64\"\n",
        );
        let p = Project::find(None, dir.path()).unwrap().unwrap();
        assert_eq!(p.options.deploy_kernel.as_deref(), Some("file:///k"));
        assert_eq!(p.options.arch.get("bm-compute-1").map(String::as_str), Some("x86_64"));
        assert_eq!(p.options.resolutions, Some(dir.path().join("d.toml")), "relative to the file");
        assert_eq!(p.keys(), ["deploy-kernel", "deploy-ramdisk", "arch", "via", "resolutions"]);
        let e = Project::find(Some(&dir.path().join("nope.toml")), dir.path()).unwrap_err();
        assert!(e.to_string().contains("nope.toml: not found"), "{e}");
    }

    /// A deploy image's URL with a password: the password is a registered secret once read.
    #[test]
    fn a_password_in_a_deploy_image_url_is_a_secret() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "deploy-kernel = \"http://glance:Pr0jKernelPw@images/k\"\n");
        Project::read(&p).unwrap();
        assert_eq!(crate::core::redact::redact("said Pr0jKernelPw alone"), "said *** alone");
    }

    /// A password never comes from a file left in a working directory; a typo is not dropped
    /// silently; a blank is an error; the parser's multi-line text becomes one line.
    #[test]
    fn refuses_secrets_typos_and_blanks() {
        let dir = tempfile::tempdir().unwrap();
        for (text, says) in [
            ("nova-bm-db = \"mysql://u:pw@h/nova_bm\"\n", "database URLs hold passwords"),
            ("ironic_db = \"x\"\n", "database URLs hold passwords"),
            ("os-password = \"pw\"\n", "clouds.yaml"),
            ("deploy-kernal = \"k\"\n", "unknown field `deploy-kernal`"),
            ("deploy-kernel = \"  \"\n", "`deploy-kernel` is empty"),
            ("[arch]\nbm-compute-1 = \"\"\n", "`arch` is empty"),
            ("deploy-kernel = \n", "project file"),
            ("deploy-kernel = 3\n", "invalid type"),
        ] {
            let p = write(dir.path(), text);
            let e = Project::read(&p).unwrap_err().to_string();
            assert!(e.contains(says), "{text:?}: {e}");
            assert!(!e.contains("pw@") && !e.contains('\n'), "{text:?}: {e}");
        }
    }
}
