//! The host change in Nova's database: read what the plan needs (nova_bm read-only, Nova's
//! instances and services), apply a plan in one transaction, each row guarded by the values the
//! plan saw, recorded in `bm2ironic_host_changes` (old values included), and restore a change set
//! exactly (refused for an instance changed since). `updated_at` is left as it was, so a restore
//! gives back the very rows.

use crate::core::db::sql::Val;
use crate::core::db::url::DbUrl;
use crate::core::db::{Access, Cast, Db, DbError, Dialect, Tx};
use crate::core::migrate::hosts::plan::{plan_hosts, HostMove, HostPlan};
use crate::core::settings::heartbeat::Heartbeats;
use crate::core::source::nova::{self, NovaError};
use crate::core::source::nova_bm::{NovaBmSource, SourceError};

pub const HOST_CHANGES_TABLE: &str = "bm2ironic_host_changes";

#[derive(Debug, thiserror::Error)]
pub enum HostsError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error(transparent)]
    Nova(#[from] NovaError),
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error("nothing written: {}", .0.join("; "))]
    Refused(Vec<String>),
    #[error("instance {uuid} changed since the plan (its host or node is no longer what the plan read): nothing written; run the command again to see the new plan")]
    ChangedSincePlan { uuid: String },
    #[error("instance {uuid} changed since change set {change_set} was applied (its host or node is no longer what bm2ironic wrote): nothing restored; put it back by hand or ask why it moved")]
    ChangedSinceApply { uuid: String, change_set: String },
    #[error("no host change recorded in this Nova database: nothing to restore")]
    NothingToRestore,
}

/// Reads nova_bm (read-only) and Nova's instances and services, and plans the move to `to`.
/// `heartbeats`: when Nova counts the old hosts' nova-compute down (their nova.conf, or Nova's defaults).
pub async fn preview_hosts(
    nova_bm: &DbUrl,
    nova_db: &Db,
    to: &str,
    heartbeats: Heartbeats,
) -> Result<HostPlan, HostsError> {
    let src = NovaBmSource::open(nova_bm).await?;
    let inv = src.read_inventory(|_| {}).await;
    src.close().await;
    let inv = inv?;
    let nodes: Vec<_> = inv.nodes.iter().map(|n| n.node.clone()).collect();
    let uuids: Vec<String> = nodes
        .iter()
        .filter(|n| !n.deleted)
        .filter_map(|n| n.instance_uuid.as_deref().map(str::trim).filter(|i| !i.is_empty()).map(str::to_string))
        .collect();
    let mut facts = nova::read_from(nova_db, &uuids).await?;
    facts.heartbeats = heartbeats;
    Ok(plan_hosts(&nodes, &facts, to))
}

/// Refuses every move whose node Ironic does not hold: an instance moved to the Ironic driver's host
/// whose node is gone (a rollback ran, or the load did not) is an instance nova-compute cannot find a
/// node for (before: `hosts --apply` right after a rollback moved 11 instances with no word).
pub async fn check_ironic_holds(ironic: &Db, plan: &mut HostPlan) -> Result<(), HostsError> {
    let wanted: Vec<String> = plan.moves.iter().map(|m| m.node_uuid.to_ascii_lowercase()).collect();
    let mut held = std::collections::HashSet::new();
    for chunk in wanted.chunks(500) {
        let sql = format!("SELECT uuid FROM nodes WHERE LOWER(uuid) IN {}", crate::core::db::sql::marks(chunk.len()));
        let found: Vec<String> = ironic.fetch_column(&sql, crate::core::db::sql::texts(chunk)).await?;
        held.extend(found.into_iter().map(|u| u.to_ascii_lowercase()));
    }
    for m in &plan.moves {
        if !held.contains(&m.node_uuid.to_ascii_lowercase()) {
            plan.refusals.push(format!(
                "Ironic holds no node {} for instance {}: migrate it first (or was the load rolled back?); nova-compute would find no node for the instance. If the plan skipped its node, leave it out: --leave-out {}",
                crate::core::text::visible_line(&m.node_uuid),
                crate::core::text::visible_line(&m.instance_uuid),
                crate::core::text::visible_line(&m.instance_uuid)
            ));
        }
    }
    Ok(())
}

fn changes_ddl(d: Dialect) -> String {
    let ts = d.timestamp_type();
    let id = d.serial_primary_key();
    format!(
        "CREATE TABLE IF NOT EXISTS {HOST_CHANGES_TABLE} (id {id}, change_set VARCHAR(36) NOT NULL, applied_at {ts} NOT NULL, restored_at {ts} NULL, \
         instance_uuid VARCHAR(36) NOT NULL, nova_bm_host VARCHAR(255) NULL, old_host VARCHAR(255) NULL, old_node VARCHAR(255) NULL, \
         new_host VARCHAR(255) NOT NULL, new_node VARCHAR(255) NOT NULL)"
    )
}

/// `col = ?` with the value bound, or `col IS NULL` (a bound NULL compares to nothing).
fn is(col: &str, v: &Option<String>, vals: &mut Vec<Val>) -> String {
    match v {
        Some(s) => {
            vals.push(Val::Text(Some(s.clone())));
            format!("{col} = ?")
        }
        None => format!("{col} IS NULL"),
    }
}

/// `UPDATE instances SET host, node WHERE uuid AND host/node are still `from``; one row or none.
async fn move_row(
    tx: &mut Tx<'_>,
    uuid: &str,
    to: (&Option<String>, &Option<String>),
    from: (&Option<String>, &Option<String>),
) -> Result<u64, DbError> {
    let mut vals = vec![Val::Text(to.0.clone()), Val::Text(to.1.clone()), Val::Text(Some(uuid.to_string()))];
    let h = is("host", from.0, &mut vals);
    let n = is("node", from.1, &mut vals);
    let sql = format!("UPDATE instances SET host = ?, node = ? WHERE uuid = ? AND deleted = 0 AND {h} AND {n}");
    tx.execute(&sql, vals).await
}

/// Applies the plan in one transaction as change set `change_set`: each instance only if its host
/// and node are still what the plan read (else everything is rolled back).
pub async fn apply_hosts(db: &Db, plan: &HostPlan, change_set: &str) -> Result<usize, HostsError> {
    if !plan.refusals.is_empty() {
        return Err(HostsError::Refused(plan.refusals.clone()));
    }
    // DDL first and on its own: MySQL commits implicitly on DDL
    db.execute(&changes_ddl(db.dialect()), vec![]).await?;
    let now = chrono::Utc::now().naive_utc();
    let mut tx = db.begin().await?;
    for m in &plan.moves {
        let HostMove { instance_uuid, nova_bm_host, old_host, old_node, new_host, new_node, .. } = m;
        let new = (Some(new_host.clone()), Some(new_node.clone()));
        if move_row(&mut tx, instance_uuid, (&new.0, &new.1), (old_host, old_node)).await? != 1 {
            tx.rollback().await?;
            return Err(HostsError::ChangedSincePlan {
                uuid: crate::core::text::visible_line(instance_uuid).into_owned(),
            });
        }
        tx.execute(
            &format!("INSERT INTO {HOST_CHANGES_TABLE} (change_set, applied_at, instance_uuid, nova_bm_host, old_host, old_node, new_host, new_node) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
            vec![
                Val::Text(Some(change_set.into())),
                Val::Time(Some(now)),
                Val::Text(Some(instance_uuid.clone())),
                Val::Text(nova_bm_host.clone()),
                Val::Text(old_host.clone()),
                Val::Text(old_node.clone()),
                Val::Text(Some(new_host.clone())),
                Val::Text(Some(new_node.clone())),
            ],
        )
        .await?;
    }
    tx.commit().await?;
    tracing::info!(change_set, instances = plan.moves.len(), to = %plan.to, "host changes applied");
    Ok(plan.moves.len())
}

/// One recorded move not yet restored.
#[derive(Debug, Clone)]
struct Recorded {
    change_set: String,
    instance_uuid: String,
    old_host: Option<String>,
    old_node: Option<String>,
    new_host: Option<String>,
    new_node: Option<String>,
}

/// Puts back the newest (or the given) change set in one transaction; refuses when an instance
/// has moved since. Returns the change set and how many instances went back.
pub async fn restore_hosts(db: &Db, change_set: Option<&str>) -> Result<(String, usize), HostsError> {
    if !db.table_names().await?.iter().any(|t| t.eq_ignore_ascii_case(HOST_CHANGES_TABLE)) {
        return Err(HostsError::NothingToRestore);
    }
    let d = db.dialect();
    let sql = format!(
        "SELECT {}, {}, {}, {}, {}, {} FROM {HOST_CHANGES_TABLE} WHERE restored_at IS NULL ORDER BY applied_at DESC, id DESC",
        d.column("change_set", Cast::Text),
        d.column("instance_uuid", Cast::Text),
        d.column("old_host", Cast::Text),
        d.column("old_node", Cast::Text),
        d.column("new_host", Cast::Text),
        d.column("new_node", Cast::Text),
    );
    let rows = db
        .fetch_map(&sql, vec![], |r| {
            Ok(Recorded {
                change_set: r.string("change_set")?,
                instance_uuid: r.string("instance_uuid")?,
                old_host: r.opt_string("old_host")?,
                old_node: r.opt_string("old_node")?,
                new_host: r.opt_string("new_host")?,
                new_node: r.opt_string("new_node")?,
            })
        })
        .await?;
    let set = match change_set {
        Some(s) => s.to_string(),
        None => rows.first().map(|r| r.change_set.clone()).ok_or(HostsError::NothingToRestore)?,
    };
    let mine: Vec<&Recorded> = rows.iter().filter(|r| r.change_set == set).collect();
    if mine.is_empty() {
        return Err(HostsError::NothingToRestore);
    }
    let mut tx = db.begin().await?;
    for r in &mine {
        let back = move_row(&mut tx, &r.instance_uuid, (&r.old_host, &r.old_node), (&r.new_host, &r.new_node)).await?;
        if back != 1 {
            tx.rollback().await?;
            return Err(HostsError::ChangedSinceApply {
                uuid: crate::core::text::visible_line(&r.instance_uuid).into_owned(),
                change_set: set,
            });
        }
    }
    tx.execute(
        &format!("UPDATE {HOST_CHANGES_TABLE} SET restored_at = ? WHERE change_set = ?"),
        vec![Val::Time(Some(chrono::Utc::now().naive_utc())), Val::Text(Some(set.clone()))],
    )
    .await?;
    tx.commit().await?;
    tracing::warn!(change_set = %set, instances = mine.len(), "host changes restored");
    Ok((set, mine.len()))
}

/// Opens the Nova database with `access` (read-write for apply and restore).
pub async fn open_nova(url: &DbUrl, access: Access) -> Result<Db, HostsError> {
    Ok(Db::connect(url, access).await?)
}

impl crate::core::kind::HasKind for HostsError {
    /// A move refused (a blocking reason named) is a conflict; nothing to restore is the
    /// operator's (no host change was made here); the rest is the databases'.
    fn kind(&self) -> crate::core::kind::Kind {
        use crate::core::kind::Kind;
        match self {
            HostsError::Refused(_) => Kind::Conflicts,
            HostsError::NothingToRestore => Kind::Usage,
            _ => Kind::Runtime,
        }
    }
}
