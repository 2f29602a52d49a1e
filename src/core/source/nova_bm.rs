//! The nova_bm source: opens the database read-only, checks that it is nova_bm at schema version
//! 10, and streams `bm_nodes` / `bm_interfaces` into typed rows (one pass, no second copy).

use futures::stream::{BoxStream, StreamExt, TryStreamExt};

use crate::core::db::secret::Secret;
use crate::core::db::url::DbUrl;
use crate::core::db::{Access, Cast, Db, DbError, Dialect, Row};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::core::source::model::{BadValue, BmInterface, BmNode, InterfaceRuns, Inventory, InventoryBuilder};
use crate::core::AbortOnDrop;

pub const NOVA_BM_REPOSITORY: &str = "nova_bm";
/// nova_bm's last schema version (Icehouse and Juno).
pub const NOVA_BM_VERSION: i64 = 10;

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("{what} is not a nova_bm database: it has no {missing} table (point --nova-bm-db at the database of nova.conf [baremetal] sql_connection)")]
    NotNovaBm { what: String, missing: String },
    #[error("{what} is not a nova_bm database: its migrate_version holds {found} (point --nova-bm-db at the database of nova.conf [baremetal] sql_connection)")]
    WrongRepository { what: String, found: String },
    #[error("{what}: the nova_bm schema is at version {found}, bm2ironic reads version 10 (Icehouse/Juno): upgrade it first with `nova-baremetal-manage db sync` from Icehouse or Juno nova")]
    OldVersion { what: String, found: i64 },
    #[error("{what}: the nova_bm schema is at version {found}, newer than the last nova_bm release (10): this is not a schema bm2ironic knows")]
    UnknownVersion { what: String, found: i64 },
    #[error("{what}: {table} row id {id}: column {column}: {reason} (fix or remove the row, then run again)")]
    BadRow { what: String, table: &'static str, id: String, column: String, reason: String },
}

/// An open, checked nova_bm database.
pub struct NovaBmSource {
    pub db: Db,
    pub schema_version: i64,
}

use Cast::{Flag, Int, Text};
/// Timestamps are selected as text and read here (`timestamp`): a value the server holds but that
/// is no date (MariaDB's `0000-00-00` under a permissive sql_mode, PostgreSQL's `infinity`, any
/// text in SQLite) is then one row's named problem instead of a failed read of the whole table
/// (sqlx refused the zero date, and panicked on PostgreSQL's `infinity`: `NaiveDateTime + TimeDelta`
/// overflowed).
#[allow(non_upper_case_globals)]
const Time: Cast = Cast::TimeText;

const NODE_COLUMNS: &[(&str, Cast)] = &[
    ("id", Int),
    ("uuid", Text),
    ("service_host", Text),
    ("task_state", Text),
    ("instance_uuid", Text),
    ("instance_name", Text),
    ("cpus", Int),
    ("memory_mb", Int),
    ("local_gb", Int),
    ("pm_address", Text),
    ("pm_user", Text),
    ("pm_password", Text),
    ("terminal_port", Int),
    ("image_path", Text),
    ("pxe_config_path", Text),
    ("deploy_key", Text),
    ("root_mb", Int),
    ("swap_mb", Int),
    ("ephemeral_mb", Int),
    ("preserve_ephemeral", Flag),
    ("created_at", Time),
    ("updated_at", Time),
    ("deleted_at", Time),
    ("deleted", Flag),
];

const INTERFACE_COLUMNS: &[(&str, Cast)] = &[
    ("id", Int),
    ("bm_node_id", Int),
    ("address", Text),
    ("datapath_id", Text),
    ("port_no", Int),
    ("vif_uuid", Text),
    ("created_at", Time),
    ("updated_at", Time),
    ("deleted_at", Time),
    ("deleted", Flag),
];

/// SELECT with casts that give every backend the same Rust types (i64, String, NaiveDateTime):
/// booleans and integers arrive as BIGINT whatever the column type a site ended up with.
/// The order names the table's own columns (`bm_nodes.id`): a bare `id` is the cast in the select
/// list on MySQL/MariaDB and PostgreSQL, which no index gives, so the server read and sorted the
/// whole table before sending its first row (0.3 s at 100k nodes, see docs/performance.md).
fn select_sql(d: Dialect, table: &str, cols: &[(&str, Cast)], order: &[&str]) -> String {
    let exprs: Vec<String> = cols.iter().map(|(c, k)| d.column(c, *k)).collect();
    let order: Vec<String> = order.iter().map(|c| format!("{table}.{c}")).collect();
    format!("SELECT {} FROM {table} ORDER BY {}", exprs.join(", "), order.join(", "))
}

/// The repository and version rows of `migrate_version`.
fn version_sql(d: Dialect) -> String {
    format!("SELECT {}, {} FROM migrate_version", d.cast(Cast::Char, "repository_id"), d.cast(Cast::Int, "version"))
}

/// Why a value did not decode, in an operator's words (`Row::get` says what the column holds and
/// what was expected).
fn decode_reason(e: sqlx::Error, expected: &str) -> String {
    match e {
        sqlx::Error::ColumnDecode { source, .. } => source.to_string(),
        other => format!("expected {expected}: {other}"),
    }
}

/// A timestamp as the servers give it as text: `YYYY-MM-DD HH:MM[:SS[.fraction]]`, a `T` for the
/// space, and `Z` or a zero offset (`+00`, `+00:00`) allowed after it; nova wrote UTC. None for
/// anything else (a zero date, `infinity`, another offset, other text).
pub(crate) fn timestamp(text: &str) -> Option<chrono::NaiveDateTime> {
    let t = text.trim();
    let t = t.strip_suffix('Z').or_else(|| t.strip_suffix("+00:00")).or_else(|| t.strip_suffix("+00")).unwrap_or(t);
    let b = t.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let d = b.get(r)?;
        d.iter().all(u8::is_ascii_digit).then(|| d.iter().fold(0u32, |n, c| n * 10 + u32::from(c - b'0')))
    };
    if b.len() < 16 || b[4] != b'-' || b[7] != b'-' || !(b[10] == b' ' || b[10] == b'T') || b[13] != b':' {
        return None;
    }
    let date = chrono::NaiveDate::from_ymd_opt(num(0..4)? as i32, num(5..7)?, num(8..10)?)?;
    let (h, m) = (num(11..13)?, num(14..16)?);
    let (mut s, mut nanos) = (0, 0);
    if b.len() > 16 {
        if b[16] != b':' {
            return None;
        }
        s = num(17..19)?;
        if b.len() > 19 {
            let digits = b[19..].strip_prefix(b".")?;
            if digits.is_empty() || digits.len() > 9 || !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let n = digits.iter().fold(0u32, |n, c| n * 10 + u32::from(c - b'0'));
            nanos = n * 10u32.pow(9 - digits.len() as u32);
        }
    }
    date.and_hms_nano_opt(h, m, s, nanos)
}

/// Where `name` is in `cols`, worked out when building (a name not in the list does not build).
const fn at(cols: &[(&str, Cast)], name: &str) -> usize {
    let mut i = 0;
    while i < cols.len() {
        let (a, b) = (cols[i].0.as_bytes(), name.as_bytes());
        if a.len() == b.len() {
            let mut k = 0;
            while k < a.len() && a[k] == b[k] {
                k += 1;
            }
            if k == a.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("a column that the select does not name")
}

/// A column of `$cols` by name: its position in the select (rows are decoded by position, a
/// name lookup per value was a tenth of reading) and its name (for messages).
macro_rules! col {
    ($cols:ident, $name:literal) => {{
        const AT: usize = at($cols, $name);
        (AT, $name)
    }};
}

/// Decodes a row, naming the first bad column.
/// The select casts every column to one type per kind, so the strict `Row::get` is used: a value
/// that does not fit is reported as a bad row, never widened.
struct RowDecoder<'a> {
    row: &'a Row,
    table: &'static str,
    what: &'a str,
    /// the values read as NULL because they are not what their column holds (timestamps)
    bad: std::cell::RefCell<Vec<BadValue>>,
}

type Col = (usize, &'static str);

impl RowDecoder<'_> {
    fn bad(&self, column: &str, reason: String) -> SourceError {
        // `id` comes first in both selects
        let id = self.row.get::<Option<i64>, _>(0).ok().flatten().map(|i| i.to_string()).unwrap_or_else(|| "?".into());
        SourceError::BadRow { what: self.what.to_string(), table: self.table, id, column: column.into(), reason }
    }
    fn int(&self, (at, c): Col) -> Result<Option<i64>, SourceError> {
        self.row.get(at).map_err(|e| self.bad(c, decode_reason(e, "an integer")))
    }
    fn text(&self, (at, c): Col) -> Result<Option<String>, SourceError> {
        self.row.get(at).map_err(|e| self.bad(c, decode_reason(e, "text")))
    }
    /// A timestamp, or None (NULL, or a value that is no date: noted in `bad`, never a failed read).
    fn time(&self, (at, c): Col) -> Option<chrono::NaiveDateTime> {
        let found = match self.row.get::<Option<String>, _>(at) {
            Ok(None) => return None,
            Ok(Some(text)) => match timestamp(&text) {
                Some(t) => return Some(t),
                None => {
                    let shown: String = crate::core::text::visible_line(&text).chars().take(60).collect();
                    format!("'{shown}'")
                }
            },
            // what `Row::get` says the column holds ("holds the INTEGER value '12', expected text")
            Err(sqlx::Error::ColumnDecode { source, .. }) => {
                let why = source.to_string();
                why.strip_prefix("holds ").and_then(|w| w.split(", expected").next()).unwrap_or(&why).to_string()
            }
            Err(other) => other.to_string(),
        };
        self.bad.borrow_mut().push(BadValue { column: c, found, expected: "a date and time" });
        None
    }
    fn bad_values(&self) -> Vec<BadValue> {
        self.bad.take()
    }
    fn id(&self) -> Result<i64, SourceError> {
        const ID: Col = (0, "id");
        self.int(ID)?.ok_or_else(|| self.bad("id", "is NULL".into()))
    }
}

fn node_from_row(row: &Row, what: &str) -> Result<BmNode, SourceError> {
    let d = RowDecoder { row, table: "bm_nodes", what, bad: Default::default() };
    let deleted_raw = d.int(col!(NODE_COLUMNS, "deleted"))?;
    Ok(BmNode {
        id: d.id()?,
        uuid: d.text(col!(NODE_COLUMNS, "uuid"))?,
        service_host: d.text(col!(NODE_COLUMNS, "service_host"))?,
        task_state: d.text(col!(NODE_COLUMNS, "task_state"))?,
        instance_uuid: d.text(col!(NODE_COLUMNS, "instance_uuid"))?.filter(|s| !s.is_empty()),
        instance_name: d.text(col!(NODE_COLUMNS, "instance_name"))?,
        cpus: d.int(col!(NODE_COLUMNS, "cpus"))?,
        memory_mb: d.int(col!(NODE_COLUMNS, "memory_mb"))?,
        local_gb: d.int(col!(NODE_COLUMNS, "local_gb"))?,
        pm_address: d.text(col!(NODE_COLUMNS, "pm_address"))?,
        pm_user: d.text(col!(NODE_COLUMNS, "pm_user"))?,
        pm_password: d.text(col!(NODE_COLUMNS, "pm_password"))?.map(Secret::new),
        terminal_port: d.int(col!(NODE_COLUMNS, "terminal_port"))?,
        image_path: d.text(col!(NODE_COLUMNS, "image_path"))?,
        pxe_config_path: d.text(col!(NODE_COLUMNS, "pxe_config_path"))?,
        deploy_key: d.text(col!(NODE_COLUMNS, "deploy_key"))?.map(Secret::new),
        root_mb: d.int(col!(NODE_COLUMNS, "root_mb"))?,
        swap_mb: d.int(col!(NODE_COLUMNS, "swap_mb"))?,
        ephemeral_mb: d.int(col!(NODE_COLUMNS, "ephemeral_mb"))?,
        preserve_ephemeral: d.int(col!(NODE_COLUMNS, "preserve_ephemeral"))?.map(|v| v != 0),
        created_at: d.time(col!(NODE_COLUMNS, "created_at")),
        updated_at: d.time(col!(NODE_COLUMNS, "updated_at")),
        deleted_at: d.time(col!(NODE_COLUMNS, "deleted_at")),
        deleted: deleted_raw.is_some_and(|v| v != 0),
        deleted_raw,
        bad_values: d.bad_values(),
    })
}

fn interface_from_row(row: &Row, what: &str) -> Result<BmInterface, SourceError> {
    let d = RowDecoder { row, table: "bm_interfaces", what, bad: Default::default() };
    let deleted_raw = d.int(col!(INTERFACE_COLUMNS, "deleted"))?;
    Ok(BmInterface {
        id: d.id()?,
        bm_node_id: d.int(col!(INTERFACE_COLUMNS, "bm_node_id"))?,
        address: d.text(col!(INTERFACE_COLUMNS, "address"))?,
        address_normalized: None,
        datapath_id: d.text(col!(INTERFACE_COLUMNS, "datapath_id"))?,
        port_no: d.int(col!(INTERFACE_COLUMNS, "port_no"))?,
        vif_uuid: d.text(col!(INTERFACE_COLUMNS, "vif_uuid"))?.filter(|s| !s.is_empty()),
        created_at: d.time(col!(INTERFACE_COLUMNS, "created_at")),
        updated_at: d.time(col!(INTERFACE_COLUMNS, "updated_at")),
        deleted_at: d.time(col!(INTERFACE_COLUMNS, "deleted_at")),
        deleted: deleted_raw.is_some_and(|v| v != 0),
        deleted_raw,
        bad_values: d.bad_values(),
    }
    .normalize())
}

/// Progress while reading a large inventory.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadProgress {
    pub nodes: usize,
    pub interfaces: usize,
}

const PROGRESS_EVERY: usize = 1000;

impl NovaBmSource {
    /// Connects read-only and checks the schema.
    pub async fn open(url: &DbUrl) -> Result<NovaBmSource, SourceError> {
        let db = Db::connect(url, Access::ReadOnly).await?;
        match NovaBmSource::check(db.clone()).await {
            Ok(s) => Ok(s),
            Err(e) => {
                db.close().await;
                Err(e)
            }
        }
    }

    /// Checks that `db` is nova_bm at version 10.
    pub async fn check(db: Db) -> Result<NovaBmSource, SourceError> {
        let what = db.url.describe() + &db.url.database.as_ref().map(|d| format!(", database {d}")).unwrap_or_default();
        let tables = db.table_names().await?;
        for t in ["migrate_version", "bm_nodes", "bm_interfaces"] {
            if !tables.iter().any(|x| x.eq_ignore_ascii_case(t)) {
                return Err(SourceError::NotNovaBm { what, missing: t.into() });
            }
        }
        let sql = version_sql(db.dialect());
        let rows: Vec<(String, Option<i64>)> = db.fetch_map(&sql, vec![], |r| Ok((r.get(0)?, r.get(1)?))).await?;
        let Some((_, version)) = rows.iter().find(|(r, _)| r == NOVA_BM_REPOSITORY) else {
            let found = if rows.is_empty() {
                "no rows".to_string()
            } else {
                rows.iter().map(|(r, v)| format!("'{r}' version {}", v.unwrap_or(-1))).collect::<Vec<_>>().join(", ")
            };
            return Err(SourceError::WrongRepository { what, found });
        };
        let version = version.unwrap_or(0);
        if version < NOVA_BM_VERSION {
            return Err(SourceError::OldVersion { what, found: version });
        }
        if version > NOVA_BM_VERSION {
            return Err(SourceError::UnknownVersion { what, found: version });
        }
        tracing::info!(url = %db.url.redacted(), version, "nova_bm schema checked");
        Ok(NovaBmSource { db, schema_version: version })
    }

    fn what(&self) -> String {
        self.db.url.describe()
    }

    /// Streams `bm_nodes` (all rows, soft-deleted ones marked), ordered by id.
    pub fn nodes(&self) -> BoxStream<'_, Result<BmNode, SourceError>> {
        self.rows("bm_nodes", NODE_COLUMNS, &["id"], node_from_row)
    }

    /// Streams `bm_interfaces` in id order (the primary key's: no sort on the server; the inventory
    /// gathers each node's), MACs normalised beside the stored form.
    pub fn interfaces(&self) -> BoxStream<'_, Result<BmInterface, SourceError>> {
        self.rows("bm_interfaces", INTERFACE_COLUMNS, &["id"], interface_from_row)
    }

    /// Streams a table through `decode`, one row at a time.
    fn rows<T: Send + 'static>(
        &self,
        table: &str,
        cols: &[(&str, Cast)],
        order: &[&str],
        decode: fn(&Row, &str) -> Result<T, SourceError>,
    ) -> BoxStream<'_, Result<T, SourceError>> {
        let what = self.what();
        self.db
            .fetch(&select_sql(self.db.dialect(), table, cols, order), vec![])
            .map_err(SourceError::from)
            .and_then(move |row| futures::future::ready(decode(&row, &what)))
            .boxed()
    }

    /// Reads the whole inventory, reporting progress every 1000 rows: `bm_nodes` here while
    /// `bm_interfaces` is read on a second connection at the same time (each table in one pass in
    /// primary-key order, which the server streams without sorting; see docs/performance.md). Nodes
    /// go straight into the inventory; interfaces join them at the end.
    pub async fn read_inventory(&self, mut progress: impl FnMut(ReadProgress)) -> Result<Inventory, SourceError> {
        let mut p = ReadProgress::default();
        let counted = Arc::new(AtomicUsize::new(0));
        let mut interfaces = {
            let source = NovaBmSource { db: self.db.clone(), schema_version: self.schema_version };
            let counted = Arc::clone(&counted);
            AbortOnDrop(tokio::spawn(async move {
                let mut runs = InterfaceRuns::default();
                let mut stream = source.interfaces();
                while let Some(i) = stream.next().await {
                    runs.push(i?);
                    counted.fetch_add(1, Ordering::Relaxed);
                }
                Ok::<_, SourceError>(runs)
            }))
        };
        // room for every node at once: a Vec grown by doubling holds up to twice that while it grows
        let mut inv = InventoryBuilder::with_capacity(self.count("bm_nodes").await);
        let mut stream = self.nodes();
        while let Some(n) = stream.next().await {
            // an error, or this read being dropped, stops the interfaces' read too (`AbortOnDrop`)
            let n = n?;
            inv.node(n);
            p.nodes += 1;
            if p.nodes % PROGRESS_EVERY == 0 {
                p.interfaces = counted.load(Ordering::Relaxed);
                tracing::debug!(rows = p.nodes, interfaces = p.interfaces, "read bm_nodes batch");
                progress(p);
            }
        }
        drop(stream);
        let interfaces = loop {
            tokio::select! {
                done = interfaces.join() => break done,
                _ = tokio::time::sleep(std::time::Duration::from_millis(100)) => {
                    p.interfaces = counted.load(Ordering::Relaxed);
                    progress(p);
                }
            }
        };
        let interfaces = match interfaces {
            Ok(read) => read?,
            Err(e) => {
                return Err(DbError::Other {
                    what: self.what(),
                    message: format!("reading bm_interfaces stopped: {e}"),
                }
                .into())
            }
        };
        p.interfaces = interfaces.len();
        inv.interface_runs(interfaces);
        progress(p);
        tracing::info!(nodes = p.nodes, interfaces = p.interfaces, "read nova_bm inventory");
        Ok(inv.finish())
    }

    /// How many rows `table` holds (0 when it cannot tell): room to reserve, nothing more.
    async fn count(&self, table: &str) -> usize {
        let counted: Vec<i64> =
            self.db.fetch_map(&format!("SELECT COUNT(*) FROM {table}"), vec![], |r| r.get(0)).await.unwrap_or_default();
        counted.first().map_or(0, |c| (*c).clamp(0, 10_000_000) as usize)
    }

    pub async fn close(&self) {
        self.db.close().await
    }
}

impl crate::core::closing::Closes for NovaBmSource {
    async fn close_now(self) {
        self.close().await
    }
}

crate::core::kind::always!(Runtime: SourceError);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_casts_on_every_backend() {
        // rows are decoded by position: `id` first (`RowDecoder::id`, `bad`)
        assert_eq!((NODE_COLUMNS[0].0, INTERFACE_COLUMNS[0].0), ("id", "id"));
        for d in Dialect::all() {
            let sql = select_sql(d, "bm_nodes", NODE_COLUMNS, &["id"]);
            assert!(sql.starts_with(&format!("SELECT {}, {}, ", d.column("id", Int), d.column("uuid", Text))), "{sql}");
            // booleans and integers arrive as BIGINT, timestamps as text (read by `timestamp`)
            for (c, k) in [("deleted", Flag), ("cpus", Int), ("created_at", Time)] {
                assert!(sql.contains(&format!(", {}", d.column(c, k))), "{sql}");
            }
            // the table's column, not the cast of the select list (which no index gives)
            assert!(sql.ends_with(" ORDER BY bm_nodes.id"), "{sql}");
        }
    }

    #[test]
    fn timestamps_as_the_servers_write_them_and_nothing_else() {
        let t = |s: &str| timestamp(s).map(|t| t.to_string());
        assert_eq!(t("2014-05-01 10:00:00").as_deref(), Some("2014-05-01 10:00:00"));
        assert_eq!(t("2014-05-01 10:00:00.5").as_deref(), Some("2014-05-01 10:00:00.500"));
        assert_eq!(t("2014-05-01T10:00:00.123456Z").as_deref(), Some("2014-05-01 10:00:00.123456"));
        assert_eq!(t("2014-05-01 10:00:00+00").as_deref(), Some("2014-05-01 10:00:00"));
        assert_eq!(t("2014-05-01 10:00").as_deref(), Some("2014-05-01 10:00:00"));
        for bad in [
            "0000-00-00 00:00:00",
            "2014-00-00 00:00:00",
            "infinity",
            "-infinity",
            "2014-02-30 00:00:00",
            "2014-05-01 25:00:00",
            "2014-05-01 10:00:00+02",
            "2014-05-01 10:00:00.",
            "2014-05-01 10:00:00.1234567890",
            "yesterday",
            "",
            "2014-05-01",
            "\u{ff12}014-05-01 10:00:00",
        ] {
            assert_eq!(timestamp(bad), None, "{bad}");
        }
    }
}
