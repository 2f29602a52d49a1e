//! nova_bm fixtures: the version-10 schema for SQLite, MySQL/MariaDB and PostgreSQL, and a builder
//! that fills it with a described inventory. Used by the tests and by `demo` (never on a real source:
//! it writes).

use std::path::{Path, PathBuf};

use chrono::{NaiveDate, NaiveDateTime};

use crate::core::db::secret::Secret;
use crate::core::db::sql::{multi_insert, statements, Val};
use crate::core::db::{Db, DbError, PerBackend};
use crate::core::source::model::{BmInterface, BmNode};
use crate::core::source::nova_bm::NOVA_BM_REPOSITORY;
use crate::core::source::pxe::PxeBoot;
use crate::core::source::tftp::{BootFacts, PxeFound};

/// The nova_bm version-10 schema, as each backend's migrations built it.
const SCHEMA: PerBackend<&str> = PerBackend {
    mysql: include_str!("../../../assets/nova_bm/schema.mysql.sql"),
    postgres: include_str!("../../../assets/nova_bm/schema.postgres.sql"),
    sqlite: include_str!("../../../assets/nova_bm/schema.sqlite.sql"),
};
/// The schema `ironic-dbsync create_schema` builds for Ironic 39.0.0 on SQLite.
const IRONIC_SQLITE_SCHEMA: &str = include_str!("../../../assets/ironic/schema-39.0.0.sqlite.sql");

/// A small Nova database for the demo (SQLite): `instances` for the fixture's instances (one of them
/// deleted in Nova) and `services` (the baremetal nova-computes, stopped). As in modern Nova, the
/// flavors are in the API database ([`build_nova_api_sqlite`]).
pub async fn build_nova_sqlite(db: &Db, fixture: &Fixture) -> Result<(), DbError> {
    db.require_sqlite("the demo Nova database is SQLite only")?;
    let mut stmts: Vec<String> = vec![
        "CREATE TABLE instances (id INTEGER NOT NULL PRIMARY KEY, uuid VARCHAR(36) NOT NULL, image_ref VARCHAR(255), root_gb INTEGER, ephemeral_gb INTEGER, node VARCHAR(255), host VARCHAR(255), vm_state VARCHAR(255), power_state INTEGER, deleted INTEGER)".into(),
        "CREATE TABLE services (id INTEGER NOT NULL PRIMARY KEY, host VARCHAR(255), \"binary\" VARCHAR(255), topic VARCHAR(255), report_count INTEGER NOT NULL, disabled BOOLEAN, deleted INTEGER, created_at DATETIME, updated_at DATETIME)".into(),
    ];
    let with_instance: Vec<&BmNode> =
        fixture.nodes.iter().filter(|n| n.instance_uuid.is_some() && n.deleted_raw != Some(1)).collect();
    for (i, n) in with_instance.iter().enumerate() {
        // the last one was deleted in Nova behind nova_bm's back (an instance-missing-in-nova conflict)
        let deleted = if i + 1 == with_instance.len() { i + 1 } else { 0 };
        stmts.push(format!(
            "INSERT INTO instances VALUES ({}, '{}', 'glance-image-{:04}', {}, {}, '{}', '{}', 'active', 1, {deleted})",
            i + 1,
            n.instance_uuid.clone().unwrap_or_default(),
            n.id,
            n.root_mb.unwrap_or(0) / 1024,
            n.ephemeral_mb.unwrap_or(0) / 1024,
            n.uuid.clone().unwrap_or_default(),
            n.service_host.clone().unwrap_or_default()
        ));
    }
    for (i, h) in ["bm-compute-1", "bm-compute-2", "bm-compute-3"].iter().enumerate() {
        stmts.push(format!("INSERT INTO services VALUES ({}, '{h}', 'nova-compute', 'compute', 100, 0, 0, '2014-09-01 00:00:00', '2014-09-01 00:00:00')", i + 1));
    }
    db.execute_in_transaction(stmts.into_iter().map(|s| (s, vec![])).collect()).await
}

/// A small modern Nova API database for the demo (SQLite): `flavors` and `flavor_extra_specs`, with
/// the baremetal flavor nova baremetal used (its `baremetal:` keys) and an ordinary one.
pub async fn build_nova_api_sqlite(db: &Db) -> Result<(), DbError> {
    db.require_sqlite("the demo Nova API database is SQLite only")?;
    let stmts = [
        "CREATE TABLE flavors (created_at DATETIME, updated_at DATETIME, name VARCHAR(255) NOT NULL, id INTEGER NOT NULL PRIMARY KEY, memory_mb INTEGER NOT NULL, vcpus INTEGER NOT NULL, swap INTEGER NOT NULL, vcpu_weight INTEGER, flavorid VARCHAR(255) NOT NULL, rxtx_factor FLOAT, root_gb INTEGER, ephemeral_gb INTEGER, disabled BOOLEAN, is_public BOOLEAN, description TEXT)",
        "CREATE TABLE flavor_extra_specs (created_at DATETIME, updated_at DATETIME, id INTEGER NOT NULL PRIMARY KEY, \"key\" VARCHAR(255) NOT NULL, value VARCHAR(255), flavor_id INTEGER NOT NULL)",
        "INSERT INTO flavors VALUES ('2014-05-01 10:00:00', NULL, 'bm.large', 1, 16384, 8, 0, NULL, 'bm.large', 1.0, 20, 0, 0, 1, NULL), ('2014-05-01 10:00:00', NULL, 'm1.small', 2, 2048, 1, 0, NULL, '2', 1.0, 20, 0, 0, 1, NULL)",
        "INSERT INTO flavor_extra_specs VALUES ('2014-05-01 10:00:00', NULL, 1, 'cpu_arch', 'x86_64', 1), ('2014-05-01 10:00:00', NULL, 2, 'baremetal:deploy_kernel_id', 'nova-bm-kernel', 1), ('2014-05-01 10:00:00', NULL, 3, 'baremetal:deploy_ramdisk_id', 'nova-bm-ramdisk', 1), ('2014-05-01 10:00:00', NULL, 4, 'hw:cpu_policy', 'shared', 2)",
    ];
    db.execute_in_transaction(stmts.into_iter().map(|s| (s.to_string(), vec![])).collect()).await
}

/// Creates an empty modern (39.0.0) Ironic schema in a SQLite database (the demo sandbox's target).
pub async fn build_ironic_sqlite(db: &Db) -> Result<(), DbError> {
    db.require_sqlite("the embedded Ironic schema is for SQLite; use ironic-dbsync elsewhere")?;
    db.execute_in_transaction(statements(IRONIC_SQLITE_SCHEMA).into_iter().map(|s| (s, vec![])).collect()).await
}

/// A described nova_bm inventory.
#[derive(Debug, Clone)]
pub struct Fixture {
    pub schema_version: i64,
    pub nodes: Vec<BmNode>,
    pub interfaces: Vec<BmInterface>,
}

fn ts(y: i32, m: u32, d: u32, h: u32) -> Option<NaiveDateTime> {
    NaiveDate::from_ymd_opt(y, m, d).and_then(|d| d.and_hms_opt(h, 0, 0))
}

fn node(id: i64, host: &str) -> BmNode {
    BmNode {
        id,
        uuid: Some(format!("bbbbbbbb-0000-4000-8000-{id:012}")),
        service_host: Some(host.into()),
        cpus: Some(8),
        memory_mb: Some(16384),
        local_gb: Some(500),
        pm_address: Some("127.0.0.1".into()),
        pm_user: Some("admin".into()),
        pm_password: Some(Secret::new(format!("bmc-Secret-{id}"))),
        terminal_port: None,
        // NULL, as nova baremetal's API leaves a node no deploy has touched (the column's server
        // default is never used: its ORM writes NULL); the driver sets it at each deploy and teardown
        preserve_ephemeral: None,
        // created and updated differ so a swap shows (a node nova baremetal's API created and nothing
        // updated has NULL: docs/mapping.md, the fixture's deliberate differences)
        created_at: ts(2014, 5, 1, 10),
        updated_at: ts(2014, 6, 1, 10).map(|t| t + chrono::Duration::minutes(id)),
        deleted_raw: Some(0),
        ..Default::default()
    }
}

fn with_instance(mut n: BmNode, state: &str) -> BmNode {
    n.task_state = Some(state.into());
    n.instance_uuid = Some(format!("aaaaaaaa-0000-4000-8000-{:012}", n.id));
    n.preserve_ephemeral = Some(false);
    // what nova baremetal's driver and PXE driver write at a deploy (docs/mapping.md 7): the instance's
    // hostname (not its `instance-%08x` name), its disk under instances_path by that name, its PXE
    // config under the instance's uuid (not the node's)
    n.instance_name = Some(format!("bm-instance-{}", n.id));
    n.root_mb = Some(20480);
    n.swap_mb = Some(1024);
    n.ephemeral_mb = Some(0);
    n.image_path = Some(format!("/var/lib/nova/instances/instance-{:08x}/disk", n.id));
    n.pxe_config_path = Some(format!("/tftpboot/{}/config", n.instance_uuid.clone().unwrap_or_default()));
    // the deploy's key (32 upper-case letters and digits, Juno's `random_alnum(32)`), left set after
    // the deploy: Juno clears it at teardown only (seen on nova baremetal's own deploys, #45)
    n.deploy_key = Some(Secret::new(format!("K{:031}", n.id)));
    n
}

/// A node whose instance nova baremetal tore down (`nova delete`), as its driver leaves the row:
/// `task_state` `deleted`, `preserve_ephemeral` false, the instance's fields NULL; its PXE driver's
/// `deactivate_bootloader` clears the deploy key and paths and writes 0 into `root_mb` and
/// `swap_mb`, and the deploy's `ephemeral_mb` stays.
fn torn_down(mut n: BmNode) -> BmNode {
    n.task_state = Some("deleted".into());
    n.preserve_ephemeral = Some(false);
    (n.root_mb, n.swap_mb, n.ephemeral_mb) = (Some(0), Some(0), Some(0));
    n
}

fn iface(id: i64, node: Option<i64>, address: &str) -> BmInterface {
    BmInterface {
        id,
        bm_node_id: node,
        address: Some(address.into()),
        created_at: ts(2014, 5, 1, 10),
        deleted_raw: Some(0),
        ..Default::default()
    }
    .normalize()
}

/// Writes `bytes` to `path` (replacing a file written earlier), never through a link planted there.
fn write_no_link(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    f.write_all(bytes)
}

/// The root partition uuid the fixtures' nova baremetal gave an instance (v5 of its uuid).
pub fn root_uuid_of(instance_uuid: &str) -> String {
    let ns = uuid::Uuid::from_u128(0x0f00_7000_0000_4000_8000_0000_0000_0000);
    uuid::Uuid::new_v5(&ns, instance_uuid.to_ascii_lowercase().as_bytes()).to_string()
}

impl Fixture {
    /// The live nodes' instance uuids (lower-case), each once.
    fn instances(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .nodes
            .iter()
            .filter(|n| n.deleted_raw != Some(1))
            .filter_map(|n| n.instance_uuid.as_deref().and_then(|u| uuid::Uuid::try_parse(u.trim()).ok()))
            .map(|u| u.hyphenated().to_string())
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// Writes nova baremetal's TFTP tree for every live instance under `dir`: `<instance>/config`
    /// (`default boot`, `root=UUID=<root_uuid_of>`), `kernel`, `ramdisk`.
    pub fn write_tftp_tree(&self, dir: &Path) -> std::io::Result<()> {
        let root = dir.display().to_string();
        for inst in self.instances() {
            let d = dir.join(&inst);
            std::fs::create_dir_all(&d)?;
            let config = crate::core::source::pxe::nova_baremetal_config(
                &root,
                &inst,
                &root_uuid_of(&inst),
                "nofb nomodeset vga=normal",
            );
            let files: [(&str, &[u8]); 3] = [
                ("config", config.as_bytes()),
                ("kernel", b"demo instance kernel\n"),
                ("ramdisk", b"demo instance ramdisk\n"),
            ];
            for (name, bytes) in files {
                write_no_link(&d.join(name), bytes)?;
            }
        }
        Ok(())
    }

    /// What `write_tftp_tree(dir)` would let the plan learn, in memory (for tests without files).
    pub fn boots(&self, dir: &str) -> BootFacts {
        let by_instance = self
            .instances()
            .into_iter()
            .map(|inst| {
                let found = PxeFound {
                    boot: PxeBoot {
                        root_uuid: root_uuid_of(&inst),
                        extra_args: ["nofb", "nomodeset", "vga=normal"].map(String::from).to_vec(),
                    },
                    config: PathBuf::from(format!("{dir}/{inst}/config")),
                    host: None,
                    kernel: Some(format!("file://{dir}/{inst}/kernel")),
                    ramdisk: Some(format!("file://{dir}/{inst}/ramdisk")),
                };
                (inst, Ok(found))
            })
            .collect();
        BootFacts { given: true, by_instance }
    }
    /// The reference inventory of the tests: one example of every shape nova_bm rows take in the wild.
    pub fn standard() -> Fixture {
        let mut nodes = Vec::new();
        // 1: running instance, terminal port, two NICs (one upper-case MAC, one bound to a VIF)
        let mut n = with_instance(node(1, "bm-compute-1"), "active");
        n.terminal_port = Some(8001);
        nodes.push(n);
        // 2: free node inserted by hand: `deleted` NULL means live
        let mut n = node(2, "bm-compute-1");
        n.deleted_raw = None;
        n.cpus = Some(4);
        n.memory_mb = Some(8192);
        n.local_gb = Some(250);
        nodes.push(n);
        // 3: soft-deleted
        // (torn down first: what nova baremetal's teardown leaves, juno_baremetal::deployed)
        let mut n = torn_down(node(3, "bm-compute-1"));
        n.deleted_raw = Some(1);
        n.deleted_at = ts(2014, 7, 1, 0);
        nodes.push(n);
        // 4: mid-deploy, 5: failed deploy
        nodes.push(with_instance(node(4, "bm-compute-1"), "building"));
        nodes.push(with_instance(node(5, "bm-compute-2"), "deploy failed"));
        // 6: no uuid (nova cannot link it)
        let mut n = node(6, "bm-compute-2");
        n.uuid = None;
        nodes.push(n);
        // 7: no BMC address
        let mut n = node(7, "bm-compute-2");
        n.pm_address = None;
        n.pm_user = None;
        n.pm_password = None;
        nodes.push(n);
        // 8: incomplete properties
        let mut n = node(8, "bm-compute-2");
        n.cpus = None;
        n.memory_mb = Some(0);
        nodes.push(n);
        // 9: a stopped instance still says `active`; preserve_ephemeral set, ephemeral disk
        let mut n = with_instance(node(9, "bm-compute-3"), "active");
        n.ephemeral_mb = Some(102400);
        n.preserve_ephemeral = Some(true);
        n.terminal_port = Some(8009);
        nodes.push(n);
        // 10: duplicate MAC of node 2 after normalising
        nodes.push(node(10, "bm-compute-3"));
        // 11: an address that is not a MAC
        nodes.push(node(11, "bm-compute-3"));
        // 12: instance torn down (task_state 'deleted', live row)
        nodes.push(torn_down(node(12, "bm-compute-3")));

        let mut interfaces = vec![
            iface(1, Some(1), "52:54:00:00:00:01"),
            iface(2, Some(1), "52:54:00:AA:BB:11"),
            iface(3, Some(2), "52:54:00:00:00:02"),
            iface(4, Some(4), "52:54:00:00:00:04"),
            iface(5, Some(5), "52:54:00:00:00:05"),
            iface(6, Some(6), "52:54:00:00:00:06"),
            iface(7, Some(7), "52:54:00:00:00:07"),
            iface(8, Some(8), "52:54:00:00:00:08"),
            iface(9, Some(9), "52-54-00-00-00-09"),
            iface(10, Some(10), "52-54-00-00-00-02"),
            iface(11, Some(11), "not-a-mac"),
            iface(12, Some(12), "5254.0000.0012"),
            // orphan: its node never existed
            iface(13, Some(999), "52:54:00:00:09:99"),
        ];
        interfaces[0].vif_uuid = Some("cccccccc-0000-4000-8000-000000000001".into());
        interfaces[3].vif_uuid = Some("cccccccc-0000-4000-8000-000000000004".into());
        interfaces[8].vif_uuid = Some("cccccccc-0000-4000-8000-000000000009".into());
        interfaces[2].deleted_raw = None;
        Fixture { schema_version: 10, nodes, interfaces }
    }

    /// A larger, regular inventory: `count` nodes over `hosts` hosts, two NICs each; every 3rd node
    /// holds an instance. Deterministic.
    pub fn generated(count: usize, hosts: usize) -> Fixture {
        Fixture::generated_from(1, count, hosts)
    }

    /// Like `generated`, with node ids from `first_id` (MACs in 52:55:..., apart from `standard`).
    pub fn generated_from(first_id: i64, count: usize, hosts: usize) -> Fixture {
        let hosts = hosts.max(1);
        let mut nodes = Vec::with_capacity(count);
        let mut interfaces = Vec::with_capacity(count * 2);
        for i in first_id..first_id + count as i64 {
            let host = format!("bm-compute-{}", (i as usize - 1) % hosts + 1);
            let n = if i % 3 == 0 { with_instance(node(i, &host), "active") } else { node(i, &host) };
            nodes.push(n);
            for k in 0..2i64 {
                let id = i * 2 - 1 + k;
                let mut f = iface(
                    id,
                    Some(i),
                    &format!("52:55:{:02x}:{:02x}:{:02x}:{:02x}", k, (i >> 16) & 0xff, (i >> 8) & 0xff, i & 0xff),
                );
                if k == 1 {
                    // the first NIC came with `nova baremetal-node-create` (no OpenFlow fields); the
                    // second with `nova baremetal-interface-add`, whose defaults are 0 and 0
                    (f.datapath_id, f.port_no) = (Some("0".into()), Some(0));
                }
                interfaces.push(f);
            }
        }
        Fixture { schema_version: 10, nodes, interfaces }
    }

    /// A free node as nova baremetal's API enrols it (IPMI, 8 CPUs, 16 GiB, 500 GB), on compute host
    /// `host`: the shape the fixtures build on, public for the tests that hold it against nova
    /// baremetal's own rows (docs/mapping.md 7).
    pub fn node_shape(id: i64, host: &str) -> BmNode {
        node(id, host)
    }

    /// `n` with an instance deployed by nova baremetal's PXE driver, its `task_state` `state`.
    pub fn instance_shape(n: BmNode, state: &str) -> BmNode {
        with_instance(n, state)
    }

    /// `n` after nova baremetal tore its instance down (`nova delete`): see `torn_down`.
    pub fn torn_down_shape(n: BmNode) -> BmNode {
        torn_down(n)
    }

    /// The benchmark's inventory (scripts/bench.sh): `count` nodes over `hosts` hosts, two NICs each,
    /// shaped like a fleet on its last night: every 20th node soft-deleted (5%), every 4th from the
    /// first holding an instance (25%), the rest free (70%). Deterministic.
    pub fn bench(count: usize, hosts: usize) -> Fixture {
        let mut f = Fixture::generated_from(1, count, hosts);
        for n in &mut f.nodes {
            let host = n.service_host.clone().unwrap_or_default();
            *n = match n.id {
                i if i % 20 == 0 => {
                    let mut d = node(i, &host);
                    d.task_state = Some("deleted".into());
                    d.deleted_raw = Some(1);
                    d.deleted = true;
                    d.deleted_at = ts(2014, 7, 1, 0);
                    d
                }
                i if i % 4 == 1 => with_instance(node(i, &host), "active"),
                i => node(i, &host),
            };
        }
        f
    }

    /// The demo sandbox: the standard edge cases plus a regular fleet, a few dozen nodes on three hosts.
    pub fn demo() -> Fixture {
        let mut f = Fixture::standard();
        let extra = Fixture::generated_from(f.nodes.len() as i64 + 1, 24, 3);
        let first_iface = f.interfaces.iter().map(|i| i.id).max().unwrap_or(0);
        f.nodes.extend(extra.nodes);
        f.interfaces.extend(extra.interfaces.into_iter().map(|mut i| {
            i.id += first_iface;
            i
        }));
        // uuids that look like the real thing (the test fixtures' patterned ones share a prefix)
        let ns = uuid::Uuid::from_u128(0x0bad_c0de_0000_4000_8000_0000_0000_0000);
        for n in &mut f.nodes {
            if n.uuid.is_some() {
                n.uuid = Some(uuid::Uuid::new_v5(&ns, format!("node-{}", n.id).as_bytes()).to_string());
            }
            if let Some(old) = n.instance_uuid.clone() {
                let new = uuid::Uuid::new_v5(&ns, format!("instance-{}", n.id).as_bytes()).to_string();
                n.pxe_config_path = n.pxe_config_path.as_ref().map(|p| p.replace(&old, &new));
                n.instance_uuid = Some(new);
            }
        }
        for i in &mut f.interfaces {
            if i.vif_uuid.is_some() {
                i.vif_uuid = Some(uuid::Uuid::new_v5(&ns, format!("vif-{}", i.id).as_bytes()).to_string());
            }
        }
        f
    }

    pub fn with_version(mut self, v: i64) -> Fixture {
        self.schema_version = v;
        self
    }
}

const NODE_INSERT_COLUMNS: &[&str] = &[
    "id",
    "uuid",
    "service_host",
    "task_state",
    "instance_uuid",
    "instance_name",
    "cpus",
    "memory_mb",
    "local_gb",
    "pm_address",
    "pm_user",
    "pm_password",
    "terminal_port",
    "image_path",
    "pxe_config_path",
    "deploy_key",
    "root_mb",
    "swap_mb",
    "ephemeral_mb",
    "preserve_ephemeral",
    "created_at",
    "updated_at",
    "deleted_at",
    "deleted",
];
const INTERFACE_INSERT_COLUMNS: &[&str] = &[
    "id",
    "bm_node_id",
    "address",
    "datapath_id",
    "port_no",
    "vif_uuid",
    "created_at",
    "updated_at",
    "deleted_at",
    "deleted",
];

fn node_values(n: &BmNode) -> Vec<Val> {
    use Val::*;
    vec![
        Int(Some(n.id)),
        Text(n.uuid.clone()),
        Text(n.service_host.clone()),
        Text(n.task_state.clone()),
        Text(n.instance_uuid.clone()),
        Text(n.instance_name.clone()),
        Int(n.cpus),
        Int(n.memory_mb),
        Int(n.local_gb),
        Text(n.pm_address.clone()),
        Text(n.pm_user.clone()),
        Text(n.pm_password.as_ref().map(|p| p.expose().to_string())),
        Int(n.terminal_port),
        Text(n.image_path.clone()),
        Text(n.pxe_config_path.clone()),
        Text(n.deploy_key.as_ref().map(|k| k.expose().to_string())),
        Int(n.root_mb),
        Int(n.swap_mb),
        Int(n.ephemeral_mb),
        Bool(n.preserve_ephemeral),
        Time(n.created_at),
        Time(n.updated_at),
        Time(n.deleted_at),
        Bool(n.deleted_raw.map(|v| v != 0)),
    ]
}

fn interface_values(i: &BmInterface) -> Vec<Val> {
    use Val::*;
    vec![
        Int(Some(i.id)),
        Int(i.bm_node_id),
        Text(i.address.clone()),
        Text(i.datapath_id.clone()),
        Int(i.port_no),
        Text(i.vif_uuid.clone()),
        Time(i.created_at),
        Time(i.updated_at),
        Time(i.deleted_at),
        Bool(i.deleted_raw.map(|v| v != 0)),
    ]
}

const ROWS_PER_INSERT: usize = 200;

/// Creates the nova_bm schema and loads `fixture` into `db`, in one transaction where the backend
/// allows DDL in one (PostgreSQL, SQLite).
pub async fn build(db: &Db, fixture: &Fixture) -> Result<(), DbError> {
    let dialect = db.dialect();
    let mut stmts: Vec<(String, Vec<Val>)> =
        statements(dialect.pick(SCHEMA)).into_iter().map(|s| (s, vec![])).collect();
    stmts.push((
        "INSERT INTO migrate_version (repository_id, repository_path, version) VALUES (?, ?, ?)".into(),
        vec![
            Val::Text(Some(NOVA_BM_REPOSITORY.into())),
            Val::Text(Some("/usr/lib/python2.7/dist-packages/nova/virt/baremetal/db/sqlalchemy/migrate_repo".into())),
            Val::Int(Some(fixture.schema_version)),
        ],
    ));
    for chunk in fixture.nodes.chunks(ROWS_PER_INSERT) {
        stmts.push(multi_insert("bm_nodes", NODE_INSERT_COLUMNS, chunk.iter().map(node_values).collect()));
    }
    for chunk in fixture.interfaces.chunks(ROWS_PER_INSERT) {
        stmts.push(multi_insert(
            "bm_interfaces",
            INTERFACE_INSERT_COLUMNS,
            chunk.iter().map(interface_values).collect(),
        ));
    }
    // the fixture gives its ids: move the id counters past them where they do not follow
    for t in ["bm_nodes", "bm_interfaces"] {
        stmts.extend(dialect.counter_past_ids(t).map(|sql| (sql, vec![])));
    }

    db.execute_in_transaction(stmts).await?;
    tracing::info!(url = %db.url.redacted(), nodes = fixture.nodes.len(), interfaces = fixture.interfaces.len(), "built nova_bm fixture");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::db::Dialect;

    #[test]
    fn ddl_splits_into_statements() {
        for d in Dialect::all() {
            let s = statements(d.pick(SCHEMA));
            assert_eq!(s.iter().filter(|s| s.starts_with("CREATE TABLE")).count(), 3, "{d:?}");
            assert!(s.iter().all(|s| !s.contains("--")));
        }
    }

    #[test]
    fn standard_fixture_covers_the_edge_cases() {
        let f = Fixture::standard();
        assert!(f.nodes.iter().any(|n| n.deleted_raw == Some(1)), "a soft-deleted node");
        assert!(f.nodes.iter().any(|n| n.deleted_raw.is_none()), "a NULL-deleted node");
        assert!(f.interfaces.iter().any(|i| i.bm_node_id == Some(999)), "an orphan interface");
        assert!(
            f.interfaces.iter().any(|i| i.address.as_deref().is_some_and(|a| a != a.to_lowercase())),
            "an upper-case MAC"
        );
        let ids: std::collections::HashSet<_> = f.interfaces.iter().filter_map(|i| i.address_normalized).collect();
        assert!(
            ids.len() < f.interfaces.iter().filter(|i| i.address_normalized.is_some()).count(),
            "a duplicate MAC after normalising"
        );
    }
}
