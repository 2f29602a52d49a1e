//! The plan against each thing the 2014 `ironic-nova-bm-migrate` got wrong (listed in docs/mapping.md),
//! one test per mistake, named after it. Pure: no database.

use std::collections::HashMap;
use std::sync::Arc;

use bm2ironic::core::db::secret::Secret;
use bm2ironic::core::demo::fixture::Fixture;
use bm2ironic::core::ironic::target::{ExistingNode, ExistingPort, TargetKind, TargetSchema, TargetState};
use bm2ironic::core::migrate::conflict::{ConflictCode, Resolutions};
use bm2ironic::core::migrate::plan::{plan, IronicNode, IronicPort, NodeAction, Plan, PlanOptions, Rows};
use bm2ironic::core::settings::baremetal::BaremetalConf;
use bm2ironic::core::source::model::Inventory;
use bm2ironic::core::source::nova::{NovaFacts, NovaInstance};

fn inventory(f: &Fixture) -> Arc<Inventory> {
    let mut ifaces = f.interfaces.clone();
    ifaces.sort_by_key(|i| (i.bm_node_id, i.id));
    let nodes = f
        .nodes
        .iter()
        .cloned()
        .map(|mut n| {
            n.deleted = n.deleted_raw.is_some_and(|d| d != 0);
            n
        })
        .collect();
    Arc::new(Inventory::join(nodes, ifaces))
}

fn empty_target(kind: TargetKind) -> TargetState {
    TargetState { schema: TargetSchema::known(kind), nodes: vec![], ports: vec![] }
}

fn options() -> PlanOptions {
    PlanOptions {
        deploy_kernel: Some("kernel-uuid".into()),
        deploy_ramdisk: Some("ramdisk-uuid".into()),
        default_arch: Some("x86_64".into()),
        // every instance's PXE config, as nova baremetal left it (in memory)
        boots: Arc::new(Fixture::standard().boots("/srv/tftp")),
        ..Default::default()
    }
}

fn resolve_all() -> Resolutions {
    let mut r = Resolutions::default();
    for f in [
        "invalid-mac=skip-port",
        "duplicate-mac=skip-port",
        "missing-uuid=generate",
        "mid-deploy=maintenance",
        "failed-deploy=maintenance",
        "missing-bmc=maintenance",
        // Juno only: no Nova facts here, so no image_source
        "incomplete-instance-info=maintenance",
    ] {
        r.add_flag(f).unwrap();
    }
    r
}

fn standard_plan(kind: TargetKind) -> Plan {
    plan(&inventory(&Fixture::standard()), &empty_target(kind), None, &options(), &resolve_all())
}

fn node(p: &Plan, nova_bm_id: i64) -> IronicNode {
    rows(p, nova_bm_id).node
}

fn rows(p: &Plan, nova_bm_id: i64) -> Rows {
    p.nodes
        .iter()
        .find(|n| n.nova_bm_id == nova_bm_id)
        .and_then(|n| p.rows(n))
        .unwrap_or_else(|| panic!("node {nova_bm_id} is not written"))
}

#[test]
fn soft_deleted_nodes_are_not_migrated_as_live() {
    let p = standard_plan(TargetKind::Modern);
    let n3 = p.nodes.iter().find(|n| n.nova_bm_id == 3).unwrap();
    assert_eq!(n3.action, NodeAction::Skip);
    assert!(n3.conflicts.contains(&ConflictCode::DeletedNode));
    // a NULL `deleted` is live
    assert_eq!(p.nodes.iter().find(|n| n.nova_bm_id == 2).unwrap().action, NodeAction::Create);
}

#[test]
fn created_at_and_updated_at_are_not_swapped() {
    let f = Fixture::standard();
    let p = standard_plan(TargetKind::Modern);
    let src = &f.nodes[0];
    assert_ne!(src.created_at, src.updated_at);
    assert_eq!(node(&p, 1).created_at, src.created_at);
    assert_eq!(node(&p, 1).updated_at, src.updated_at);
}

#[test]
fn power_state_is_not_guessed_from_task_state() {
    // node 9 is a stopped instance whose task_state still says `active`
    for kind in [TargetKind::Modern, TargetKind::Juno] {
        let p = standard_plan(kind);
        for n in p.nodes.iter().filter_map(|n| p.rows(n)).map(|r| r.node) {
            assert_eq!(n.power_state, None, "{kind:?}: Ironic must read the BMC, not be told");
        }
    }
}

#[test]
fn mid_deploy_and_failed_nodes_are_not_made_active_silently() {
    let p = plan(
        &inventory(&Fixture::standard()),
        &empty_target(TargetKind::Modern),
        None,
        &options(),
        &Resolutions::default(),
    );
    for id in [4, 5] {
        let n = p.nodes.iter().find(|n| n.nova_bm_id == id).unwrap();
        assert_eq!(n.action, NodeAction::Blocked, "node {id} waits for a decision");
    }
    let p = standard_plan(TargetKind::Modern);
    for id in [4, 5] {
        let n = node(&p, id);
        assert_eq!(n.provision_state.as_deref(), Some("active"));
        assert!(n.maintenance, "node {id} is held in maintenance");
        assert!(n.maintenance_reason.as_deref().unwrap().contains("task_state"));
    }
}

#[test]
fn instance_info_has_image_source_and_sizes_in_gb() {
    let mut facts = NovaFacts::default();
    facts.instances.insert(
        "aaaaaaaa-0000-4000-8000-000000000009".into(),
        NovaInstance {
            uuid: "aaaaaaaa-0000-4000-8000-000000000009".into(),
            image_ref: Some("glance-image-9".into()),
            root_gb: Some(20),
            ephemeral_gb: Some(100),
            node: None,
            host: None,
            vm_state: Some("stopped".into()),
            deleted: false,
            kernel_id: None,
            ramdisk_id: None,
        },
    );
    facts.instances.insert(
        "aaaaaaaa-0000-4000-8000-000000000001".into(),
        NovaInstance {
            uuid: "aaaaaaaa-0000-4000-8000-000000000001".into(),
            image_ref: Some("glance-image-1".into()),
            root_gb: Some(20),
            ephemeral_gb: Some(0),
            node: None,
            host: None,
            vm_state: Some("active".into()),
            deleted: false,
            kernel_id: None,
            ramdisk_id: None,
        },
    );
    let mut r = resolve_all();
    r.add_flag("instance-missing-in-nova=maintenance").unwrap();
    let p = plan(&inventory(&Fixture::standard()), &empty_target(TargetKind::Modern), Some(&facts), &options(), &r);
    let ii = &node(&p, 9).instance_info;
    assert_eq!(ii["image_source"], "glance-image-9");
    assert_eq!(ii["root_gb"], 20);
    assert_eq!(ii["ephemeral_gb"], 100);
    assert_eq!(ii["swap_mb"], 1024);
    assert_eq!(ii["preserve_ephemeral"], true);
    assert!(ii.get("root_mb").is_none() && ii.get("ephemeral_mb").is_none(), "keys Ironic never reads are not written");
    // without Nova: sizes from nova_bm (mb / 1024) and a warning about image_source
    let p = standard_plan(TargetKind::Modern);
    assert_eq!(node(&p, 9).instance_info["ephemeral_gb"], 100);
    assert!(p.warnings.iter().any(|w| w.contains("image_source")));
}

#[test]
fn juno_instance_without_image_source_or_root_gb_blocks() {
    // Juno's pxe deploy refuses a node without both: there it is a blocking conflict, not a warning
    let r = |extra: &[&str]| {
        let mut r = resolve_all();
        r.defaults.remove(&ConflictCode::IncompleteInstanceInfo);
        for f in extra {
            r.add_flag(f).unwrap();
        }
        r
    };
    let blocked = |p: &Plan| -> Vec<i64> {
        p.conflicts
            .iter()
            .filter(|c| c.code == ConflictCode::IncompleteInstanceInfo && c.is_unresolved_blocking())
            .map(|c| match c.subject {
                bm2ironic::core::migrate::conflict::Subject::Node { nova_bm_id } => nova_bm_id,
                _ => panic!("about a node"),
            })
            .collect()
    };
    let f = inventory(&Fixture::standard());
    // without Nova: no image_source for any instance (1, 9, and 4, 5 held in maintenance)
    let p = plan(&f, &empty_target(TargetKind::Juno), None, &options(), &r(&[]));
    assert_eq!(blocked(&p), vec![1, 4, 5, 9]);
    assert!(p.conflicts.iter().any(|c| c.detail.contains("image_source (no Nova database given: --nova-db)")));
    let p = plan(&f, &empty_target(TargetKind::Modern), None, &options(), &r(&[]));
    assert!(blocked(&p).is_empty(), "modern Ironic: a warning only");
    assert!(p.warnings.iter().any(|w| w.contains("image_source")));
    // with Nova's image and size for every instance: nothing
    let mut facts = NovaFacts::default();
    for id in [1, 4, 5, 9] {
        let uuid = format!("aaaaaaaa-0000-4000-8000-{id:012}");
        let i = NovaInstance {
            uuid: uuid.clone(),
            image_ref: Some(format!("glance-image-{id}")),
            root_gb: Some(20),
            ephemeral_gb: Some(0),
            node: None,
            host: None,
            vm_state: Some("active".into()),
            deleted: false,
            kernel_id: None,
            ramdisk_id: None,
        };
        facts.instances.insert(uuid, i);
    }
    let p = plan(&f, &empty_target(TargetKind::Juno), Some(&facts), &options(), &r(&[]));
    assert!(blocked(&p).is_empty(), "{:?}", p.conflicts);
    // an empty image, a root disk of 0 GB: missing as well
    facts.instances.get_mut("aaaaaaaa-0000-4000-8000-000000000001").unwrap().image_ref = Some(String::new());
    let nine = facts.instances.get_mut("aaaaaaaa-0000-4000-8000-000000000009").unwrap();
    nine.root_gb = Some(0);
    let p = plan(&f, &empty_target(TargetKind::Juno), Some(&facts), &options(), &r(&[]));
    assert_eq!(blocked(&p), vec![1, 9]);
    // maintenance writes it active, with the instance, in maintenance with the reason in the flat marker
    let p = plan(
        &f,
        &empty_target(TargetKind::Juno),
        Some(&facts),
        &options(),
        &r(&["incomplete-instance-info=maintenance"]),
    );
    let n = node(&p, 9);
    assert_eq!((n.provision_state.as_deref(), n.maintenance), (Some("active"), true));
    assert!(n.instance_uuid.is_some());
    let reason = n.extra()["bm2ironic_maintenance_reason"].as_str().unwrap().to_string();
    assert!(reason.contains("instance_info lacks root_gb"), "{reason}");
    // skip leaves it out
    let p = plan(&f, &empty_target(TargetKind::Juno), Some(&facts), &options(), &r(&["incomplete-instance-info=skip"]));
    assert_eq!(p.nodes.iter().find(|n| n.nova_bm_id == 1).unwrap().action, NodeAction::Skip);
}

#[test]
fn deploy_images_are_written_where_each_target_reads_them() {
    let p = standard_plan(TargetKind::Modern);
    assert_eq!(node(&p, 1).driver_info.get("deploy_kernel").unwrap(), "kernel-uuid");
    assert_eq!(node(&p, 1).driver_info.get("deploy_ramdisk").unwrap(), "ramdisk-uuid");
    let p = standard_plan(TargetKind::Juno);
    assert_eq!(node(&p, 1).driver_info.get("pxe_deploy_kernel").unwrap(), "kernel-uuid");
    assert_eq!(node(&p, 1).driver_info.get("pxe_deploy_ramdisk").unwrap(), "ramdisk-uuid");
    // and none given is a blocking conflict, not a silent omission
    let mut o = options();
    o.deploy_kernel = None;
    let p = plan(&inventory(&Fixture::standard()), &empty_target(TargetKind::Modern), None, &o, &resolve_all());
    assert!(p.conflicts.iter().any(|c| c.code == ConflictCode::MissingDeployImages && c.is_unresolved_blocking()));
}

#[test]
fn vif_is_written_under_the_key_ironic_reads() {
    let p = standard_plan(TargetKind::Modern);
    let port = rows(&p, 1).ports.into_iter().find(|p| p.address == "52:54:00:00:00:01").unwrap();
    assert_eq!(port.internal_info()["tenant_vif_port_id"], "cccccccc-0000-4000-8000-000000000001");
    assert!(port.extra().get("vif_uuid").is_none());
    let p = standard_plan(TargetKind::Juno);
    let port = rows(&p, 1).ports.into_iter().find(|p| p.address == "52:54:00:00:00:01").unwrap();
    assert_eq!(port.extra()["vif_port_id"], "cccccccc-0000-4000-8000-000000000001");
}

#[test]
fn ssh_port_and_terminal_port_are_kept() {
    let p = standard_plan(TargetKind::Modern);
    assert_eq!(node(&p, 1).driver_info.get("ipmi_terminal_port").unwrap(), 8001);
    let mut o = options();
    o.baremetal = BaremetalConf {
        power_manager: Some("nova.virt.baremetal.virtual_power_driver.VirtualPowerManager".into()),
        virtual_power_ssh_host: Some("127.0.0.1".into()),
        virtual_power_ssh_port: Some(2222),
        virtual_power_type: Some("virsh".into()),
        virtual_power_host_user: Some("stack".into()),
        virtual_power_host_pass: Some(Secret::new("sshpass")),
        ..Default::default()
    };
    let p = plan(&inventory(&Fixture::standard()), &empty_target(TargetKind::Juno), None, &o, &resolve_all());
    let n = node(&p, 1);
    assert_eq!(n.driver, "pxe_ssh");
    assert_eq!(n.driver_info.get("ssh_port").unwrap(), 2222);
    assert_eq!(n.driver_info.get("ssh_virt_type").unwrap(), "virsh");
    assert!(n.driver_info.has_secret("ssh_password"));
    assert!(!serde_json::to_string(&p).unwrap().contains("sshpass"), "the plan never shows passwords");
    assert!(!serde_json::to_string(&n).unwrap().contains("sshpass"), "nor do its rows");
    assert!(serde_json::to_string(&n).unwrap().contains("\"ssh_password\":\"***\""));
}

#[test]
fn source_primary_keys_are_not_forced_into_the_target() {
    // the plan carries no Ironic ids at all: the database assigns them (see tests/it/migrate.rs for the
    // sequences after a real load)
    let p = standard_plan(TargetKind::Modern);
    let text = serde_json::to_value(p.rows(&p.nodes[0]).unwrap().node).unwrap();
    assert!(text.get("id").is_none());
}

#[test]
fn macs_are_normalised_and_duplicates_found() {
    let p = plan(
        &inventory(&Fixture::standard()),
        &empty_target(TargetKind::Modern),
        None,
        &options(),
        &Resolutions::default(),
    );
    let dup = p.conflicts.iter().find(|c| c.code == ConflictCode::DuplicateMac).unwrap();
    assert!(dup.detail.contains("52:54:00:00:00:02"), "52-54-00-00-00-02 equals node 2's MAC once normalised");
    assert!(dup.is_unresolved_blocking());
    assert!(p.conflicts.iter().any(|c| c.code == ConflictCode::InvalidMac));
    let p = standard_plan(TargetKind::Modern);
    let ports: Vec<IronicPort> = p.rows_to_write().flat_map(|(_, r)| r.ports).collect();
    let all: Vec<&str> = ports.iter().map(|p| p.address.as_str()).collect();
    assert!(
        all.contains(&"52:54:00:aa:bb:11") && all.contains(&"52:54:00:00:00:09") && all.contains(&"52:54:00:00:00:12")
    );
    assert!(all.iter().all(|a| a.len() == 17 && *a == a.to_lowercase()));
    let unique: std::collections::HashSet<_> = all.iter().collect();
    assert_eq!(unique.len(), all.len());
    // and against ports already in Ironic
    let mut t = empty_target(TargetKind::Modern);
    t.nodes.push(ExistingNode {
        id: 7,
        uuid: Some("ffffffff-0000-0000-0000-000000000001".into()),
        instance_uuid: None,
        provision_state: Some("available".into()),
        maintenance: false,
        reservation: None,
        extra: serde_json::json!({}),
        updated_at: None,
        run_finished: None,
    });
    t.ports.push(ExistingPort { id: 1, uuid: None, address: Some("52:54:00:aa:bb:11".into()), node_id: Some(7) });
    let p = plan(&inventory(&Fixture::standard()), &t, None, &options(), &resolve_all());
    assert!(p.conflicts.iter().any(|c| c.code == ConflictCode::MacInIronic && c.is_unresolved_blocking()));
}

#[test]
fn cpu_arch_is_per_host_not_one_for_all() {
    let mut o = options();
    o.default_arch = None;
    o.arch_by_host = HashMap::from([
        ("bm-compute-1".to_string(), "x86_64".to_string()),
        ("bm-compute-3".to_string(), "aarch64".to_string()),
    ])
    .into_iter()
    .collect();
    let p = plan(&inventory(&Fixture::standard()), &empty_target(TargetKind::Modern), None, &o, &resolve_all());
    assert_eq!(node(&p, 1).properties["cpu_arch"], "x86_64");
    assert_eq!(node(&p, 9).properties["cpu_arch"], "aarch64");
    let n5 = p.nodes.iter().find(|n| n.nova_bm_id == 5).unwrap();
    assert!(n5.conflicts.contains(&ConflictCode::MissingArch), "bm-compute-2 has no arch: asked, not guessed");
}

#[test]
fn other_power_managers_are_conflicts_not_aborts() {
    let mut o = options();
    o.baremetal.power_manager = Some("nova.virt.baremetal.tilera_pdu.Pdu".into());
    let p = plan(&inventory(&Fixture::standard()), &empty_target(TargetKind::Modern), None, &o, &resolve_all());
    assert!(p.conflicts.iter().any(|c| c.code == ConflictCode::UnsupportedPower && c.is_unresolved_blocking()));
    let mut r = resolve_all();
    r.add_flag("unsupported-power=maintenance").unwrap();
    let p = plan(&inventory(&Fixture::standard()), &empty_target(TargetKind::Modern), None, &o, &r);
    assert_eq!(node(&p, 1).driver, "manual-management");
    assert!(node(&p, 1).maintenance);
    // iBoot maps on Juno: pm_address host[:port][,relay]
    o.baremetal.power_manager = Some("nova.virt.baremetal.iboot_pdu.IBootManager".into());
    let mut f = Fixture::standard();
    f.nodes[0].pm_address = Some("127.0.0.1:9100,3".into());
    let p = plan(&inventory(&f), &empty_target(TargetKind::Juno), None, &o, &resolve_all());
    let n = node(&p, 1);
    assert_eq!(n.driver, "pxe_iboot");
    assert_eq!(n.driver_info.get("iboot_address").unwrap(), "127.0.0.1");
    assert_eq!(n.driver_info.get("iboot_port").unwrap(), 9100);
    assert_eq!(n.driver_info.get("iboot_relay_id").unwrap(), 3);
}

#[test]
fn a_dry_run_exists_and_the_plan_is_deterministic() {
    let a = standard_plan(TargetKind::Modern);
    let b = standard_plan(TargetKind::Modern);
    assert_eq!(
        a.checksum, b.checksum,
        "the same inputs give the same plan (rehearse on staging, replay in production)"
    );
    let mut o = options();
    o.default_arch = Some("aarch64".into());
    let c = plan(&inventory(&Fixture::standard()), &empty_target(TargetKind::Modern), None, &o, &resolve_all());
    assert_ne!(a.checksum, c.checksum);
}

#[test]
fn free_nodes_are_available_on_modern_and_null_on_juno() {
    assert_eq!(node(&standard_plan(TargetKind::Modern), 2).provision_state.as_deref(), Some("available"));
    assert_eq!(node(&standard_plan(TargetKind::Juno), 2).provision_state, None);
    assert_eq!(node(&standard_plan(TargetKind::Juno), 1).driver, "pxe_ipmitool");
    assert_eq!(node(&standard_plan(TargetKind::Modern), 1).driver, "ipmi");
}

#[test]
fn every_conflict_code_has_a_rule() {
    // each code can be produced by the plan (together with tests/it/migrate.rs for the Ironic/Nova ones)
    let p = plan(
        &inventory(&Fixture::standard()),
        &empty_target(TargetKind::Modern),
        None,
        &PlanOptions::default(),
        &Resolutions::default(),
    );
    let codes: std::collections::BTreeSet<ConflictCode> = p.conflicts.iter().map(|c| c.code).collect();
    for c in [
        ConflictCode::DeletedNode,
        ConflictCode::OrphanInterface,
        ConflictCode::InvalidMac,
        ConflictCode::DuplicateMac,
        ConflictCode::MissingUuid,
        ConflictCode::MidDeploy,
        ConflictCode::FailedDeploy,
        ConflictCode::MissingBmc,
        ConflictCode::MissingArch,
        ConflictCode::IncompleteProperties,
        ConflictCode::MissingDeployImages,
    ] {
        assert!(codes.contains(&c), "{c} not raised");
    }
}
