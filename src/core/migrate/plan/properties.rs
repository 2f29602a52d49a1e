//! The plan's invariants over random inventories: rows drawn from small pools so that uuids, instance
//! uuids and MACs collide, states come in odd case or unknown, sizes go negative. The rules they hold
//! the plan to are in docs/mapping.md and docs/conflicts.md.

use std::collections::HashSet;

use proptest::prelude::*;
use serde_json::json;

use super::{normalize_uuid, plan, IronicNode, NodeAction, NodePlan, PlanOptions, Rows};
use crate::core::ironic::target::{ExistingNode, ExistingPort, TargetKind, TargetSchema, TargetState};
use crate::core::migrate::conflict::{Conflict, ConflictCode, Resolutions, Subject};
use crate::core::migrate::states::BmState;
use crate::core::source::model::{BmInterface, BmNode, Inventory};

const UUIDS: &[&str] = &[
    "bbbbbbbb-0000-4000-8000-000000000001",
    "BBBBBBBB-0000-4000-8000-000000000001",
    "bbbbbbbb-0000-4000-8000-000000000002",
    "bbbbbbbb-0000-4000-8000-00000000000a",
    "not-a-uuid-at-all",
    "",
];
const INSTANCES: &[&str] = &[
    "aaaaaaaa-0000-4000-8000-000000000001",
    "AAAAAAAA-0000-4000-8000-000000000001",
    "aaaaaaaa-0000-4000-8000-000000000002",
    "junk",
];
const STATES: &[&str] = &[
    "active",
    "ACTIVE ",
    "building",
    "deploying",
    "deploy complete",
    "deploy failed",
    "error",
    "deleted",
    "prepared",
    "initializing",
    "",
    "frobnicating",
];
const MACS: &[&str] =
    &["52:54:00:00:00:01", "52-54-00-00-00-01", "52:54:00:00:00:02", "52:54:00:00:00:03", "not-a-mac"];

fn pick<'a>(pool: &'a [&'a str]) -> impl Strategy<Value = Option<String>> + 'a {
    prop_oneof![1 => Just(None), 6 => (0..pool.len()).prop_map(move |i| Some(pool[i].to_string()))]
}

prop_compose! {
    fn node_row(id: i64)(
        uuid in pick(UUIDS), inst in pick(INSTANCES), state in pick(STATES), deleted in prop::bool::weighted(0.15),
        cpus in prop_oneof![Just(None), Just(Some(-8i64)), Just(Some(0)), Just(Some(16))],
        port in prop_oneof![Just(None), Just(Some(-1i64)), Just(Some(0)), Just(Some(8001)), Just(Some(70000))],
        host in prop_oneof![Just("h1"), Just("h2")],
        bmc in prop_oneof![Just(None), Just(Some("127.0.0.1".to_string()))],
    ) -> BmNode {
        BmNode {
            id, uuid, instance_uuid: inst, task_state: state, deleted, service_host: Some(host.into()), cpus,
            memory_mb: Some(1024), local_gb: Some(10), terminal_port: port, pm_address: bmc,
            ..Default::default()
        }
    }
}

fn inventory() -> impl Strategy<Value = Inventory> {
    (1usize..10)
        .prop_flat_map(|n| {
            let nodes: Vec<_> = (1..=n as i64).map(node_row).collect();
            let ifaces = prop::collection::vec((1..=n as i64 + 1, pick(MACS), prop::bool::weighted(0.1)), 0..12);
            (nodes, ifaces)
        })
        .prop_map(|(nodes, ifaces)| {
            let mut ifaces: Vec<BmInterface> = ifaces
                .into_iter()
                .enumerate()
                .map(|(k, (node, address, deleted))| {
                    BmInterface { id: k as i64 + 1, bm_node_id: Some(node), address, deleted, ..Default::default() }
                        .normalize()
                })
                .collect();
            ifaces.sort_by_key(|i| (i.bm_node_id, i.id));
            Inventory::join(nodes, ifaces)
        })
}

fn target(existing: bool, kind: TargetKind) -> TargetState {
    let mut t = TargetState { schema: TargetSchema::known(kind), nodes: vec![], ports: vec![] };
    if existing {
        t.nodes.push(ExistingNode {
            id: 1,
            uuid: Some("bbbbbbbb-0000-4000-8000-00000000000A".into()),
            instance_uuid: Some("aaaaaaaa-0000-4000-8000-000000000002".into()),
            provision_state: Some("active".into()),
            maintenance: false,
            reservation: None,
            extra: json!({}),
            updated_at: None,
            run_finished: None,
        });
        t.ports.push(ExistingPort { id: 1, uuid: None, address: Some("52:54:00:00:00:03".into()), node_id: Some(1) });
    }
    t
}

fn options() -> PlanOptions {
    PlanOptions {
        // a maintenance reason from a hostile task_state, passwords, VIFs: all in the checksum's rows
        deploy_kernel: Some("k".into()),
        deploy_ramdisk: Some("r".into()),
        default_arch: Some("x86_64".into()),
        resource_class: Some("baremetal".into()),
        ..Default::default()
    }
}

/// Resolutions: for every code, nothing (blocking stays), or one of its actions picked by `seed`.
fn resolutions(seed: u64, decide: bool) -> Resolutions {
    let mut r = Resolutions::default();
    if decide {
        for (k, c) in ConflictCode::ALL.iter().enumerate() {
            let acts = c.actions();
            if !acts.is_empty() {
                r.defaults.insert(*c, acts[(seed as usize >> (k % 16)) % acts.len()]);
            }
        }
    }
    r
}

proptest! {
    // a failure is kept in proptest-regressions/core/migrate/plan/properties.txt (proptest's default
    // place) and replayed before any new case
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_row_is_accounted_for_and_nothing_is_written_twice(
        inv in inventory(), seed in any::<u64>(), decide in any::<bool>(), existing in any::<bool>(),
        juno in any::<bool>(), ssh in any::<bool>(),
    ) {
        let t = target(existing, if juno { TargetKind::Juno } else { TargetKind::Modern });
        let options = || {
            let mut o = options();
            if ssh {
                // Juno's pxe_ssh: driver_info with a password from nova.conf (modern: unsupported-power)
                o.baremetal.power_manager = Some("nova.virt.baremetal.virtual_power_driver.VirtualPowerManager".into());
                o.baremetal.virtual_power_ssh_host = Some("10.0.0.1".into());
                o.baremetal.virtual_power_host_pass = Some(crate::core::db::secret::Secret::new("pw"));
            }
            o
        };
        let inv = std::sync::Arc::new(inv);
        let p = plan(&inv, &t, None, &options(), &resolutions(seed, decide));

        // every row exactly once, each with a fate; skipped and blocked ones say why
        prop_assert_eq!(p.nodes.len(), inv.nodes.len());
        let ids: HashSet<i64> = p.nodes.iter().map(|n| n.nova_bm_id).collect();
        prop_assert_eq!(ids.len(), inv.nodes.len());
        for n in &p.nodes {
            match n.action {
                NodeAction::Skip | NodeAction::AlreadyMigrated => {
                    prop_assert!(!n.conflicts.is_empty(), "node {} skipped without a code", n.nova_bm_id);
                    prop_assert!(n.write.is_none() && p.rows(n).is_none(), "node {} skipped but written", n.nova_bm_id);
                }
                NodeAction::Blocked => {
                    prop_assert!(n.write.is_none() && p.rows(n).is_none());
                    let about_it = |c: &Conflict| match &c.subject {
                        Subject::Node { nova_bm_id } | Subject::Interface { nova_bm_id, .. } => *nova_bm_id == n.nova_bm_id,
                        Subject::Run | Subject::Host { .. } => false,
                    };
                    let why = p.conflicts.iter().any(|c| c.is_unresolved_blocking() && about_it(c));
                    prop_assert!(why, "node {} blocked without an unresolved conflict of its own", n.nova_bm_id);
                }
                NodeAction::Create | NodeAction::Replace => {
                    let r = p.rows(n);
                    prop_assert!(r.is_some());
                    // the summary the tables show is the rows'
                    let (r, w) = (r.unwrap(), n.write.unwrap());
                    prop_assert_eq!(w.ports, r.ports.len());
                    prop_assert_eq!(w.maintenance, r.node.maintenance);
                    prop_assert_eq!(w.provision_state, r.node.provision_state.as_deref());
                    prop_assert_eq!(w.driver, r.node.driver.as_str());
                }
            }
        }
        prop_assert_eq!(p.summary.blocking, p.conflicts.iter().filter(|c| c.is_unresolved_blocking()).count());

        // nothing written twice, nor onto what Ironic already holds
        let rows: Vec<(&NodePlan, Rows)> = p.rows_to_write().collect();
        let written: Vec<&IronicNode> = rows.iter().map(|(_, r)| &r.node).collect();
        let mut uuids = HashSet::new();
        let mut instances = HashSet::new();
        let mut macs = HashSet::new();
        for w in &written {
            prop_assert!(uuids.insert(w.uuid.clone()), "uuid {} twice", w.uuid);
            prop_assert!(normalize_uuid(&w.uuid).as_deref() == Some(w.uuid.as_str()), "uuid {} not canonical", w.uuid);
            if let Some(i) = &w.instance_uuid {
                prop_assert!(instances.insert(i.clone()), "instance {} twice", i);
                prop_assert!(normalize_uuid(i).as_deref() == Some(i.as_str()));
            }
        }
        for (_, r) in &rows {
            for port in &r.ports {
                prop_assert!(macs.insert(port.address.clone()), "MAC {} twice", port.address);
            }
        }
        for e in &t.nodes {
            let u = e.uuid.as_deref().unwrap_or("").to_ascii_lowercase();
            let replaced = p.nodes.iter().any(|n| n.replaces == Some(e.id));
            prop_assert!(replaced || !uuids.contains(&u), "uuid {} is Ironic's already", u);
        }
        for port in &t.ports {
            prop_assert!(!macs.contains(port.address.as_deref().unwrap_or("")) || p.nodes.iter().any(|n| n.replaces.is_some()));
        }

        // active only from an `active` row with an instance, unless held in maintenance
        for (n, r) in &rows {
            let w = &r.node;
            let row = &inv.nodes.iter().find(|e| e.node.id == n.nova_bm_id).unwrap().node;
            if w.provision_state.as_deref() == Some("active") && !w.maintenance {
                prop_assert_eq!(BmState::parse(row.task_state.as_deref()), BmState::Active);
                prop_assert!(!row.deleted);
            }
            // no impossible value reaches Ironic
            for k in ["cpus", "memory_mb", "local_gb"] {
                prop_assert!(w.properties.get(k).and_then(|v| v.as_i64()).is_none_or(|v| v >= 0));
            }
            prop_assert!(w.driver_info.get("ipmi_terminal_port").and_then(|v| v.as_i64()).is_none_or(|v| (1..=65535).contains(&v)));
        }

        // deterministic
        let again = plan(&inv, &t, None, &options(), &resolutions(seed, decide));
        prop_assert_eq!(&p.checksum, &again.checksum);
        // hashed node by node, the checksum is the one of the whole array serialised at once
        prop_assert_eq!(&p.checksum, &reference_checksum(&p));
    }
}

/// The checksum as first defined: every node's `[uuid, action, node, ports]` through a `Value`
/// (objects with sorted keys), the whole array serialised at once.
fn reference_checksum(p: &super::Plan) -> String {
    let rows: Vec<serde_json::Value> = p
        .nodes
        .iter()
        .map(|n| {
            let r = p.rows(n);
            let ports = r.as_ref().map(|r| r.ports.clone()).unwrap_or_default();
            json!([n.uuid, n.action, r.map(|r| r.node), ports])
        })
        .collect();
    hex::encode(<sha2::Sha256 as sha2::Digest>::digest(serde_json::to_string(&rows).unwrap().as_bytes()))
}

/// The plan on several threads in small pieces is the plan on one: nodes, conflicts (and their
/// order), warnings, summary, checksum.
fn same_plan(a: &super::Plan, b: &super::Plan) -> Result<(), TestCaseError> {
    prop_assert_eq!(&a.checksum, &b.checksum);
    prop_assert_eq!(&a.conflicts, &b.conflicts);
    prop_assert_eq!(&a.warnings, &b.warnings);
    prop_assert_eq!(format!("{:?}", a.summary), format!("{:?}", b.summary));
    prop_assert_eq!(a.nodes.len(), b.nodes.len());
    for (x, y) in a.nodes.iter().zip(&b.nodes) {
        prop_assert_eq!(
            (x.nova_bm_id, &x.uuid, x.action, &x.conflicts),
            (y.nova_bm_id, &y.uuid, y.action, &y.conflicts)
        );
        prop_assert_eq!((x.write, x.replaces), (y.write, y.replaces));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn pieces_and_threads_do_not_change_the_plan(
        inv in inventory(), seed in any::<u64>(), decide in any::<bool>(), existing in any::<bool>(),
        chunk in 1usize..5, threads in 2usize..4,
    ) {
        // hostile inventories (duplicate MACs, uuids and instances across nodes: the checks that look
        // at other nodes) cut into pieces of a few nodes on several threads
        let t = target(existing, TargetKind::Modern);
        let inv = std::sync::Arc::new(inv);
        let one = super::plan_on(&inv, &t, None, &options(), &resolutions(seed, decide), 1, 4096);
        let many = super::plan_on(&inv, &t, None, &options(), &resolutions(seed, decide), threads, chunk);
        same_plan(&one, &many)?;
    }
}

#[test]
fn the_bench_inventory_on_threads_gives_the_checksum_of_one() {
    // several waves of full pieces on 3 threads, and the Value-based checksum
    let f = crate::core::demo::fixture::Fixture::bench(super::ROWS_CHUNK * 9 + 17, 40);
    let boots = f.boots("/t");
    let inv = std::sync::Arc::new(Inventory::join(f.nodes, f.interfaces));
    let t = target(false, TargetKind::Modern);
    // every instance's PXE config learned: the boot fields are in the rows and the checksum
    let opts = PlanOptions { boots: std::sync::Arc::new(boots), ..options() };
    let one = super::plan_on(&inv, &t, None, &opts, &Resolutions::default(), 1, super::ROWS_CHUNK);
    assert_eq!(one.checksum, reference_checksum(&one));
    assert!(one.rows_to_write().any(|(_, r)| r.node.deploy_interface.as_deref() == Some("ramdisk")));
    let three = super::plan_on(&inv, &t, None, &opts, &Resolutions::default(), 3, super::ROWS_CHUNK);
    same_plan(&one, &three).unwrap();
    for n in &one.nodes {
        let r = one.rows(n);
        assert_eq!(n.write.map(|w| w.ports), r.as_ref().map(|r| r.ports.len()), "node {}", n.nova_bm_id);
        assert_eq!(n.write.map(|w| w.maintenance), r.map(|r| r.node.maintenance));
    }
    assert!(one.summary.create > super::ROWS_CHUNK * 8 && one.summary.ports >= one.summary.create);
}

proptest! {
    #[test]
    fn uuid_form_is_the_parsed_form(s in prop_oneof![
        "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
        " ?[0-9a-fg-]{36} ?",
        "[0-9a-f]{8}[-_ ][0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-fA-F]{12}",
        "\\PC{30,40}",
    ]) {
        // the copy-free path for text already in Ironic's form agrees with parsing every time
        let t = s.trim();
        let parsed = (t.len() == 36).then(|| uuid::Uuid::parse_str(t).ok()).flatten().map(|u| u.hyphenated().to_string());
        prop_assert_eq!(super::uuids::uuid_form(&s).map(|c| c.into_owned()), parsed.clone());
        prop_assert_eq!(normalize_uuid(&s), parsed);
    }
}

#[test]
fn node_action_names_are_their_json() {
    use NodeAction::*;
    for a in [Create, Replace, Skip, AlreadyMigrated, Blocked] {
        assert_eq!(serde_json::to_value(a).unwrap(), json!(a.as_str()));
    }
}

#[test]
fn pieces_on_threads_come_back_in_order_and_stay_within_the_window() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    for threads in 2..5 {
        // the first piece is slow: the others must wait for it, no more than the window ahead
        let taken = AtomicUsize::new(0);
        let ahead = AtomicUsize::new(0);
        let mut got = Vec::new();
        let make = |k: usize| {
            if k == 0 {
                std::thread::sleep(std::time::Duration::from_millis(30));
            }
            ahead.fetch_max(k - taken.load(Ordering::SeqCst).min(k), Ordering::SeqCst);
            k
        };
        super::in_order_on_threads(100, threads, &make, &mut |k| {
            got.push(k);
            taken.store(k + 1, Ordering::SeqCst);
        });
        assert_eq!(got, (0..100).collect::<Vec<_>>(), "{threads} threads");
        let ahead = ahead.load(Ordering::SeqCst);
        assert!(ahead < 2 * threads, "{threads} threads: a piece was made {ahead} ahead of the one awaited");
        assert!(ahead > 0, "no piece was made while the first was awaited");
    }
}

#[test]
fn a_piece_that_panics_reaches_the_caller_and_nothing_waits_for_it() {
    for threads in 2..4 {
        // on a thread of its own: a worker left waiting would hang the test instead of failing it
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let r = std::panic::catch_unwind(|| {
                let mut got = Vec::new();
                let make = |k: usize| if k == 3 { panic!("piece 3") } else { k };
                super::in_order_on_threads(64, threads, &make, &mut |k| got.push(k));
                got
            });
            let _ = tx.send(r.map_err(|e| e.downcast_ref::<&str>().map(|s| s.to_string())));
        });
        let r = rx.recv_timeout(std::time::Duration::from_secs(60)).expect("the pool still waits for piece 3");
        assert_eq!(r.expect_err("the panic of piece 3").as_deref(), Some("piece 3"));
    }
    // the taking side panicking: the workers waiting for it stop too
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(|| {
            super::in_order_on_threads(64, 2, &|k: usize| k, &mut |k| assert!(k != 1, "taking 1"));
        });
        let _ = tx.send(r.map_err(|e| e.downcast_ref::<&str>().map(|s| s.to_string())));
    });
    let r = rx.recv_timeout(std::time::Duration::from_secs(60)).expect("workers still wait for the taker");
    assert_eq!(r.expect_err("the panic of the taker").as_deref(), Some("taking 1"));
}
