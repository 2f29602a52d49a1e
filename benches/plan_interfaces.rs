//! What planning costs as one node's interfaces grow: `plan` over one node with 10,000 and with
//! 100,000 interfaces (distinct MACs, a few repeated far apart), measured side by side in one run,
//! best of 3 each. Linear work gives a ratio near 10; the per-node list the duplicate-MAC check
//! searched made it near 100 (16.8 s at 100,000 interfaces in the release build).
//! Run: cargo bench --bench plan_interfaces

use std::sync::Arc;
use std::time::{Duration, Instant};

use bm2ironic::core::ironic::target::{TargetKind, TargetSchema, TargetState};
use bm2ironic::core::migrate::conflict::Resolutions;
use bm2ironic::core::migrate::plan::{plan, PlanOptions};
use bm2ironic::core::source::model::{BmInterface, BmNode, Inventory};

fn inventory(interfaces: i64) -> Arc<Inventory> {
    let mac = |k: i64| {
        format!("52:54:{:02x}:{:02x}:{:02x}:{:02x}", (k >> 24) & 0xff, (k >> 16) & 0xff, (k >> 8) & 0xff, k & 0xff)
    };
    let ifaces: Vec<BmInterface> = (1..=interfaces)
        .map(|k| {
            // every 1000th repeats the first MAC: duplicates far apart on the node
            let m = if k % 1000 == 0 { mac(1) } else { mac(k) };
            BmInterface { id: k, bm_node_id: Some(1), address: Some(m), ..Default::default() }.normalize()
        })
        .collect();
    let node = BmNode { id: 1, uuid: Some("bbbbbbbb-0000-4000-8000-000000000001".into()), ..Default::default() };
    Arc::new(Inventory::join(vec![node], ifaces))
}

fn best_of_3(interfaces: i64) -> Duration {
    let inv = inventory(interfaces);
    let target = TargetState { schema: TargetSchema::known(TargetKind::Modern), nodes: vec![], ports: vec![] };
    let opts = PlanOptions::default();
    let res = Resolutions::default();
    (0..3)
        .map(|_| {
            let t = Instant::now();
            let p = plan(&inv, &target, None, &opts, &res);
            let took = t.elapsed();
            assert_eq!(p.nodes.len(), 1);
            took
        })
        .min()
        .unwrap()
}

fn main() {
    let small = best_of_3(10_000);
    let large = best_of_3(100_000);
    println!("plan, one node with 10,000 interfaces:  {:>9.1} ms", small.as_secs_f64() * 1000.0);
    println!("plan, one node with 100,000 interfaces: {:>9.1} ms", large.as_secs_f64() * 1000.0);
    println!(
        "ratio 100,000 / 10,000: {:.1} (linear: about 10; quadratic: about 100)",
        large.as_secs_f64() / small.as_secs_f64()
    );
}
