//! The wizard's state and its pure `update`: a message in, state changed, effects out (the runtime
//! runs them as jobs). No I/O here. This file keeps the routing between the screens (each in
//! `screens/`; `focused!` is the one place a screen is matched to its state, for its keys and its
//! drawing), the keys that work everywhere (quit, help), and what a job's message changes.

use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::Frame;

use super::error::JobError;
use super::keys::{Binding, Row};
use super::screens::confirm::Confirm;
use super::screens::conflicts::Conflicts;
use super::screens::flavors::Flavors;
use super::screens::inventory::InventoryScreen;
use super::screens::summary::{Summary, TakeoverView};
use super::screens::{Ctx, DrawCtx, Out, Page};
use super::theme::Theme;
use super::work::{Logs, Progress};
use crate::core::migrate::conflict::{ConflictCode, Resolutions};
use crate::core::migrate::plan::{Plan, PlanOptions};
use crate::core::migrate::timing::Phases;

pub use super::field::{Field, FieldKind, FieldStatus};
use super::globals::{Global, CTRL_QUIT, CTRL_QUIT_SHOWN, HELP, HELP_F1, QUIT, QUIT_UNSHOWN};
use super::msg::Status;
pub use super::msg::{Effect, Msg};
use super::screens::connections::ConnectionsForm;
pub use super::screens::connections::Prefill;
pub use super::screens::Screen;
use super::session::{Mode, Session};

/// `$page` bound to the focused screen's state (`mut`: mutably) in `$body`: the one place a `Screen`
/// is matched to its field. A macro rather than a `&dyn Page`: `Page::Act` differs per screen, and
/// `on_key` borrows the screen mutably while its `Ctx` borrows the session.
macro_rules! focused {
    ($app:ident, mut $page:ident => $body:expr) => {
        focused!(@ $app, [mut], $page => $body)
    };
    ($app:ident, $page:ident => $body:expr) => {
        focused!(@ $app, [], $page => $body)
    };
    (@ $app:ident, [$($m:tt)?], $page:ident => $body:expr) => {
        match $app.screen {
            Screen::Connections => { let $page = &$($m)? $app.connections; $body }
            Screen::Inventory => { let $page = &$($m)? $app.inventory; $body }
            Screen::Conflicts => { let $page = &$($m)? $app.conflicts; $body }
            Screen::Flavors => { let $page = &$($m)? $app.flavors; $body }
            Screen::Confirm => { let $page = &$($m)? $app.confirm; $body }
            Screen::Progress => { let $page = &$($m)? $app.progress; $body }
            Screen::Logs => { let $page = &$($m)? $app.logs; $body }
            Screen::Summary => { let $page = &$($m)? $app.summary; $body }
        }
    };
}

#[derive(Debug, Clone)]
pub struct App {
    pub screen: Screen,
    pub session: Session,
    pub connections: ConnectionsForm,
    pub inventory: InventoryScreen,
    pub conflicts: Conflicts,
    pub flavors: Flavors,
    pub confirm: Confirm,
    pub progress: Progress,
    pub logs: Logs,
    pub summary: Summary,
    pub status: Status,
    /// where the audit log is written (shown on the summary)
    pub audit_log: Option<String>,
    /// where the next steps' checklist is kept (the state directory)
    pub state_dir: Option<std::path::PathBuf>,
    /// the baremetal nova-compute's nova.conf (`--nova-conf`), for the next steps' `config`
    pub nova_conf: Option<String>,
    /// the demo's sandbox directory (said on quit)
    pub sandbox: Option<String>,
    /// the plan being made again on a worker thread after a decision, if one is
    pub replanning: Option<Replanning>,
    /// the number of the last replan asked for (an older one that ends late is dropped)
    pub replan_generation: u64,
    /// inventories up to this many nodes are planned again at once ([`INLINE_REPLAN_MAX`])
    pub inline_replan_max: usize,
    /// the screen the logs were opened from (`Esc` goes back there)
    pub logs_from: Option<Screen>,
    /// a prepare (reading nova_bm, planning) runs; keys but Esc and the global ones are dropped
    pub preparing: bool,
    /// prepares stopped with Esc whose result has not come back yet (it is dropped when it does)
    pub prepares_dropped: usize,
    /// an existing decisions file: offered at start, not replaced unread without a question
    pub decisions_file: super::msg::DecisionsFile,
}

/// A decision's replan in flight: the conflicts screen moves on from (code, item) once it is in.
#[derive(Debug, Clone, Copy)]
pub struct Replanning {
    pub code: ConflictCode,
    pub item: usize,
}

/// Inventories up to this many nodes are planned again at once after a decision (a few ms); larger
/// ones on a worker thread, the wizard showing that it is busy and dropping keys meanwhile (100,000
/// nodes took 0.6-0.8 s a key, with no sign, and keys queued behind it decided the next group).
pub const INLINE_REPLAN_MAX: usize = 5_000;

impl App {
    pub fn new(mode: Mode, prefill: impl Into<Prefill>, plan_options: PlanOptions, resolutions: Resolutions) -> App {
        App {
            screen: Screen::Connections,
            connections: ConnectionsForm::new(mode, prefill.into(), &plan_options),
            session: Session::new(mode, plan_options, resolutions),
            inventory: InventoryScreen::default(),
            conflicts: Conflicts::default(),
            flavors: Flavors::default(),
            confirm: Confirm::default(),
            progress: Progress::default(),
            logs: Logs::default(),
            summary: Summary::default(),
            status: Status::default(),
            audit_log: None,
            state_dir: None,
            nova_conf: None,
            sandbox: None,
            replanning: None,
            replan_generation: 0,
            inline_replan_max: INLINE_REPLAN_MAX,
            logs_from: None,
            preparing: false,
            prepares_dropped: 0,
            decisions_file: Default::default(),
        }
    }

    /// The connections screen opens: every filled connection is tested in the background.
    pub fn open_connections(&mut self) -> Vec<Effect> {
        self.connections.test_all().into_iter().map(|field| Effect::TestConnection { field }).collect()
    }

    pub fn work_running(&self) -> bool {
        self.screen == Screen::Progress && self.progress.finished.is_none()
    }

    /// Where Esc on the logs screen goes (on the logs screen no load counts as running).
    /// Going to `to`: the logs remember the screen they were opened from, for `Esc`.
    fn note_logs_from(&mut self, to: Screen) {
        if to == Screen::Logs && self.screen != Screen::Logs {
            self.logs_from = Some(self.screen);
        }
    }

    /// Where `Esc` on the logs goes: the screen they were opened from (after the load, `L` on the
    /// progress screen then `Esc` went to the summary), else by how far the load is.
    fn logs_back(&self) -> Screen {
        if let Some(from) = self.logs_from {
            return from;
        }
        match (self.progress.finished.is_some() || self.progress.total > 0, self.work_running()) {
            (false, _) => Screen::Inventory,
            (true, true) => Screen::Progress,
            (true, false) => Screen::Summary,
        }
    }

    /// Whether the screen takes text (`?` and `q` are then typed, F1 and ^Q work): the LIVE
    /// confirmation wants a word typed, a rehearsal's nothing (`?` did nothing there).
    fn typing(&self) -> bool {
        (self.screen == Screen::Connections && self.connections.editing)
            || (self.screen == Screen::Confirm && self.session.mode == Mode::Live)
            || (self.screen == Screen::Inventory && self.inventory.filtering)
    }

    /// The keys that work everywhere, for this screen: (listed with the screen's, the help's last line).
    fn globals(&self) -> (Vec<&'static Binding<Global>>, &'static Binding<Global>) {
        match self.screen {
            Screen::Connections if self.typing() => (vec![&HELP_F1], &CTRL_QUIT_SHOWN),
            _ if self.typing() => (vec![&HELP_F1], &CTRL_QUIT),
            Screen::Progress if self.progress.cancel_asked => (vec![&QUIT_UNSHOWN, &HELP], &CTRL_QUIT),
            _ => (vec![&QUIT, &HELP], &CTRL_QUIT),
        }
    }

    fn ctx(&self) -> Ctx<'_> {
        Ctx {
            session: &self.session,
            nova_given: !self.connections.flavors_db().is_empty(),
            api_given: !self.connections.value(Field::IronicApi).is_empty(),
            flavors_known: self.flavors.result.is_some(),
            running: self.work_running(),
            logs_back: self.logs_back(),
            busy: self.status.busy.is_some(),
        }
    }

    /// The focused screen's rows (its own, then quit and help) and the help's last row: the key
    /// bar and the help popup are drawn from these, and they are the tables keys are matched in.
    pub fn key_rows(&self) -> (Vec<Row>, Row) {
        let cx = self.ctx();
        let mut rows = focused!(self, page => page.rows(&cx));
        let (listed, last) = self.globals();
        rows.extend(listed.iter().map(|b| b.row()));
        (rows, last.row())
    }

    /// What the screens read when they draw.
    fn draw_ctx(&self, theme: Theme) -> DrawCtx<'_> {
        DrawCtx {
            theme,
            session: &self.session,
            tick: self.status.spinner,
            busy: self.status.busy.is_some(),
            target: self.connections.value(Field::IronicDb),
            api_given: !self.connections.value(Field::IronicApi).is_empty(),
            progress: &self.progress,
            logs: &self.logs,
            phases: self.phases(),
            audit_log: self.audit_log.as_deref(),
        }
    }

    /// Draws the focused screen into `area` (the body between the header and the status line).
    pub fn draw_screen(&self, f: &mut Frame, area: Rect, theme: Theme) {
        let cx = self.draw_ctx(theme);
        focused!(self, page => page.draw(f, area, &cx))
    }

    /// What the focused screen's marks mean (the help shows it under the keys).
    pub fn legend(&self) -> Vec<&'static str> {
        let cx = self.ctx();
        focused!(self, page => page.legend(&cx))
    }

    /// Every key row of the focused screen (as the help lists them).
    pub fn keys(&self) -> Vec<Row> {
        let (mut rows, last) = self.key_rows();
        rows.push(last);
        rows
    }

    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        let text = |e: JobError| e.to_string();
        match msg {
            Msg::Tick(elapsed) => {
                self.status.spinner = self.status.spinner.wrapping_add(1);
                if self.work_running() {
                    self.progress.elapsed = elapsed;
                }
                if self.screen == Screen::Connections {
                    let due = self.connections.due(self.status.spinner);
                    return due.into_iter().map(|field| Effect::TestConnection { field }).collect();
                }
            }
            Msg::Key(key) => return self.on_key(key),
            Msg::Tested { field, generation, result } => {
                self.connections.tested(field, generation, result.map_err(text))
            }
            // one the operator stopped with Esc: its result is not shown
            Msg::Prepared(_) if self.prepares_dropped > 0 => self.prepares_dropped -= 1,
            Msg::Prepared(r) => {
                self.preparing = false;
                self.status.busy = None;
                match r {
                    Ok(p) => {
                        self.session.inv_summary = p.inventory.summary();
                        self.session.prepared = Some(p);
                        self.replan();
                        self.screen = Screen::Inventory;
                    }
                    Err(e) => {
                        self.connections.prepare_failed(&e.to_string());
                        self.status.toast = Some(e.to_string())
                    }
                }
            }
            Msg::Replanned { generation, plan, ms } => self.replanned(generation, plan, ms),
            Msg::Load(ev) => self.progress.on_event(ev),
            Msg::LoadDone(r) => {
                self.progress.finish(r.map_err(text));
                self.summary.facts = Some(self.run_facts());
                let mut out = Vec::new();
                let Some(o) = self.progress.outcome() else { return out };
                if let (Some(f), Some(run)) = (&self.summary.facts, o.run_id()) {
                    let steps = crate::core::migrate::next_steps::next_steps(f);
                    let text = crate::core::migrate::next_steps::checklist(f, &steps);
                    out.push(Effect::WriteChecklist { run_id: run.to_string(), text });
                }
                // verified by the core before the target closed; the takeover follows a clean one
                if let Some(v) = &o.verify {
                    let r = v.as_ref().map_err(|e| e.clone()).and_then(crate::core::migrate::report::verify_text);
                    let clean = r.is_ok() && o.complete();
                    (self.summary.verify, self.summary.verify_ms) = (Some(r), o.phases.verify_ms);
                    if clean && !self.connections.value(Field::IronicApi).is_empty() {
                        self.summary.takeover = Some(TakeoverView::default());
                        out.push(Effect::CheckTakeover);
                    }
                }
                return out;
            }
            Msg::Logs(lines) => self.logs.push(lines),
            Msg::Saved(Ok(p)) => return self.saved(p),
            Msg::Saved(Err(e)) => {
                self.status.quit_after_save = false;
                self.status.toast = Some(format!("could not save decisions: {e}"))
            }
            Msg::ReportWritten(Ok(p)) => {
                self.status.toast = Some(format!("run report written: {p}"));
                self.summary.report = Some(p);
            }
            Msg::ReportWritten(Err(e)) => self.status.toast = Some(format!("could not write the run report: {e}")),
            Msg::Takeover(ev) => {
                if let Some(t) = &mut self.summary.takeover {
                    t.on_event(ev);
                }
            }
            Msg::TakeoverDone(r) => {
                if let Some(t) = &mut self.summary.takeover {
                    t.ended = Some(r.map(|o| o.ending).map_err(text));
                }
            }
            Msg::Flavors(r) => self.flavors.result = Some(r.map_err(text)),
            Msg::FlavorsApplied(Ok(set)) => {
                if self.flavors.applied(&set) {
                    self.status.toast =
                        Some(format!("flavors changed (change set {set}; undo: bm2ironic flavors --restore)"));
                }
            }
            Msg::FlavorsApplied(Err(e)) => self.status.toast = Some(format!("flavors not changed: {e}")),
            Msg::Warning(w) => self.status.toast = Some(format!("warning: {}", crate::core::text::visible_line(&w))),
            m @ (Msg::BmcProgress { .. } | Msg::BmcChecked(_)) => self.on_bmc(m),
        }
        vec![]
    }

    /// The wall time of each phase so far: reading and planning (the last plan), the load and its
    /// commit, the verification.
    pub fn phases(&self) -> Phases {
        let read = self.session.prepared.as_ref().and_then(|p| p.timings.read_ms);
        let (load, commit) = match self.progress.outcome() {
            Some(o) => (o.phases.load_ms, o.phases.commit_ms),
            None => (None, None),
        };
        Phases {
            read_ms: read,
            plan_ms: self.session.plan_ms,
            load_ms: load,
            commit_ms: commit,
            verify_ms: self.summary.verify_ms,
        }
    }

    /// After a decision: the plan made again, at once for a small inventory, else on a worker thread
    /// (`Effect::Replan`, answered by `Msg::Replanned`) with the busy sign up.
    fn decided(&mut self, code: ConflictCode, item: usize) -> Vec<Effect> {
        let nodes = self.session.prepared.as_ref().map_or(0, |p| p.inventory.nodes.len());
        if nodes <= self.inline_replan_max {
            self.replan();
            self.conflicts.after_decide(code, item, &self.session);
            return vec![];
        }
        self.replan_generation += 1;
        self.replanning = Some(Replanning { code, item });
        self.status.busy = Some(format!("planning {nodes} nodes again with the decision"));
        vec![Effect::Replan { generation: self.replan_generation }]
    }

    /// Runs the effects a test or a bench cares about at once, on this thread, and takes their
    /// messages (`Effect::Replan`); the others are dropped. The wizard's runtime spawns them instead.
    pub fn run_inline(&mut self, effects: Vec<Effect>) {
        for e in effects {
            if let Effect::Replan { generation } = e {
                let Some(prepared) = self.session.prepared.clone() else { continue };
                let opts = self.connections.plan_options(&self.session.plan_options);
                let msg = super::jobs::replan(generation, &prepared, &opts, &self.session.resolutions);
                let more = self.update(msg);
                self.run_inline(more);
            }
        }
    }

    /// A replan from a worker thread arrived: the newest one asked for is shown, older ones dropped.
    fn replanned(&mut self, generation: u64, plan: Result<Box<Plan>, String>, ms: f64) {
        if generation != self.replan_generation {
            return;
        }
        let plan = match plan {
            Ok(p) => *p,
            Err(e) => {
                // the decision is kept (journalled); the plan shown is the one before it
                self.replanning = None;
                self.status.busy = None;
                self.status.toast = Some(format!(
                    "planning again failed ({e}): the plan shown is the one before the decision; decide again"
                ));
                return;
            }
        };
        self.session.install_plan(plan, ms);
        self.inventory.refresh(&self.session);
        self.conflicts.clamp(&self.session);
        if let Some(r) = self.replanning.take() {
            self.conflicts.after_decide(r.code, r.item, &self.session);
        }
        self.status.busy = None;
    }

    /// Recomputes the plan after a decision (pure and fast: no I/O), with the options on the form.
    pub fn replan(&mut self) {
        let opts = self.connections.plan_options(&self.session.plan_options);
        self.session.replan(&opts);
        self.inventory.refresh(&self.session);
        self.conflicts.clamp(&self.session);
    }

    fn on_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        self.status.toast = None;
        if let Some(effects) = self.decisions_file_key(&key) {
            return effects;
        }
        if self.status.quit_asked {
            self.status.quit_asked = false;
            if !self.work_running() && matches!(key.code, KeyCode::Char('w')) {
                // save, then quit once saved (`Msg::Saved`)
                self.status.quit_after_save = true;
                return self.save_decisions();
            }
            if matches!(key.code, KeyCode::Char('y') | KeyCode::Char('Y')) {
                self.status.quit = true;
                let cancel = self.work_running().then_some(Effect::Cancel);
                return cancel.into_iter().chain([Effect::Quit]).collect();
            }
            return vec![];
        }
        if self.status.help {
            self.status.help = false;
            return vec![];
        }
        let (mut globals, last) = self.globals();
        globals.insert(0, last);
        match super::keys::find(&globals, &key) {
            Some(Global::Quit) => return self.ask_quit(),
            Some(Global::Help) => {
                self.status.help = true;
                return vec![];
            }
            None => {}
        }
        if self.preparing {
            // reading nova_bm and planning (seconds at 100,000 nodes): a key typed meanwhile would edit
            // a connection being read; Esc stops it (its result is dropped), the rest is said
            if key.code == KeyCode::Esc {
                self.preparing = false;
                self.prepares_dropped += 1;
                self.status.busy = None;
                self.status.toast = Some("stopped: what was being read is dropped (Enter reads again)".into());
            } else {
                self.status.toast = Some("reading nova_bm and planning: Esc stops it".into());
            }
            return vec![];
        }
        if self.replanning.is_some() && key.code != KeyCode::Esc {
            // a key typed while the decision's plan is made would act on the plan before it (a second
            // `1` decided the next group): dropped, and said; Esc still goes back
            self.status.toast = Some("still planning with the last decision: key ignored".into());
            return vec![];
        }
        // the screen changes while the rest is read: the context is built from the fields
        let c = self.ctx();
        let (nova_given, api_given, flavors_known, running, logs_back, busy) =
            (c.nova_given, c.api_given, c.flavors_known, c.running, c.logs_back, c.busy);
        let cx = Ctx { session: &self.session, nova_given, api_given, flavors_known, running, logs_back, busy };
        let outs = focused!(self, mut page => page.on_key(key, &cx));
        self.apply(outs)
    }

    /// What a screen's key asked of the rest of the wizard.
    pub(super) fn apply(&mut self, outs: Vec<Out>) -> Vec<Effect> {
        let mut effects = vec![];
        for out in outs {
            match out {
                Out::Effect(Effect::SaveResolutions) => effects.extend(self.save_decisions()),
                Out::Effect(e) => {
                    self.preparing |= e == Effect::Prepare;
                    effects.push(e)
                }
                Out::Go(screen) => {
                    self.note_logs_from(screen);
                    if screen == Screen::Confirm {
                        self.confirm.reset();
                    }
                    self.screen = screen;
                }
                Out::Toast(t) => self.status.toast = Some(t),
                Out::Busy(b) => self.status.busy = Some(b),
                Out::Decide { code, subject, action, all } => {
                    self.session.decide(code, subject.as_ref(), action, all);
                    effects.push(Effect::Journal {
                        path: self.session.journal_path(),
                        text: self.session.resolutions.to_toml(),
                    });
                    let item = self.conflicts.item;
                    effects.extend(self.decided(code, item));
                }
                Out::Undo => {
                    if !self.session.undo() {
                        self.status.toast = Some("nothing to undo".into());
                        continue;
                    }
                    self.status.toast = Some("the last decision was taken back".into());
                    effects.push(Effect::Journal {
                        path: self.session.journal_path(),
                        text: self.session.resolutions.to_toml(),
                    });
                    let (group, item) = (self.conflicts.group, self.conflicts.item);
                    let code = self.session.conflict_groups().get(group).map(|(c, _)| *c);
                    if let Some(code) = code {
                        effects.extend(self.decided(code, item));
                    } else {
                        self.replan();
                    }
                }
                Out::ShowErrors => {
                    if self.logs.show_first_error() {
                        self.note_logs_from(Screen::Logs);
                        self.screen = Screen::Logs;
                    } else if self.logs.errors() > 0 {
                        self.status.toast =
                            Some("the error lines scrolled out of the logs kept: see the summary".into());
                    } else {
                        self.status.toast = Some("no takeover errors so far".into());
                    }
                }
                Out::StartLoad { rehearse } => {
                    self.progress = Progress::start(rehearse, self.session.plan.as_ref());
                    self.screen = Screen::Progress;
                    effects.push(Effect::StartLoad { rehearse });
                }
            }
        }
        effects
    }

    /// Quits at once, or asks first while a load runs.
    fn ask_quit(&mut self) -> Vec<Effect> {
        // a load runs, or decisions were made and not saved: ask (a stray `q` beside `w` loses nothing)
        let ask = self.work_running() || self.session.unsaved();
        self.status.quit_asked = ask;
        self.status.quit = !ask;
        if ask {
            vec![]
        } else {
            vec![Effect::Quit]
        }
    }
}

#[cfg(test)]
#[path = "app_tests.rs"]
mod tests;
