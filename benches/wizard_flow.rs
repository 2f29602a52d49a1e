//! The wizard under load, on a ratatui TestBackend (scripts/bench.sh runs it):
//! 1. key-to-frame while the progress screen receives 10,000 load events a second: what the runtime
//!    does when a key arrives (src/tui/runtime.rs: every queued message is handled, then one frame is drawn, at
//!    most every 33 ms, so a key waits for at most one frame's worth of events: 330), for 100k nodes;
//! 2. key-to-frame of a decision on the conflicts screen at 100k nodes (`1`: the first action for the
//!    item): the decision, the plan made again from it, and the frame that shows it (issue #33 item 5:
//!    0.6-0.8 s a key before, with no busy sign and keys queueing behind it);
//! 3. time to the inventory screen at 100k nodes: the prepare that Enter on the connections screen
//!    starts (read nova_bm, plan), run by the real runtime until the inventory screen is drawn. The
//!    inventory comes from BENCH_NOVA_BM_DB (scripts/bench.sh passes its 100k MariaDB source), else
//!    an SQLite nova_bm built here (Fixture::bench).
//!
//! Run: cargo bench --bench wizard_flow [-- NODES]

use std::sync::Arc;
use std::time::{Duration, Instant};

use bm2ironic::core::db::url::DbUrl;
use bm2ironic::core::db::{Access, Db};
use bm2ironic::core::demo::fixture::{self, Fixture};
use bm2ironic::core::ironic::target::{TargetKind, TargetSchema, TargetState};
use bm2ironic::core::migrate::events::{LoadEvent, NodeStatus};
use bm2ironic::core::migrate::plan::{self, PlanOptions};
use bm2ironic::core::migrate::prepare::Prepared;
use bm2ironic::core::source::model::Inventory;
use bm2ironic::tui::app::{App, Msg, Prefill, Screen};
use bm2ironic::tui::runtime::Runner;
use bm2ironic::tui::screens::progress::Progress;
use bm2ironic::tui::view::{view, Theme};
use bm2ironic::tui::Mode;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;

fn opts() -> PlanOptions {
    PlanOptions {
        default_arch: Some("x86_64".into()),
        deploy_kernel: Some("k".into()),
        deploy_ramdisk: Some("r".into()),
        ..Default::default()
    }
}

fn progress_app(nodes: usize) -> App {
    let f = Fixture::bench(nodes, 40);
    // every instance's PXE config learned (in memory), as a migration night has them
    let boots = Arc::new(f.boots("/srv/tftp"));
    let inv = Arc::new(Inventory::join(f.nodes, f.interfaces));
    let target = TargetState { schema: TargetSchema::known(TargetKind::Modern), nodes: vec![], ports: vec![] };
    let with_boots = || plan::PlanOptions { boots: Arc::clone(&boots), ..opts() };
    let plan = plan::plan(&inv, &target, None, &with_boots(), &Default::default());
    let mut a = App::new(Mode::Rehearsal, Prefill::default(), with_boots(), Default::default());
    a.session.inv_summary = inv.summary();
    a.progress = Progress::start(true, Some(&plan));
    a.session.prepared = Some(Arc::new(Prepared {
        inventory: inv,
        target,
        nova: None,
        plan,
        source: "bench".into(),
        timings: Default::default(),
        boots: Arc::clone(&boots),
        bmc: Default::default(),
    }));
    a.screen = Screen::Progress;
    a
}

fn key_to_frame(nodes: usize) {
    let mut a = progress_app(nodes);
    let ids: Vec<(i64, String)> = a
        .session
        .prepared
        .as_ref()
        .map(|p| p.plan.to_write().map(|n| (n.nova_bm_id, n.uuid.clone().unwrap_or_default())).collect())
        .unwrap_or_default();
    let total = ids.len();
    let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
    let per_frame = 10_000 * 33 / 1000; // events arriving during one 33 ms frame at 10k/s
    let mut next = 0usize;
    let mut samples = Vec::new();
    let started = Instant::now();
    while next + per_frame < total && samples.len() < 200 {
        let t = Instant::now();
        for (id, uuid) in &ids[next..next + per_frame] {
            a.update(Msg::Load(LoadEvent::Node { nova_bm_id: *id, uuid: uuid.clone(), status: NodeStatus::Written }));
        }
        next += per_frame;
        a.update(Msg::Load(LoadEvent::Progress { done: next, total, elapsed_ms: 0.0 }));
        a.update(Msg::Key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE)));
        term.draw(|f| view(&a, f, Theme { color: true })).unwrap();
        samples.push(t.elapsed());
    }
    samples.sort();
    let events = next as f64 / started.elapsed().as_secs_f64();
    println!(
        "key-to-frame while progress floods (10k events/s, {nodes} nodes): median {:.2?}, p99 {:.2?}, max {:.2?} ({} frames; the app alone digests {:.0} events/s)",
        samples[samples.len() / 2],
        samples[samples.len() * 99 / 100],
        samples[samples.len() - 1],
        samples.len(),
        events
    );
}

/// `1` on the conflicts screen, then frames until the decision's plan is shown: the first frame after
/// the key (what the operator sees at once) and the frame that shows the new plan.
fn decision_to_frame(nodes: usize, inline: bool) {
    let mut a = progress_app(nodes);
    // side by side: the plan made on the key, as before (`inline`), and on a worker thread
    a.inline_replan_max = if inline { usize::MAX } else { bm2ironic::tui::app::INLINE_REPLAN_MAX };
    a.replan();
    a.screen = Screen::Conflicts;
    let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
    term.draw(|f| view(&a, f, Theme { color: true })).unwrap();
    let (mut first, mut settled) = (Vec::new(), Vec::new());
    for round in 0..12 {
        let checksum = a.session.plan.as_ref().map(|p| p.checksum.clone());
        // alternate the decision between the first two actions, so each key changes the plan
        let key = if round % 2 == 0 { '2' } else { '1' };
        let t = Instant::now();
        let effects = a.update(Msg::Key(KeyEvent::new(KeyCode::Char(key), KeyModifiers::NONE)));
        term.draw(|f| view(&a, f, Theme { color: true })).unwrap();
        first.push(t.elapsed());
        a.run_inline(effects);
        term.draw(|f| view(&a, f, Theme { color: true })).unwrap();
        settled.push(t.elapsed());
        if round == 0 {
            assert_ne!(a.session.plan.as_ref().map(|p| p.checksum.clone()), checksum, "the decision changed nothing");
        }
    }
    first.sort();
    settled.sort();
    println!(
        "a decision at {nodes} nodes (conflicts screen, 120x40), plan made {}: key to the next frame median {:.2?} (max {:.2?}); to the frame showing the new plan median {:.2?} (max {:.2?})",
        if inline { "on the key (before)" } else { "on a worker thread" },
        first[first.len() / 2],
        first[first.len() - 1],
        settled[settled.len() / 2],
        settled[settled.len() - 1],
    );
}

async fn to_inventory(nodes: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let url = match std::env::var("BENCH_NOVA_BM_DB") {
        Ok(u) if !u.is_empty() => u,
        _ => {
            let u = format!("sqlite:///{}", tmp.path().join("nova_bm.sqlite").display());
            let db = Db::connect(&DbUrl::parse(&u).unwrap(), Access::Create).await.unwrap();
            fixture::build(&db, &Fixture::bench(nodes, 40)).await.unwrap();
            db.close().await;
            u
        }
    };
    let prefill = Prefill { nova_bm_db: Some(url.clone()), ..Default::default() };
    let app = App::new(Mode::ReadOnly, prefill, opts(), Default::default());
    let ctx = bm2ironic::tui::runtime::Context { auto_prepare: true, ..Default::default() };
    let mut r = Runner::new(app, Terminal::new(TestBackend::new(120, 40)).unwrap(), Theme { color: true }, ctx);
    let t = Instant::now();
    r.start();
    assert!(r.pump_until(|a| a.screen == Screen::Inventory, Duration::from_secs(120)).await);
    r.draw().unwrap();
    let n = r.app.session.prepared.as_ref().map(|p| p.inventory.nodes.len()).unwrap_or(0);
    let source = if url.starts_with("sqlite") { "SQLite" } else { "the given database" };
    println!("prepare (Enter on connections) to the inventory drawn, {n} nodes from {source}: {:.2?}", t.elapsed());
}

fn main() {
    let nodes: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(100_000);
    key_to_frame(nodes);
    decision_to_frame(nodes, true);
    decision_to_frame(nodes, false);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(to_inventory(nodes));
}
