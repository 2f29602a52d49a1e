//! Test databases: a fresh database per test on SQLite (a temp file), MariaDB or PostgreSQL (the
//! servers of scripts/test-services.sh), with a fixture, the real Ironic 39 or Juno schema, SQL run as
//! the admin, dumps for byte-for-byte comparisons, rows read back as strings, and a database's URL in
//! the form SQLAlchemy (Ironic's, Juno's) takes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use bm2ironic::core::db::url::{Backend as DbBackend, DbUrl};
use bm2ironic::core::db::{Access, Db};
use bm2ironic::core::demo::fixture::{self, Fixture};

use super::env::{repo_file, server_env};

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

pub const IRONIC_MYSQL_SCHEMA: &str = "BM2IRONIC_TEST_IRONIC_MYSQL_SCHEMA";
pub const IRONIC_PG_SCHEMA: &str = "BM2IRONIC_TEST_IRONIC_PG_SCHEMA";

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

/// The URL SQLAlchemy (Ironic's, Juno's) takes for a test database's URL.
pub fn sqlalchemy_url(url: &str) -> String {
    match DbUrl::parse(url).unwrap().backend {
        DbBackend::Sqlite => url.to_string(),
        DbBackend::MySql => format!("{}?charset=utf8", url.replacen("mysql://", "mysql+pymysql://", 1)),
        DbBackend::Postgres => url.replacen("postgres://", "postgresql+psycopg2://", 1),
    }
}
