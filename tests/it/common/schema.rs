//! A database schema as lines that compare (columns, indexes, keys, CHECKs, table options, the
//! migration tool's version), and the differences of two: how the Juno tests hold the schemas the
//! other tests load (assets/ironic/schema-juno.*, assets/nova_bm/schema.*) to what Juno's own dbsync
//! tools make (`ironic-dbsync upgrade`, `nova-baremetal-manage db sync`).

use std::collections::BTreeSet;

use super::db::{Backend, TestDb};

/// Ironic's alembic head.
pub const ALEMBIC: &str = "SELECT version_num FROM alembic_version";
/// nova_bm's sqlalchemy-migrate repository and version (not its path, which names the install).
pub const MIGRATE_VERSION: &str = "SELECT repository_id, CAST(version AS CHAR) FROM migrate_version";

/// What a schema is, as lines that compare: columns (type, nullability, default), indexes and unique
/// constraints (with their columns), foreign keys, CHECK constraints, table options; and the rows
/// of `version_sql` (the migration tool's version: [`ALEMBIC`], [`MIGRATE_VERSION`]).
pub async fn shape(db: &TestDb, version_sql: &str) -> BTreeSet<String> {
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
                db.rows(&format!(
                    "SELECT TABLE_NAME, ENGINE, TABLE_COLLATION FROM information_schema.TABLES WHERE {here}"
                ))
                .await,
                &|r| format!("{} engine={} collation={}", r[0], r[1], r[2]),
            );
        }
        Backend::Postgres => unreachable!(),
    }
    out.extend(db.rows(version_sql).await.into_iter().map(|r| format!("version {}", r.join(" "))));
    out
}

/// The shapes' differences, one line each, or nothing.
pub fn schema_diff(asset: &BTreeSet<String>, juno: &BTreeSet<String>) -> String {
    let mut d = String::new();
    for l in asset.difference(juno) {
        d.push_str(&format!("  only in the asset:       {l}\n"));
    }
    for l in juno.difference(asset) {
        d.push_str(&format!("  only in Juno's dbsync:   {l}\n"));
    }
    d
}
