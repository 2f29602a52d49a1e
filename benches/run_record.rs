//! What an API run's record costs as its nodes progress, side by side in one run: the record kept
//! as it is now (`RunStore::Dir`: the head once, one journal line appended per node update) against
//! the way it was kept before #47 (the whole run file rewritten, synced and renamed after every
//! node: the bytes written grow with the square of the nodes). Both on the same 10,000 node
//! records, in the same temporary directory; the figures are bytes written and wall time.
//! Run: cargo bench --bench run_record [-- NODES]

use std::io::Write;
use std::time::Instant;

use bm2ironic::core::migrate::run::record::{ApiProgress, RunRecord, WrittenNode};
use bm2ironic::core::migrate::run::{RunStatus, RunStore};

fn node(i: usize) -> WrittenNode {
    serde_json::from_value(serde_json::json!({
        "nova_bm_id": i, "uuid": format!("bbbbbbbb-0000-4000-8000-{i:012}"), "provision_state": "active",
        "instance_uuid": format!("aaaaaaaa-0000-4000-8000-{i:012}"), "maintenance": false, "driver": "ipmi",
        "driver_info": {"ipmi_address": format!("10.1.{}.{}", i / 250, i % 250), "ipmi_username": "admin",
                        "ipmi_password": "***", "deploy_kernel": "glance://k", "deploy_ramdisk": "glance://r"},
        "properties": {"cpus": 8, "memory_mb": 16384, "local_gb": 200, "cpu_arch": "x86_64"},
        "instance_info": {"image_source": "glance://img", "root_gb": 20},
        "ports": [{"uuid": format!("cccccccc-0000-4000-8000-{i:012}"), "address": "52:54:00:00:00:01",
                   "nova_bm_interface_id": i, "vif": null}],
        "api": {"state": "pending", "error": null}
    }))
    .unwrap()
}

/// Now: the head and every node listed once, then one line per node's update.
fn journal(dir: &std::path::Path, run: &mut RunRecord) -> u64 {
    let store = RunStore::Dir(dir.to_path_buf());
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(async {
        store.begin(run).await.unwrap();
        for i in 0..run.written.len() {
            run.written[i].api = Some(ApiProgress { state: "active".into(), error: None });
            store.put_node(&run.id, i, &run.written[i]).await.unwrap();
        }
    });
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum()
}

/// Before: after every node, the whole record serialised, written to a new file, synced, renamed.
fn rewrite(dir: &std::path::Path, run: &mut RunRecord) -> u64 {
    let path = dir.join(format!("{}.json", run.id));
    let mut bytes = 0u64;
    for i in 0..run.written.len() {
        run.written[i].api = Some(ApiProgress { state: "active".into(), error: None });
        let text = serde_json::to_string_pretty(&*run).unwrap();
        let tmp = path.with_extension("json.tmp");
        let mut f = std::fs::File::create(&tmp).unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f.sync_all().unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        bytes += text.len() as u64;
    }
    bytes
}

fn main() {
    let n: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(10_000);
    let fresh = || {
        let mut run = RunRecord::begin(RunStatus::ApiRunning, "c", "mysql://nova:***@db/nova_bm", "modern");
        run.written = (1..=n).map(node).collect();
        run
    };
    println!("run record of {n} nodes, every node's progress recorded once");
    for (name, f) in
        [("now: journal line per node", journal as fn(&_, &mut _) -> u64), ("before: whole file per node", rewrite)]
    {
        let dir = tempfile::tempdir().unwrap();
        let mut run = fresh();
        let t = Instant::now();
        let bytes = f(dir.path(), &mut run);
        let s = t.elapsed().as_secs_f64();
        println!("  {name:<30} {:>10.1} MB written  {s:>8.2} s", bytes as f64 / 1e6);
    }
}
