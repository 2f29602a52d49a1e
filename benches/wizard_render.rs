//! Measures the wizard's inventory screen with 1,000 and 100,000 nodes side by side in one run:
//! one frame rendered, and a re-filter + re-sort (what a key press in `/` or `s` costs). Only the
//! visible rows are built, so the frame should cost about the same at both sizes.
//! Run: cargo bench --bench wizard_render

use std::sync::Arc;
use std::time::{Duration, Instant};

use bm2ironic::core::demo::fixture::Fixture;
use bm2ironic::core::ironic::target::{TargetKind, TargetSchema, TargetState};
use bm2ironic::core::migrate::plan::{self, PlanOptions};
use bm2ironic::core::migrate::prepare::Prepared;
use bm2ironic::core::source::model::Inventory;
use bm2ironic::tui::app::{App, Screen};
use bm2ironic::tui::screens::inventory::SortKey;
use bm2ironic::tui::view::{view, Theme};
use bm2ironic::tui::Mode;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

fn app(nodes: usize) -> App {
    let f = Fixture::generated(nodes, 40);
    // every instance's PXE config learned (in memory), as a migration night has them
    let boots = Arc::new(f.boots("/srv/tftp"));
    let inv = Arc::new(Inventory::join(f.nodes, f.interfaces));
    let target = TargetState { schema: TargetSchema::known(TargetKind::Modern), nodes: vec![], ports: vec![] };
    let opts = PlanOptions {
        default_arch: Some("x86_64".into()),
        deploy_kernel: Some("k".into()),
        deploy_ramdisk: Some("r".into()),
        boots: Arc::clone(&boots),
        ..Default::default()
    };
    let plan = plan::plan(&inv, &target, None, &opts, &Default::default());
    let mut a = App::new(Mode::ReadOnly, bm2ironic::tui::Prefill::default(), opts, Default::default());
    a.session.inv_summary = inv.summary();
    a.session.prepared = Some(Arc::new(Prepared {
        inventory: inv,
        target,
        nova: None,
        plan,
        source: "bench".into(),
        timings: Default::default(),
        boots,
        bmc: Default::default(),
    }));
    a.replan();
    a.screen = Screen::Inventory;
    a
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn measure(mut f: impl FnMut(), n: usize) -> Duration {
    median(
        (0..n)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

fn main() {
    let mut results = Vec::new();
    for nodes in [1_000usize, 100_000] {
        let mut a = app(nodes);
        a.inventory.selected = nodes / 2;
        let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
        let frame = measure(
            || {
                term.draw(|f| view(&a, f, Theme { color: true })).unwrap();
            },
            51,
        );
        let resort = measure(
            || {
                a.inventory.sort = if a.inventory.sort == SortKey::Host { SortKey::Conflicts } else { SortKey::Host };
                a.inventory.refresh(&a.session);
            },
            11,
        );
        println!("{nodes:>7} nodes: frame {frame:>10.2?}   re-filter+sort {resort:>10.2?}");
        results.push((frame, resort));
    }
    let (f1, s1) = results[0];
    let (f2, s2) = results[1];
    println!(
        "ratio 100k/1k: frame {:.2}x (rows are built for the visible window only), re-sort {:.1}x",
        f2.as_secs_f64() / f1.as_secs_f64(),
        s2.as_secs_f64() / s1.as_secs_f64()
    );
}
