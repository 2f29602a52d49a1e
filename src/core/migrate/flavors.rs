//! Nova flavors for the new world: Juno/Kilo Nova copies `baremetal:deploy_kernel_id` /
//! `baremetal:deploy_ramdisk_id` from the flavor into the node at spawn, so they must name the Ironic
//! deploy images; modern Nova schedules bare metal by `resources:CUSTOM_<CLASS>=1` with VCPU,
//! MEMORY_MB and DISK_GB zeroed. The change is shown as a diff, applied in one transaction, and
//! recorded (old values included) in `bm2ironic_flavor_changes` so `--restore` puts them back exactly.

use serde::Serialize;

use crate::core::db::sql::Val;
use crate::core::db::{Cast, Db, DbError, Dialect};

pub const CHANGES_TABLE: &str = "bm2ironic_flavor_changes";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FlavorSchema {
    /// instance_types + instance_type_extra_specs (Juno/Kilo nova DB)
    Juno,
    /// flavors + flavor_extra_specs (nova_api DB)
    Modern,
}

impl FlavorSchema {
    fn tables(self) -> (&'static str, &'static str, &'static str) {
        match self {
            FlavorSchema::Juno => ("instance_types", "instance_type_extra_specs", "instance_type_id"),
            FlavorSchema::Modern => ("flavors", "flavor_extra_specs", "flavor_id"),
        }
    }
}

/// What to set.
#[derive(Debug, Clone)]
pub enum FlavorTarget {
    /// Juno/Kilo Ironic: point the deploy keys at the Ironic images
    DeployImages { kernel: String, ramdisk: String },
    /// modern Nova: schedule by resource class
    ResourceClass(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpecChange {
    pub flavor_id: i64,
    pub flavor: String,
    pub key: String,
    /// None: the key is added
    pub old: Option<String>,
    pub new: String,
}

#[derive(Debug, thiserror::Error)]
pub enum FlavorError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("{what} has no flavor tables (instance_types or flavors): give the nova_api database (--nova-api-db) for modern Nova, or the nova database (--nova-db) for Juno/Kilo")]
    NoFlavors { what: String },
    #[error("no flavor change recorded in this Nova database: nothing to restore")]
    NothingToRestore,
}

/// `CUSTOM_` + the class upper-cased, other characters as `_` (Nova's normalisation).
pub fn custom_class(class: &str) -> String {
    let norm: String =
        class.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    if norm.starts_with("CUSTOM_") {
        norm
    } else {
        format!("CUSTOM_{norm}")
    }
}

pub async fn detect(db: &Db) -> Result<FlavorSchema, FlavorError> {
    let t: Vec<String> = db.table_names().await?.into_iter().map(|t| t.to_ascii_lowercase()).collect();
    if t.iter().any(|x| x == "instance_type_extra_specs") && t.iter().any(|x| x == "instance_types") {
        Ok(FlavorSchema::Juno)
    } else if t.iter().any(|x| x == "flavor_extra_specs") && t.iter().any(|x| x == "flavors") {
        Ok(FlavorSchema::Modern)
    } else {
        Err(FlavorError::NoFlavors { what: db.url.describe() })
    }
}

/// Live extra specs of every flavor: (flavor id, flavor name, key, value).
async fn specs(db: &Db, schema: FlavorSchema) -> Result<Vec<(i64, String, String, String)>, DbError> {
    let (flavors, extra, fk) = schema.tables();
    let d = db.dialect();
    let key = d.quote("key");
    let live = match schema {
        FlavorSchema::Juno => " AND e.deleted = 0 AND f.deleted = 0",
        FlavorSchema::Modern => "",
    };
    let id = d.cast(Cast::Int, "f.id");
    let sql = format!("SELECT {id} AS id, f.name AS name, e.{key} AS k, e.value AS v FROM {flavors} f JOIN {extra} e ON e.{fk} = f.id WHERE 1 = 1{live} ORDER BY f.id, e.{key}");
    db.fetch_map(&sql, vec![], |r| {
        Ok((
            r.get::<i64, _>("id")?,
            r.opt_string("name")?.unwrap_or_default(),
            r.string("k")?,
            r.opt_string("v")?.unwrap_or_default(),
        ))
    })
    .await
}

/// The baremetal flavors (those with a `baremetal:` key, or named) and the changes they need.
pub async fn plan_changes(
    db: &Db,
    schema: FlavorSchema,
    target: &FlavorTarget,
    only: &[String],
) -> Result<Vec<SpecChange>, FlavorError> {
    let all = specs(db, schema).await?;
    let mut ids: Vec<(i64, String)> = Vec::new();
    for (id, name, k, _) in &all {
        let wanted = if only.is_empty() { k.starts_with("baremetal:") } else { only.contains(name) };
        if wanted && !ids.iter().any(|(i, _)| i == id) {
            ids.push((*id, name.clone()));
        }
    }
    let mut out = Vec::new();
    for (id, name) in ids {
        let current = |key: &str| all.iter().find(|(i, _, k, _)| *i == id && k == key).map(|(_, _, _, v)| v.clone());
        let wanted: Vec<(String, String)> = match target {
            FlavorTarget::DeployImages { kernel, ramdisk } => vec![
                ("baremetal:deploy_kernel_id".into(), kernel.clone()),
                ("baremetal:deploy_ramdisk_id".into(), ramdisk.clone()),
            ],
            FlavorTarget::ResourceClass(c) => vec![
                (format!("resources:{}", custom_class(c)), "1".into()),
                ("resources:VCPU".into(), "0".into()),
                ("resources:MEMORY_MB".into(), "0".into()),
                ("resources:DISK_GB".into(), "0".into()),
            ],
        };
        for (key, new) in wanted {
            let old = current(&key);
            if old.as_deref() != Some(new.as_str()) {
                out.push(SpecChange { flavor_id: id, flavor: name.clone(), key, old, new });
            }
        }
    }
    Ok(out)
}

fn changes_ddl(d: Dialect) -> String {
    let ts = d.timestamp_type();
    let id = d.serial_primary_key();
    format!(
        "CREATE TABLE IF NOT EXISTS {CHANGES_TABLE} (id {id}, change_set VARCHAR(36) NOT NULL, applied_at {ts} NOT NULL, restored_at {ts} NULL, \
         schema_kind VARCHAR(10) NOT NULL, flavor_id INTEGER NOT NULL, spec_key VARCHAR(255) NOT NULL, old_value VARCHAR(255) NULL, new_value VARCHAR(255) NOT NULL)"
    )
}

/// Applies the changes in one transaction and records them (old values) under `change_set`.
pub async fn apply(db: &Db, schema: FlavorSchema, changes: &[SpecChange], change_set: &str) -> Result<(), FlavorError> {
    let d = db.dialect();
    let (_, extra, fk) = schema.tables();
    let key = d.quote("key");
    // DDL first and on its own: MySQL commits implicitly on DDL
    db.execute(&changes_ddl(d), vec![]).await?;
    let now = chrono::Utc::now().naive_utc();
    let mut stmts: Vec<(String, Vec<Val>)> = Vec::new();
    for c in changes {
        let (sql, vals) = match (&c.old, schema) {
            (Some(_), FlavorSchema::Juno) => (
                format!("UPDATE {extra} SET value = ?, updated_at = ? WHERE {fk} = ? AND {key} = ? AND deleted = 0"),
                vec![
                    Val::Text(Some(c.new.clone())),
                    Val::Time(Some(now)),
                    Val::Int(Some(c.flavor_id)),
                    Val::Text(Some(c.key.clone())),
                ],
            ),
            (Some(_), FlavorSchema::Modern) => (
                format!("UPDATE {extra} SET value = ?, updated_at = ? WHERE {fk} = ? AND {key} = ?"),
                vec![
                    Val::Text(Some(c.new.clone())),
                    Val::Time(Some(now)),
                    Val::Int(Some(c.flavor_id)),
                    Val::Text(Some(c.key.clone())),
                ],
            ),
            (None, FlavorSchema::Juno) => (
                format!("INSERT INTO {extra} ({fk}, {key}, value, deleted, created_at) VALUES (?, ?, ?, 0, ?)"),
                vec![
                    Val::Int(Some(c.flavor_id)),
                    Val::Text(Some(c.key.clone())),
                    Val::Text(Some(c.new.clone())),
                    Val::Time(Some(now)),
                ],
            ),
            (None, FlavorSchema::Modern) => (
                format!("INSERT INTO {extra} ({fk}, {key}, value, created_at) VALUES (?, ?, ?, ?)"),
                vec![
                    Val::Int(Some(c.flavor_id)),
                    Val::Text(Some(c.key.clone())),
                    Val::Text(Some(c.new.clone())),
                    Val::Time(Some(now)),
                ],
            ),
        };
        stmts.push((sql, vals));
        stmts.push((
            format!("INSERT INTO {CHANGES_TABLE} (change_set, applied_at, schema_kind, flavor_id, spec_key, old_value, new_value) VALUES (?, ?, ?, ?, ?, ?, ?)"),
            vec![
                Val::Text(Some(change_set.into())),
                Val::Time(Some(now)),
                Val::Text(Some(if schema == FlavorSchema::Juno { "juno".into() } else { "modern".into() })),
                Val::Int(Some(c.flavor_id)),
                Val::Text(Some(c.key.clone())),
                Val::Text(c.old.clone()),
                Val::Text(Some(c.new.clone())),
            ],
        ));
    }
    db.execute_in_transaction(stmts).await?;
    tracing::info!(change_set, changes = changes.len(), "flavor changes applied");
    Ok(())
}

/// The recorded changes not yet restored, newest first.
fn recorded_sql(d: Dialect) -> String {
    format!(
        "SELECT {}, {}, {}, {} FROM {CHANGES_TABLE} WHERE restored_at IS NULL ORDER BY applied_at DESC, id DESC",
        d.column("change_set", Cast::Text),
        d.column("flavor_id", Cast::Int),
        d.column("spec_key", Cast::Text),
        d.column("old_value", Cast::Text),
    )
}

/// Restores the newest (or the given) change set: old values back, added keys removed, in one
/// transaction. Returns how many specs were restored.
pub async fn restore(db: &Db, schema: FlavorSchema, change_set: Option<&str>) -> Result<(String, usize), FlavorError> {
    let d = db.dialect();
    if !db.table_names().await?.iter().any(|t| t.eq_ignore_ascii_case(CHANGES_TABLE)) {
        return Err(FlavorError::NothingToRestore);
    }
    let sql = recorded_sql(d);
    let rows = db
        .fetch_map(&sql, vec![], |r| {
            Ok((
                r.string("change_set")?,
                r.get::<i64, _>("flavor_id")?,
                r.string("spec_key")?,
                r.opt_string("old_value")?,
            ))
        })
        .await?;
    let set = match change_set {
        Some(s) => s.to_string(),
        None => rows.first().map(|r| r.0.clone()).ok_or(FlavorError::NothingToRestore)?,
    };
    let (_, extra, fk) = schema.tables();
    let key = d.quote("key");
    let mut stmts = Vec::new();
    let mut n = 0;
    for (cs, fid, k, old) in rows.iter().filter(|r| r.0 == set) {
        let _ = cs;
        n += 1;
        stmts.push(match old {
            Some(v) => (
                format!("UPDATE {extra} SET value = ? WHERE {fk} = ? AND {key} = ?"),
                vec![Val::Text(Some(v.clone())), Val::Int(Some(*fid)), Val::Text(Some(k.clone()))],
            ),
            None => (
                format!("DELETE FROM {extra} WHERE {fk} = ? AND {key} = ?"),
                vec![Val::Int(Some(*fid)), Val::Text(Some(k.clone()))],
            ),
        });
    }
    if n == 0 {
        return Err(FlavorError::NothingToRestore);
    }
    stmts.push((
        format!("UPDATE {CHANGES_TABLE} SET restored_at = ? WHERE change_set = ?"),
        vec![Val::Time(Some(chrono::Utc::now().naive_utc())), Val::Text(Some(set.clone()))],
    ));
    db.execute_in_transaction(stmts).await?;
    tracing::warn!(change_set = %set, specs = n, "flavor changes restored");
    Ok((set, n))
}

crate::core::kind::always!(Runtime: FlavorError);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_resource_class_names() {
        assert_eq!(custom_class("baremetal"), "CUSTOM_BAREMETAL");
        assert_eq!(custom_class("bm.large-gpu"), "CUSTOM_BM_LARGE_GPU");
        assert_eq!(custom_class("CUSTOM_GOLD"), "CUSTOM_GOLD");
    }
}
