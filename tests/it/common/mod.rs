//! Shared test helpers: real databases per test (SQLite in a temp dir; MariaDB and PostgreSQL from
//! `scripts/test-services.sh`), and running the real binary.
#![allow(dead_code)]

pub mod wizard;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use bm2ironic::core::db::url::{Backend as DbBackend, DbUrl};
use bm2ironic::core::db::{Access, Db};
use bm2ironic::core::demo::fixture::{self, Fixture};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    MySql,
    Postgres,
}

pub const MYSQL_ADMIN: &str = "BM2IRONIC_TEST_MYSQL_ADMIN";
pub const PG_ADMIN: &str = "BM2IRONIC_TEST_PG_ADMIN";
pub const MYSQL_READER: &str = "BM2IRONIC_TEST_MYSQL_READER";
pub const PG_READER: &str = "BM2IRONIC_TEST_PG_READER";
/// The SELECT-only user's password (scripts/test-services.sh), searched for in outputs and logs.
pub const READER_PASSWORD: &str = "readerpass";

/// Names the file where each skip is noted, one line a test, for scripts/test.sh to list after the
/// run: libtest shows nothing a passing test prints with `eprintln!`, and a note written past its
/// capture is lost among hundreds of lines.
pub const SKIPS_FILE: &str = "BM2IRONIC_TEST_SKIPS";

/// A CI run (CI=true or CI=1): there every server is started, and no test may skip.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// A test that cannot run here (`why`: what is missing, and what provides it) says so, then
/// returns: a note on stderr, written past libtest's capture, and a line `<test>: <why>` appended to
/// the file named by BM2IRONIC_TEST_SKIPS (scripts/test.sh sets it). In CI it fails instead.
pub fn skip(why: &str) {
    let thread = std::thread::current();
    let test = thread.name().filter(|n| *n != "main").unwrap_or("(a test off its own thread)");
    if let Some(file) = std::env::var_os(SKIPS_FILE).filter(|f| !f.is_empty()) {
        let line = format!("{test}: {why}\n");
        // one write of one short line to a file opened for appending: lines of parallel tests do not mix
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&file)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = written {
            panic!("cannot note the skip in {} ({SKIPS_FILE}): {e}", Path::new(&file).display());
        }
    }
    if in_ci() {
        panic!("{why}; in CI no test may skip");
    }
    let _ = writeln!(std::io::stderr(), "\n*** SKIPPED: {why} ***");
}

/// The URL of a test server, or None with a loud message (written past libtest's capture, and noted
/// for scripts/test.sh) when the server is not configured. In CI a missing server is a failure,
/// never a skip.
pub fn server_env(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            skip(&format!(
                "{var} is not set, so this test cannot reach its server: scripts/test.sh starts the servers and sets it"
            ));
            None
        }
    }
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A fresh, empty database on one backend, dropped with the test's temp data.
pub struct TestDb {
    pub backend: Backend,
    pub name: String,
    /// may write (fixtures)
    pub admin_url: String,
    /// SELECT-only user (how bm2ironic reads sources in the tests)
    pub reader_url: String,
    _dir: Option<tempfile::TempDir>,
}

impl TestDb {
    pub async fn create(backend: Backend, tag: &str) -> Option<TestDb> {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let name = format!("t_{}_{}_{}", tag.replace(|c: char| !c.is_ascii_alphanumeric(), "_"), std::process::id(), n);
        match backend {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join(format!("{name}.sqlite"));
                let url = format!("sqlite:///{}", path.display());
                Some(TestDb { backend, name, admin_url: url.clone(), reader_url: url, _dir: Some(dir) })
            }
            Backend::MySql | Backend::Postgres => {
                let (admin_var, reader_var) =
                    if backend == Backend::MySql { (MYSQL_ADMIN, MYSQL_READER) } else { (PG_ADMIN, PG_READER) };
                let admin = server_env(admin_var)?;
                let reader = server_env(reader_var)?;
                let db = Db::connect(&DbUrl::parse(&admin).unwrap(), Access::Create).await.expect("admin connection");
                db.execute(&format!("CREATE DATABASE {name}"), vec![]).await.expect("create test database");
                db.close().await;
                let base = admin.rsplit_once('/').unwrap().0;
                Some(TestDb {
                    backend,
                    admin_url: format!("{base}/{name}"),
                    reader_url: format!("{reader}/{name}"),
                    name,
                    _dir: None,
                })
            }
        }
    }

    /// A fresh database holding `fixture`, readable by the SELECT-only user.
    pub async fn with_fixture(backend: Backend, tag: &str, f: &Fixture) -> Option<TestDb> {
        let t = TestDb::create(backend, tag).await?;
        let db = t.admin().await;
        fixture::build(&db, f).await.expect("build fixture");
        t.grant_reader(&db).await;
        db.close().await;
        Some(t)
    }

    pub async fn admin(&self) -> Db {
        Db::connect(&DbUrl::parse(&self.admin_url).unwrap(), Access::Create).await.expect("admin connection")
    }

    /// Runs SQL as the admin (test set-up only).
    pub async fn exec(&self, sql: &str) {
        let db = self.admin().await;
        db.execute(sql, vec![]).await.expect("test set-up SQL");
        if self.backend == Backend::Postgres {
            self.grant_reader(&db).await;
        }
        db.close().await;
    }

    pub async fn grant_reader(&self, db: &Db) {
        if db.backend() == DbBackend::Postgres {
            db.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO bm_reader", vec![]).await.expect("grant");
        }
    }

    /// The reader URL with another password (for wrong-password tests).
    pub fn reader_url_with_password(&self, password: &str) -> String {
        self.reader_url.replacen(&format!(":{READER_PASSWORD}@"), &format!(":{password}@"), 1)
    }
}

/// The binary, with a private audit log dir and none of the caller's BM2IRONIC_* variables.
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

/// Declares each test once per backend it runs on, in a module named after the backend:
/// `sqlite::name`, `mysql::name`, `postgres::name`. A test that applies to some backends only is
/// declared only there, never as a copy that returns at once and counts as passed:
///
/// ```ignore
/// per_backend! {
///     runs_everywhere => super::runs_everywhere;              // sqlite::, mysql::, postgres::
///     [sqlite] needs_no_server => super::needs_no_server;      // sqlite:: only
///     [servers] needs_a_login => super::needs_a_login;         // mysql::, postgres::
/// }
/// ```
#[macro_export]
macro_rules! per_backend {
    ($($([$only:ident])? $name:ident => $body:path;)*) => {
        mod sqlite { $( $crate::per_backend!(@on Sqlite [$($only)?] $name => $body); )* }
        mod mysql { $( $crate::per_backend!(@on MySql [$($only)?] $name => $body); )* }
        mod postgres { $( $crate::per_backend!(@on Postgres [$($only)?] $name => $body); )* }
    };
    // which backends a tag runs on
    (@on $b:ident [] $name:ident => $body:path) => { $crate::per_backend!(@test $b $name => $body); };
    (@on Sqlite [sqlite] $name:ident => $body:path) => { $crate::per_backend!(@test Sqlite $name => $body); };
    (@on $b:ident [sqlite] $name:ident => $body:path) => {};
    (@on Sqlite [servers] $name:ident => $body:path) => {};
    (@on $b:ident [servers] $name:ident => $body:path) => { $crate::per_backend!(@test $b $name => $body); };
    (@on $b:ident [$other:ident] $name:ident => $body:path) => {
        compile_error!(concat!("per_backend!: [", stringify!($other), "] is not a tag; [sqlite] or [servers]"));
    };
    (@test $b:ident $name:ident => $body:path) => {
        #[tokio::test(flavor = "multi_thread")]
        async fn $name() {
            $body($crate::common::Backend::$b).await
        }
    };
}

/// Where a property test of this crate keeps its failures: `proptest-regressions/tests/it/<file>.txt`
/// at the top of the repository, beside the library's (proptest's default would put them in
/// `tests/proptest-regressions/`, as tests/it has a main.rs). Saved seeds are replayed before any new
/// case. `$file` is the test file's name without `.rs`.
#[macro_export]
macro_rules! regressions {
    ($file:literal) => {
        Some(Box::new(::proptest::test_runner::FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/proptest-regressions/tests/it/",
            $file,
            ".txt"
        ))))
    };
}

pub const IRONIC_VENV: &str = "BM2IRONIC_TEST_IRONIC_VENV";
pub const IRONIC_MYSQL_SCHEMA: &str = "BM2IRONIC_TEST_IRONIC_MYSQL_SCHEMA";
pub const IRONIC_PG_SCHEMA: &str = "BM2IRONIC_TEST_IRONIC_PG_SCHEMA";

fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Connection pieces of an admin URL, for the command-line clients.
fn cli_parts(url: &str) -> (String, u16, String, String, String) {
    let u = DbUrl::parse(url).unwrap();
    (
        u.host.clone(),
        u.port,
        u.user.clone().unwrap_or_default(),
        u.password.as_ref().map(|p| p.expose().to_string()).unwrap_or_default(),
        u.database.clone().unwrap_or_default(),
    )
}

impl TestDb {
    /// A fresh database holding the real Ironic 39.0.0 schema (from `ironic-dbsync`; on SQLite from
    /// the schema it creates, kept in assets/).
    pub async fn ironic(backend: Backend, tag: &str) -> Option<TestDb> {
        let file = match backend {
            Backend::Sqlite => repo_file("assets/ironic/schema-39.0.0.sqlite.sql"),
            Backend::MySql => PathBuf::from(server_env(IRONIC_MYSQL_SCHEMA)?),
            Backend::Postgres => PathBuf::from(server_env(IRONIC_PG_SCHEMA)?),
        };
        let t = TestDb::create(backend, tag).await?;
        t.load_sql_file(&file).await;
        Some(t)
    }

    /// A fresh database holding the Juno (487deb87cc9d) Ironic schema.
    pub async fn juno(backend: Backend, tag: &str) -> Option<TestDb> {
        let name = match backend {
            Backend::Sqlite => "sqlite",
            Backend::MySql => "mysql",
            Backend::Postgres => "postgres",
        };
        let t = TestDb::create(backend, tag).await?;
        t.load_sql_file(&repo_file(&format!("assets/ironic/schema-juno.{name}.sql"))).await;
        Some(t)
    }

    /// Loads an SQL file: with the real `mariadb` / `psql` clients (dumps carry client commands),
    /// statement by statement on SQLite.
    pub async fn load_sql_file(&self, file: &Path) {
        match self.backend {
            Backend::Sqlite => {
                let db = self.admin().await;
                let text = std::fs::read_to_string(file).unwrap();
                for s in bm2ironic::core::db::sql::statements(&text) {
                    db.execute(&s, vec![]).await.expect("schema statement");
                }
                db.close().await;
            }
            Backend::MySql => {
                let (h, port, u, pw, d) = cli_parts(&self.admin_url);
                let out = std::process::Command::new("mariadb")
                    .args(["--no-defaults", "-h", &h, "-P", &port.to_string(), "-u", &u, &d])
                    .env("MYSQL_PWD", pw)
                    .stdin(std::fs::File::open(file).unwrap())
                    .output()
                    .unwrap();
                assert!(out.status.success(), "mariadb < {}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
            }
            Backend::Postgres => {
                let (h, port, u, pw, d) = cli_parts(&self.admin_url);
                let out = std::process::Command::new("psql")
                    .args([
                        "-X",
                        "-q",
                        "-v",
                        "ON_ERROR_STOP=1",
                        "-h",
                        &h,
                        "-p",
                        &port.to_string(),
                        "-U",
                        &u,
                        "-d",
                        &d,
                        "-f",
                    ])
                    .arg(file)
                    .env("PGPASSWORD", pw)
                    .output()
                    .unwrap();
                assert!(out.status.success(), "psql -f {}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
            }
        }
    }

    /// A full dump (schema, data, counters) for byte-for-byte comparisons: mariadb-dump, pg_dump, or
    /// the SQLite file's bytes.
    pub fn dump(&self) -> Vec<u8> {
        match self.backend {
            Backend::Sqlite => std::fs::read(self.admin_url.trim_start_matches("sqlite:///")).unwrap(),
            Backend::MySql => {
                let (h, port, u, pw, d) = cli_parts(&self.admin_url);
                let out = std::process::Command::new("mariadb-dump")
                    .args([
                        "--no-defaults",
                        "--skip-dump-date",
                        "--skip-comments",
                        "-h",
                        &h,
                        "-P",
                        &port.to_string(),
                        "-u",
                        &u,
                        &d,
                    ])
                    .env("MYSQL_PWD", pw)
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
                out.stdout
            }
            Backend::Postgres => {
                let (h, port, u, pw, d) = cli_parts(&self.admin_url);
                let out = std::process::Command::new("pg_dump")
                    .args(["--restrict-key=bm2ironictest", "-h", &h, "-p", &port.to_string(), "-U", &u, &d])
                    .env("PGPASSWORD", pw)
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
                out.stdout
            }
        }
    }

    pub async fn scalar_i64(&self, sql: &str) -> i64 {
        let db = self.admin().await;
        let v: i64 = db.fetch_scalar(sql, vec![]).await.expect("scalar query");
        db.close().await;
        v
    }

    /// Rows of a query as strings (NULL as "NULL"); every selected column must be text.
    pub async fn rows(&self, sql: &str) -> Vec<Vec<String>> {
        let db = self.admin().await;
        let out = db
            .fetch_map(sql, vec![], |r| {
                (0..r.len()).map(|i| Ok(r.opt_string(i)?.unwrap_or_else(|| "NULL".into()))).collect()
            })
            .await
            .expect("rows query (every column text)");
        db.close().await;
        out
    }
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

/// A tmpfs of `size` mounted on a temp dir (root only), unmounted when dropped: a disk that fills up.
pub struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    pub fn mount(size: &str) -> Option<Tmpfs> {
        let d = tempfile::tempdir().unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700"), "tmpfs"])
            .arg(d.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            skip("cannot mount a tmpfs (a disk-full test needs root)");
            return None;
        }
        Some(Tmpfs(d))
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(self.0.path()).status();
    }
}

/// A loopback TCP port free at the time of asking (the kernel's pick; a test binds it at once).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}
