//! The REAL Juno Ironic (openstack/ironic 2014.2, installed by scripts/juno.sh, skipped loudly when
//! `BM2IRONIC_TEST_JUNO_VENV` is not set) against what bm2ironic does for a Juno target, on SQLite
//! and MariaDB:
//! - the schema Juno's own `ironic-dbsync upgrade` makes is the one in assets/ironic/schema-juno.*;
//! - `migrate --via db` into such a database, then Juno's own API reads every node and port as
//!   docs/mapping.md says (flat `extra`, free nodes NULL, `pxe_*` driver and keys, the VIF in
//!   `extra.vif_port_id`, `instance_info.image_source` + `root_gb`), and `verify --ironic-url`
//!   against it finds nothing;
//! - an instance without `image_source` is a blocking conflict for a Juno target;
//! - `migrate --via api` against Juno is refused (no adopt before API 1.17).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{server_env, Backend, TestDb};

const JUNO_VENV: &str = "BM2IRONIC_TEST_JUNO_VENV";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The URL SQLAlchemy (Juno's) takes for a test database.
fn sqlalchemy_url(db: &TestDb) -> String {
    match db.backend {
        Backend::Sqlite => db.admin_url.clone(),
        Backend::MySql => format!("{}?charset=utf8", db.admin_url.replacen("mysql://", "mysql+pymysql://", 1)),
        Backend::Postgres => unreachable!("Juno on PostgreSQL is not tested"),
    }
}

/// scripts/juno.sh with the venv the environment names.
fn juno_sh(venv: &Path, args: &[&str]) -> std::process::Output {
    Command::new("bash")
        .arg(repo().join("scripts/juno.sh"))
        .args(args)
        .env("BM2_JUNO_BASE", venv.parent().unwrap())
        .output()
        .unwrap()
}

/// A fresh database with the schema Juno's own `ironic-dbsync upgrade` makes.
async fn dbsync(venv: &Path, backend: Backend, tag: &str) -> TestDb {
    let db = TestDb::create(backend, tag).await.expect("database server configured");
    let out = juno_sh(venv, &["dbsync", &sqlalchemy_url(&db)]);
    assert!(out.status.success(), "juno.sh dbsync: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "487deb87cc9d", "Juno's alembic head");
    db
}

/// What a schema is, as lines that compare: columns (type, nullability, default), indexes and unique
/// constraints (with their columns), foreign keys, CHECK constraints, table options.
async fn shape(db: &TestDb) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut add = |rows: Vec<Vec<String>>, f: &dyn Fn(&[String]) -> String| {
        for r in rows {
            out.insert(f(&r));
        }
    };
    match db.backend {
        Backend::Sqlite => {
            let tables = "FROM sqlite_master m JOIN pragma_table_info(m.name) p WHERE m.type = 'table'";
            add(
                db.rows(&format!("SELECT m.name, p.name, upper(p.type), CAST(p.\"notnull\" AS TEXT), CAST(p.pk AS TEXT), COALESCE(p.dflt_value, '') {tables}")).await,
                &|r| format!("{}.{} {} notnull={} pk={} default={}", r[0], r[1], r[2], r[3], r[4], r[5]),
            );
            // constraint-made unique indexes have generated names: their columns say what they are
            add(
                db.rows("SELECT m.name, il.name, CAST(il.\"unique\" AS TEXT), il.origin, (SELECT group_concat(ii.name, ',') FROM pragma_index_info(il.name) ii) FROM sqlite_master m JOIN pragma_index_list(m.name) il WHERE m.type = 'table'").await,
                &|r| {
                    let name = if r[3] == "c" { r[1].as_str() } else { "-" };
                    format!("{} index {name} unique={} origin={} ({})", r[0], r[2], r[3], r[4])
                },
            );
            add(
                db.rows("SELECT m.name, f.\"from\", f.\"table\", f.\"to\" FROM sqlite_master m JOIN pragma_foreign_key_list(m.name) f WHERE m.type = 'table'").await,
                &|r| format!("{} foreign key ({}) -> {}({})", r[0], r[1], r[2], r[3]),
            );
            // CHECK constraints and constraint names live only in the table's SQL
            for r in db.rows("SELECT name, sql FROM sqlite_master WHERE type = 'table'").await {
                let sql = r[1].split_whitespace().collect::<Vec<_>>().join(" ");
                for (i, _) in sql.match_indices("CHECK (") {
                    let body = &sql[i + 6..];
                    let mut depth = 0;
                    let end = body
                        .char_indices()
                        .find(|(_, c)| {
                            depth += match c {
                                '(' => 1,
                                ')' => -1,
                                _ => 0,
                            };
                            depth == 0
                        })
                        .map_or(body.len(), |(k, _)| k + 1);
                    out.insert(format!("{} check {}", r[0], &body[..end]));
                }
                for w in sql.split("CONSTRAINT ").skip(1) {
                    out.insert(format!("{} constraint {}", r[0], w.split_whitespace().next().unwrap_or("")));
                }
            }
        }
        Backend::MySql => {
            let here = "TABLE_SCHEMA = DATABASE()";
            add(
                db.rows(&format!("SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COALESCE(COLUMN_DEFAULT, ''), EXTRA FROM information_schema.COLUMNS WHERE {here}")).await,
                &|r| format!("{}.{} {} nullable={} default={} {}", r[0], r[1], r[2], r[3], r[4], r[5]),
            );
            add(
                db.rows(&format!("SELECT TABLE_NAME, INDEX_NAME, CAST(NON_UNIQUE AS CHAR), GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX) FROM information_schema.STATISTICS WHERE {here} GROUP BY TABLE_NAME, INDEX_NAME, NON_UNIQUE")).await,
                &|r| format!("{} index {} non_unique={} ({})", r[0], r[1], r[2], r[3]),
            );
            add(
                db.rows(&format!("SELECT TABLE_NAME, CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE {here} AND REFERENCED_TABLE_NAME IS NOT NULL")).await,
                &|r| format!("{} foreign key {} ({}) -> {}({})", r[0], r[1], r[2], r[3], r[4]),
            );
            // CHECK constraints get generated names (CONSTRAINT_1, ...): their clause says what they are
            add(
                db.rows("SELECT TABLE_NAME, CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = DATABASE()").await,
                &|r| format!("{} check {}", r[0], r[1]),
            );
            add(
                db.rows(&format!("SELECT TABLE_NAME, ENGINE, TABLE_COLLATION FROM information_schema.TABLES WHERE {here}")).await,
                &|r| format!("{} engine={} collation={}", r[0], r[1], r[2]),
            );
        }
        Backend::Postgres => unreachable!(),
    }
    out.extend(db.rows("SELECT version_num FROM alembic_version").await.into_iter().map(|r| format!("alembic {}", r[0])));
    out
}

/// The shapes' differences, one line each, or nothing.
fn schema_diff(asset: &BTreeSet<String>, juno: &BTreeSet<String>) -> String {
    let mut d = String::new();
    for l in asset.difference(juno) {
        d.push_str(&format!("  only in the asset:       {l}\n"));
    }
    for l in juno.difference(asset) {
        d.push_str(&format!("  only in Juno's dbsync:   {l}\n"));
    }
    d
}

async fn dbsync_schema_is_the_asset(backend: Backend) {
    let Some(venv) = server_env(JUNO_VENV) else { return };
    if backend == Backend::MySql && server_env(crate::common::MYSQL_ADMIN).is_none() {
        return;
    }
    let juno = dbsync(Path::new(&venv), backend, "jdbsync").await;
    let asset = TestDb::juno(backend, "jasset").await.unwrap();
    let (j, a) = (shape(&juno).await, shape(&asset).await);
    assert!(j.len() > 40, "the schema was read: {j:#?}");
    let file = if backend == Backend::Sqlite { "sqlite" } else { "mysql" };
    let diff = schema_diff(&a, &j);
    assert!(diff.is_empty(), "assets/ironic/schema-juno.{file}.sql is not what Juno's ironic-dbsync upgrade makes:\n{diff}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_dbsync_schema_is_the_asset() {
    dbsync_schema_is_the_asset(Backend::Sqlite).await
}

#[tokio::test(flavor = "multi_thread")]
async fn mysql_dbsync_schema_is_the_asset() {
    dbsync_schema_is_the_asset(Backend::MySql).await
}
