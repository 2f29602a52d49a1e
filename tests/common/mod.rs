//! Shared test helpers: real databases per test (SQLite in a temp dir; MariaDB and PostgreSQL from
//! `scripts/test-services.sh`), and running the real binary.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use bm2ironic::core::db::{Access, Db, Pool};
use bm2ironic::core::dburl::DbUrl;
use bm2ironic::core::fixture::{self, Fixture};

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

/// The URL of a test server, or None with a loud message (written past libtest's capture) when the
/// server is not configured. In CI a missing server is a failure, never a skip.
pub fn server_env(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
                panic!("{var} is not set: CI must run the tests through scripts/test.sh, which starts MariaDB and PostgreSQL");
            }
            let _ = writeln!(
                std::io::stderr(),
                "\n*** SKIPPED: {var} is not set, so this test cannot reach its server. Run scripts/test.sh (it starts MariaDB and PostgreSQL). ***"
            );
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
                let db = Db::connect(&DbUrl::parse(&admin).unwrap(), Access::ReadWrite).await.expect("admin connection");
                let sql = format!("CREATE DATABASE {name}");
                match &db.pool {
                    Pool::MySql(p) => sqlx::query(sqlx::AssertSqlSafe(sql)).execute(p).await.map(|_| ()),
                    Pool::Postgres(p) => sqlx::query(sqlx::AssertSqlSafe(sql)).execute(p).await.map(|_| ()),
                    Pool::Sqlite(_) => unreachable!(),
                }
                .expect("create test database");
                db.close().await;
                let base = admin.rsplit_once('/').unwrap().0;
                Some(TestDb { backend, admin_url: format!("{base}/{name}"), reader_url: format!("{reader}/{name}"), name, _dir: None })
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
        Db::connect(&DbUrl::parse(&self.admin_url).unwrap(), Access::ReadWrite).await.expect("admin connection")
    }

    /// Runs SQL as the admin (test set-up only).
    pub async fn exec(&self, sql: &str) {
        let db = self.admin().await;
        let sql = sql.to_string();
        match &db.pool {
            Pool::MySql(p) => sqlx::query(sqlx::AssertSqlSafe(sql)).execute(p).await.map(|_| ()),
            Pool::Postgres(p) => sqlx::query(sqlx::AssertSqlSafe(sql)).execute(p).await.map(|_| ()),
            Pool::Sqlite(p) => sqlx::query(sqlx::AssertSqlSafe(sql)).execute(p).await.map(|_| ()),
        }
        .expect("test set-up SQL");
        if self.backend == Backend::Postgres {
            self.grant_reader(&db).await;
        }
        db.close().await;
    }

    async fn grant_reader(&self, db: &Db) {
        if let Pool::Postgres(p) = &db.pool {
            sqlx::query("GRANT SELECT ON ALL TABLES IN SCHEMA public TO bm_reader").execute(p).await.expect("grant");
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

/// Declares one test per backend: `sqlite::name`, `mysql::name`, `postgres::name`.
#[macro_export]
macro_rules! per_backend {
    ($($name:ident => $body:path;)*) => {
        mod sqlite { $( #[tokio::test(flavor = "multi_thread")] async fn $name() { $body($crate::common::Backend::Sqlite).await } )* }
        mod mysql { $( #[tokio::test(flavor = "multi_thread")] async fn $name() { $body($crate::common::Backend::MySql).await } )* }
        mod postgres { $( #[tokio::test(flavor = "multi_thread")] async fn $name() { $body($crate::common::Backend::Postgres).await } )* }
    };
}
