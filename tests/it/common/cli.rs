//! Running the bm2ironic binary: `bm(args)` ... `.run()` -> `Outcome` (exit code, stdout, stderr) for
//! a run that is waited for; `bm2ironic(logs)` for an assert_cmd command (stdin, `.assert()`); and
//! `command(logs)` for a process a test spawns itself (to signal it, read it line by line, or keep it
//! running behind a `Guard`). Each starts the binary with an audit log dir of its own and none of the
//! caller's BM2IRONIC_* variables.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use super::db::TestDb;

/// What a run of the binary said.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The exit code (-1 when a signal ended it).
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    /// What `cmd` said, run to its end (a command of `command`'s, with what a test set on it).
    pub fn of(cmd: &mut std::process::Command) -> Outcome {
        Outcome::from(cmd.output().unwrap())
    }

    pub fn success(&self) -> bool {
        self.code == 0
    }

    /// stdout, then stderr: for assertion messages.
    pub fn text(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// stdout as JSON (`--json`), or a panic with both streams.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.text()))
    }
}

impl From<std::process::Output> for Outcome {
    fn from(out: std::process::Output) -> Outcome {
        Outcome {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into(),
            stderr: String::from_utf8_lossy(&out.stderr).into(),
        }
    }
}

/// A run of the binary being put together: `bm(["plan", "--json"]).source(&src).run()`.
#[must_use = "nothing runs until .run()"]
pub struct Bm {
    args: Vec<OsString>,
    env: Vec<(OsString, Option<OsString>)>,
    logs: Option<PathBuf>,
    stdin: Option<Vec<u8>>,
    dir: Option<PathBuf>,
}

/// The binary with `args`; `.run()` runs it (with a private audit log dir unless `.logs(dir)`).
pub fn bm<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>) -> Bm {
    Bm { args: vec![], env: vec![], logs: None, stdin: None, dir: None }.args(args)
}

impl Bm {
    pub fn arg(mut self, a: impl AsRef<OsStr>) -> Bm {
        self.args.push(a.as_ref().to_os_string());
        self
    }

    pub fn args<S: AsRef<OsStr>>(mut self, args: impl IntoIterator<Item = S>) -> Bm {
        self.args.extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    pub fn env(mut self, k: impl AsRef<OsStr>, v: impl AsRef<OsStr>) -> Bm {
        self.env.push((k.as_ref().to_os_string(), Some(v.as_ref().to_os_string())));
        self
    }

    pub fn env_remove(mut self, k: impl AsRef<OsStr>) -> Bm {
        self.env.push((k.as_ref().to_os_string(), None));
        self
    }

    /// nova_bm, read as the SELECT-only user (BM2IRONIC_NOVA_BM_DB).
    pub fn source(self, db: &TestDb) -> Bm {
        self.env("BM2IRONIC_NOVA_BM_DB", &db.reader_url)
    }

    /// The Ironic database written to, as the admin (BM2IRONIC_IRONIC_DB).
    pub fn target(self, db: &TestDb) -> Bm {
        self.env("BM2IRONIC_IRONIC_DB", &db.admin_url)
    }

    /// Nova's database, read as the SELECT-only user (BM2IRONIC_NOVA_DB), when there is one.
    pub fn nova(self, db: Option<&TestDb>) -> Bm {
        match db {
            Some(n) => self.env("BM2IRONIC_NOVA_DB", &n.reader_url),
            None => self,
        }
    }

    /// The audit log in `dir` (kept for the test to read) instead of a private temp dir.
    pub fn logs(mut self, dir: &Path) -> Bm {
        self.logs = Some(dir.to_path_buf());
        self
    }

    /// Run in `dir` (where a `bm2ironic.toml` project file is looked for).
    pub fn dir(mut self, dir: &Path) -> Bm {
        self.dir = Some(dir.to_path_buf());
        self
    }

    /// What the binary reads on stdin.
    pub fn stdin(mut self, input: impl Into<Vec<u8>>) -> Bm {
        self.stdin = Some(input.into());
        self
    }

    /// Runs it to its end.
    pub fn run(self) -> Outcome {
        let tmp = tempfile::tempdir().unwrap();
        let logs = self.logs.clone().unwrap_or_else(|| tmp.path().to_path_buf());
        let mut c = bm2ironic(&logs);
        for (k, v) in &self.env {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        c.args(&self.args);
        if let Some(dir) = &self.dir {
            c.current_dir(dir);
        }
        if let Some(input) = self.stdin {
            c.write_stdin(input);
        }
        Outcome::from(c.output().unwrap())
    }
}

/// The binary as an assert_cmd command, with a private audit log dir and none of the caller's
/// BM2IRONIC_* variables.
pub fn bm2ironic(log_dir: &Path) -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("bm2ironic").unwrap();
    for (k, _) in std::env::vars() {
        if k.starts_with("BM2IRONIC_") {
            c.env_remove(k);
        }
    }
    c.arg("--log-dir").arg(log_dir);
    c
}

/// The binary as a std command a test spawns itself, with its audit log in `log_dir` and none of the
/// caller's BM2IRONIC_* or OS_* variables.
pub fn command(log_dir: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin!("bm2ironic"));
    for (k, _) in std::env::vars() {
        if k.starts_with("BM2IRONIC_") || k.starts_with("OS_") {
            c.env_remove(k);
        }
    }
    c.arg("--log-dir").arg(log_dir);
    c
}

/// Everything the audit log wrote under `dir`.
pub fn read_logs(dir: &Path) -> String {
    let mut out = String::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p: PathBuf = e.path();
        if p.is_file() {
            out.push_str(&std::fs::read_to_string(&p).unwrap_or_default());
        }
    }
    out
}

/// The standard set of resolutions that resolves every blocking conflict of `Fixture::standard()`.
pub const STANDARD_RESOLUTIONS: &[&str] = &[
    "--default-arch",
    "x86_64",
    "--deploy-kernel",
    "file:///var/lib/ironic/deploy.kernel",
    "--deploy-ramdisk",
    "file:///var/lib/ironic/deploy.initramfs",
    "--resolve",
    "invalid-mac=skip-port",
    "--resolve",
    "duplicate-mac=skip-port",
    "--resolve",
    "missing-uuid=generate",
    "--resolve",
    "mid-deploy=maintenance",
    "--resolve",
    "failed-deploy=maintenance",
    "--resolve",
    "missing-bmc=maintenance",
    // the tests using this set are about other things and have no TFTP tree: each instance's boot is
    // the operator's word (`local-boot`, today's mapping); tests/it/boot_plan.rs tests the learned boot
    "--resolve",
    "unknown-boot=local-boot",
];
