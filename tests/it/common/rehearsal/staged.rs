//! The API load's cloud as nova baremetal left it, built in SQL (the shapes nova baremetal's API
//! cannot make: nodes with `deleted` NULL from the original enrolment job, two old compute hosts):
//! nova_bm v10 from a `Fixture` (the nodes of `NODES`), the baremetal flavor, instances and
//! compute_nodes rows in a Nova database Juno's own db sync made, a fake BMC per live node. The SQL
//! load's cloud is nova baremetal's own (real.rs).

use std::path::Path;

use bm2ironic::core::db::secret::Secret;
use bm2ironic::core::demo::fixture::Fixture;
use bm2ironic::core::source::model::{BmInterface, BmNode};

use super::world::{bmc_addr, instance_uuid, mac, node_uuid, old_host, Instance, Rehearsal, NODES, T};
use crate::common::bmc::{Bmc, BmcOptions};
use crate::common::db::TestDb;
use crate::common::nova::OldInstance;

/// The live nodes of `NODES`.
fn live() -> impl Iterator<Item = super::Node> {
    NODES.into_iter().filter(|n| n.deleted != Some(true))
}

/// nova_bm as nova baremetal left it: the nodes of `NODES` (one interface each), BMCs on the network
/// `net`, BMC passwords `<prefix>-<id>`.
pub fn nova_bm(prefix: &str, net: u8) -> Fixture {
    let t = chrono::NaiveDate::from_ymd_opt(2014, 5, 1).and_then(|d| d.and_hms_opt(10, 0, 0));
    let mut f = Fixture { schema_version: 10, nodes: vec![], interfaces: vec![] };
    for n in NODES {
        let with = n.instance != Instance::None;
        f.nodes.push(BmNode {
            id: n.id,
            uuid: Some(node_uuid(n.id)),
            service_host: Some(old_host(n.id).into()),
            cpus: Some(8),
            memory_mb: Some(16384),
            local_gb: Some(500),
            pm_address: Some(bmc_addr(net, n.id)),
            pm_user: Some("admin".into()),
            pm_password: Some(Secret::new(format!("{prefix}-{}", n.id))),
            instance_uuid: with.then(|| instance_uuid(n.id)),
            task_state: if n.deleted == Some(true) { Some("deleted".into()) } else { with.then(|| "active".into()) },
            instance_name: with.then(|| format!("instance-{:08}", n.id)),
            root_mb: with.then_some(20480),
            swap_mb: Some(1024),
            ephemeral_mb: Some(0),
            preserve_ephemeral: Some(false),
            created_at: t,
            deleted_raw: n.deleted.map(i64::from),
            ..Default::default()
        });
        f.interfaces.push(
            BmInterface {
                id: n.id,
                bm_node_id: Some(n.id),
                address: Some(mac(n.id)),
                vif_uuid: with.then(|| format!("cccccccc-0000-4000-8000-{:012}", n.id)),
                created_at: t,
                deleted_raw: Some(i64::from(n.deleted == Some(true))),
                ..Default::default()
            }
            .normalize(),
        );
    }
    f
}

/// A fake BMC per live node on the network `net`, powered like its machine.
pub fn machines(r: &Rehearsal, dir: &Path, net: u8) -> Vec<(i64, Bmc)> {
    let mut bmcs = vec![];
    for n in live() {
        let mut o = BmcOptions::new(&r.venv, &format!("{}-{}", r.bmc_secret, n.id))
            .at(&bmc_addr(net, n.id), 623)
            .power(n.power);
        o.stderr = Some(dir.join(format!("bmc{}.stderr", n.id)));
        bmcs.push((n.id, Bmc::start(o)));
    }
    for (id, b) in &bmcs {
        b.wait_power(NODES[*id as usize - 1].power);
    }
    bmcs
}

/// What Juno's Nova holds beside its schema's own rows: a baremetal flavor (and a spec on m1.small),
/// the instances nova baremetal ran (images a URL Ironic can validate here: there is no Glance) with
/// what Juno reads of them, the baremetal driver's compute_nodes, and the two baremetal
/// nova-computes, stopped an hour ago.
pub async fn juno_rows(nova: &TestDb, image: &Path) {
    let image = format!("file://{}", image.display());
    let mut sql = vec![
        format!("INSERT INTO instance_types (created_at, name, id, memory_mb, vcpus, swap, flavorid, rxtx_factor, root_gb, ephemeral_gb, disabled, is_public, deleted) VALUES ({T}, 'bm.large', 6, 16384, 8, 0, 'bm.large', 1.0, 20, 0, 0, 1, 0)"),
        format!("INSERT INTO instance_type_extra_specs (instance_type_id, `key`, value, deleted, created_at) VALUES (6, 'cpu_arch', 'x86_64', 0, {T}), (6, 'baremetal:deploy_kernel_id', 'nova-bm-deploy-kernel', 0, {T}), (6, 'baremetal:deploy_ramdisk_id', 'nova-bm-deploy-ramdisk', 0, {T}), ((SELECT id FROM instance_types WHERE name = 'm1.small'), 'hw:cpu_policy', 'shared', 0, {T})"),
        format!("INSERT INTO services (created_at, updated_at, id, host, `binary`, topic, report_count, disabled, deleted) VALUES ({T}, UTC_TIMESTAMP() - INTERVAL 1 HOUR, 1, 'bm-compute-1', 'nova-compute', 'compute', 100, 0, 0), ({T}, UTC_TIMESTAMP() - INTERVAL 1 HOUR, 2, 'bm-compute-2', 'nova-compute', 'compute', 100, 0, 0)"),
    ];
    for n in live() {
        let used = i64::from(n.instance != Instance::None);
        sql.push(format!(
            "INSERT INTO compute_nodes (created_at, updated_at, service_id, vcpus, memory_mb, local_gb, vcpus_used, memory_mb_used, local_gb_used, hypervisor_type, hypervisor_version, cpu_info, free_ram_mb, free_disk_gb, current_workload, running_vms, hypervisor_hostname, deleted) VALUES ({T}, {T}, {}, 8, 16384, 500, {}, {}, {}, 'baremetal', 1, 'baremetal cpu', 0, 0, 0, {used}, '{}', 0)",
            2 - n.id % 2,
            used * 8,
            used * 16384,
            used * 20,
            node_uuid(n.id)
        ));
        if n.instance == Instance::None {
            continue;
        }
        let (u, node, host, name) =
            (instance_uuid(n.id), node_uuid(n.id), old_host(n.id), format!("instance-{:08}", n.id));
        let i = OldInstance {
            uuid: &u,
            node: &node,
            host,
            active: n.instance != Instance::Stopped,
            name: &name,
            project: "demo-project",
            image: &image,
            // the image's kernel and ramdisk in the old cloud's Glance (Ironic 39 deploys none of them)
            kernel: (crate::common::juno::KERNEL_I, crate::common::juno::RAMDISK_I),
            flavor: ("bm.large", "bm.large"),
            root_gb: 20,
            reservation: &format!("r-{:08}", n.id),
        };
        sql.extend(i.rows(T, '`'));
    }
    let db = nova.admin().await;
    for s in sql {
        db.execute(&s, vec![]).await.unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    db.close().await;
}
