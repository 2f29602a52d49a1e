//! Plain data for the screens' tests: the demo inventory planned against an empty modern Ironic,
//! in memory (no database), what a screen reads when it draws, and a renderer to text.

use std::sync::{Arc, OnceLock};

use ratatui::backend::TestBackend;
use ratatui::{Frame, Terminal};

use super::{Ctx, DrawCtx, Page, Screen};
use crate::core::demo::fixture::Fixture;
use crate::core::ironic::target::{TargetKind, TargetSchema, TargetState};
use crate::core::migrate::plan::{self, PlanOptions};
use crate::core::migrate::prepare::Prepared;
use crate::core::source::model::Inventory;
use crate::tui::session::{Mode, Session};
use crate::tui::theme::Theme;
use crate::tui::work::{Logs, Progress};

pub fn options() -> PlanOptions {
    PlanOptions {
        default_arch: Some("x86_64".into()),
        deploy_kernel: Some("file:///srv/deploy.kernel".into()),
        deploy_ramdisk: Some("file:///srv/deploy.initramfs".into()),
        resource_class: Some("baremetal".into()),
        // the demo's instances' PXE configs, as `bm2ironic demo` writes them (in memory here)
        boots: Arc::new(Fixture::demo().boots("/demo/tftpboot")),
        ..Default::default()
    }
}

/// The demo's 36 nodes, planned (with its undecided conflicts).
pub fn session(mode: Mode) -> Session {
    let f = Fixture::demo();
    let inventory = Arc::new(Inventory::join(f.nodes, f.interfaces));
    let target = TargetState { schema: TargetSchema::known(TargetKind::Modern), nodes: vec![], ports: vec![] };
    let opts = options();
    let plan = plan::plan(&inventory, &target, None, &opts, &Default::default());
    let timings = Default::default();
    let boots = Arc::clone(&opts.boots);
    let bmc = Arc::clone(&opts.bmc);
    let prepared = Prepared { inventory, target, nova: None, plan, source: "demo".into(), timings, boots, bmc };
    let mut s = Session::new(mode, opts.clone(), Default::default());
    s.set_prepared(Arc::new(prepared), &opts);
    s
}

pub fn ctx(session: &Session) -> Ctx<'_> {
    Ctx {
        session,
        nova_given: true,
        api_given: false,
        flavors_known: false,
        running: false,
        logs_back: Screen::Inventory,
        busy: false,
    }
}

/// Drawing with `session`, without colour, at spinner frame 0: nothing busy, no target, no API, no
/// load, no logs, no phase timed, no audit log (a test sets what it shows).
pub fn draw_ctx(session: &Session) -> DrawCtx<'_> {
    static NONE: OnceLock<(Progress, Logs)> = OnceLock::new();
    let (progress, logs) = NONE.get_or_init(Default::default);
    DrawCtx {
        theme: Theme { color: false },
        session,
        tick: 0,
        busy: false,
        target: "",
        api_given: false,
        progress,
        logs,
        phases: Default::default(),
        audit_log: None,
    }
}

/// `page` drawn with `cx` on a `w`x`h` test terminal; the screen as lines of text.
pub fn draw(w: u16, h: u16, page: &impl Page, cx: &DrawCtx) -> String {
    render(w, h, |f| page.draw(f, f.area(), cx))
}

/// Draws with `draw` on a `w`x`h` test terminal; the screen as lines of text.
pub fn render(w: u16, h: u16, draw: impl FnOnce(&mut Frame)) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(draw).unwrap();
    let buf = t.backend().buffer();
    (0..h)
        .map(|y| (0..w).map(|x| buf[(x, y)].symbol()).collect::<String>().trim_end().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A finished SQL load of the test fixture's plan, its ending read from `summary` (tests).
pub(crate) fn finished_with(summary: crate::core::migrate::events::LoadSummary) -> Arc<crate::tui::work::Finished> {
    use crate::core::migrate::run::RunKind;
    use crate::core::migrate::steps::{Ended, Outcome, Planned};
    use crate::tui::work::Finished;
    let prepared = session(Mode::Live).prepared.expect("a plan");
    let ended = match (summary.rehearse, summary.committed) {
        (true, _) => Ended::Rehearsed,
        (false, true) => Ended::Committed,
        (false, false) => Ended::NothingToWrite,
    };
    let outcome = Outcome {
        kind: RunKind::Sql,
        ended,
        run: Some(summary.run_id.clone()),
        summary: Some(summary),
        verify: None,
        phases: Default::default(),
    };
    Arc::new(Finished { planned: Planned { prepared, redecided: None }, outcome })
}
