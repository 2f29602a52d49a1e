//! The wizard's state and its pure `update`: a message in, state changed, effects out (the runtime
//! runs them). No I/O here, so every screen's behaviour is unit-testable.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tui_input::backend::crossterm::EventHandler;
use tui_input::Input;

use super::error::JobError;
use crate::core::db::url::{redact_url, DbUrl};
use crate::core::migrate::conflict::{Action, ConflictCode, Resolutions, Subject};
use crate::core::migrate::load_sql::{LoadEvent, LoadSummary, NodeStatus};
use crate::core::migrate::plan::{self, NodeAction, Plan, PlanOptions};
use crate::core::migrate::prepare::Prepared;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Live,
    Rehearsal,
    ReadOnly,
}

impl Mode {
    pub fn label(self) -> &'static str {
        match self {
            Mode::Live => "LIVE",
            Mode::Rehearsal => "REHEARSAL",
            Mode::ReadOnly => "READ-ONLY",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    Credentials,
    Inventory,
    Conflicts,
    Flavors,
    Confirm,
    Progress,
    Logs,
    Summary,
}

impl Screen {
    pub const STEPS: [Screen; 7] = [
        Screen::Credentials,
        Screen::Inventory,
        Screen::Conflicts,
        Screen::Flavors,
        Screen::Confirm,
        Screen::Progress,
        Screen::Summary,
    ];
    pub fn title(self) -> &'static str {
        match self {
            Screen::Credentials => "Connections",
            Screen::Inventory => "Inventory",
            Screen::Conflicts => "Conflicts",
            Screen::Flavors => "Flavors",
            Screen::Confirm => "Confirm",
            Screen::Progress => "Migration",
            Screen::Logs => "Logs",
            Screen::Summary => "Summary",
        }
    }
}

/// One key of a screen: what the key bar and the `?` help show, from the same list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyHelp {
    pub keys: &'static str,
    pub what: &'static str,
}

const fn k(keys: &'static str, what: &'static str) -> KeyHelp {
    KeyHelp { keys, what }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldStatus {
    Empty,
    Invalid(String),
    Untested,
    Testing,
    Ok(String),
    Failed(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    Database,
    Http,
    Text,
}

#[derive(Debug, Clone)]
pub struct Field {
    pub label: &'static str,
    pub input: Input,
    pub kind: FieldKind,
    pub required: bool,
    pub reveal: bool,
    pub status: FieldStatus,
}

impl Field {
    fn new(label: &'static str, kind: FieldKind, required: bool, value: Option<String>) -> Field {
        let mut f = Field {
            label,
            input: Input::new(value.unwrap_or_default()),
            kind,
            required,
            reveal: false,
            status: FieldStatus::Empty,
        };
        f.validate();
        f
    }

    pub fn value(&self) -> &str {
        self.input.value().trim()
    }

    /// What the screen shows: URLs with the password masked unless revealed.
    pub fn shown(&self) -> String {
        if self.reveal || self.kind == FieldKind::Text {
            self.input.value().to_string()
        } else {
            redact_url(self.input.value()).replace("***", "•••")
        }
    }

    pub fn has_secret(&self) -> bool {
        self.kind != FieldKind::Text && redact_url(self.input.value()) != self.input.value()
    }

    fn validate(&mut self) {
        let v = self.value();
        self.status = if v.is_empty() {
            FieldStatus::Empty
        } else {
            match self.kind {
                FieldKind::Database => match DbUrl::parse(v) {
                    Ok(_) => FieldStatus::Untested,
                    Err(e) => FieldStatus::Invalid(e.reason),
                },
                FieldKind::Http if !(v.starts_with("http://") || v.starts_with("https://")) => {
                    FieldStatus::Invalid("must start with http:// or https://".into())
                }
                _ => FieldStatus::Untested,
            }
        };
    }
}

pub const F_NOVA_BM: usize = 0;
pub const F_IRONIC: usize = 1;
pub const F_NOVA: usize = 2;
pub const F_API: usize = 3;
pub const F_KERNEL: usize = 4;
pub const F_RAMDISK: usize = 5;
pub const F_ARCH: usize = 6;
pub const F_RCLASS: usize = 7;

/// Prefilled values (from flags, environment, config files, or the demo).
#[derive(Debug, Clone, Default)]
pub struct Prefill {
    pub nova_bm_db: Option<String>,
    pub ironic_db: Option<String>,
    pub nova_db: Option<String>,
    pub ironic_url: Option<String>,
    pub deploy_kernel: Option<String>,
    pub deploy_ramdisk: Option<String>,
    pub default_arch: Option<String>,
    pub resource_class: Option<String>,
}

impl From<crate::core::demo::sandbox::SandboxPrefill> for Prefill {
    fn from(s: crate::core::demo::sandbox::SandboxPrefill) -> Prefill {
        Prefill {
            nova_bm_db: Some(s.nova_bm_db),
            ironic_db: Some(s.ironic_db),
            nova_db: Some(s.nova_db),
            ironic_url: None,
            deploy_kernel: Some(s.deploy_kernel),
            deploy_ramdisk: Some(s.deploy_ramdisk),
            default_arch: Some(s.default_arch),
            resource_class: Some(s.resource_class),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Id,
    Host,
    State,
    Conflicts,
}

#[derive(Debug, Clone, Default)]
pub struct InventoryView {
    pub selected: usize,
    pub offset: usize,
    pub filter: Input,
    pub filtering: bool,
    pub sort_desc: bool,
    /// indices into `inventory.nodes`, filtered and sorted
    pub rows: Vec<usize>,
}

#[derive(Debug, Clone, Default)]
pub struct ConflictsView {
    pub group: usize,
    pub item: usize,
    pub focus_items: bool,
    pub apply_all: bool,
}

#[derive(Debug, Clone)]
pub struct NodeProgress {
    pub nova_bm_id: i64,
    pub uuid: String,
    pub status: String,
    pub failed: bool,
}

#[derive(Debug, Clone, Default)]
pub struct ProgressView {
    pub run_id: String,
    pub rehearse: bool,
    pub total: usize,
    pub done: usize,
    pub elapsed: Duration,
    pub nodes: VecDeque<NodeProgress>,
    pub finished: Option<Result<LoadSummary, String>>,
    pub cancel_asked: bool,
    pub cancelling: bool,
}

pub use crate::core::logs::follow::{LogLevel as Level, LogLine};

#[derive(Debug, Clone)]
pub struct LogView {
    pub lines: VecDeque<LogLine>,
    pub follow: bool,
    /// index of the top line when not following
    pub scroll: usize,
    pub files: Vec<(String, String)>,
}

impl Default for LogView {
    fn default() -> Self {
        LogView { lines: VecDeque::new(), follow: true, scroll: 0, files: Vec::new() }
    }
}

/// The flavors step: the diff the Nova DB needs, and whether it was applied.
#[derive(Debug, Clone, Default)]
pub struct FlavorView {
    pub schema: String,
    pub what: String,
    pub changes: Vec<crate::core::migrate::flavors::SpecChange>,
    pub applied: Option<String>,
}

pub const LOG_CAPACITY: usize = 5000;
pub const PROGRESS_KEEP: usize = 2000;

/// What the runtime must do for `update`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    TestConnection { field: usize },
    Prepare,
    StartLoad { rehearse: bool },
    Cancel,
    SaveResolutions,
    Verify,
    PlanFlavors,
    ApplyFlavors,
    Quit,
}

/// Everything that can happen to the wizard. Jobs report typed errors; `update` keeps the words
/// the screens show.
#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    Tick(Duration),
    Tested { field: usize, result: Result<String, JobError> },
    Prepared(Result<Arc<Prepared>, JobError>),
    Load(LoadEvent),
    LoadDone(Result<LoadSummary, JobError>),
    Logs(Vec<LogLine>),
    Saved(Result<String, JobError>),
    Verified(Result<String, JobError>),
    Flavors(Result<FlavorView, JobError>),
    FlavorsApplied(Result<String, JobError>),
}

pub struct App {
    pub mode: Mode,
    pub screen: Screen,
    pub fields: Vec<Field>,
    pub field: usize,
    pub busy: Option<String>,
    pub prepared: Option<Arc<Prepared>>,
    /// counts of the inventory, computed once (the title must not walk 100,000 nodes per frame)
    pub inv_summary: crate::core::source::model::InventorySummary,
    pub plan_options: PlanOptions,
    pub resolutions: Resolutions,
    pub plan: Option<Plan>,
    /// nova_bm id -> (conflicts, any blocking unresolved), computed once per plan
    pub markers: std::collections::HashMap<i64, (usize, bool)>,
    pub inv: InventoryView,
    pub sort: SortKey,
    pub conflicts: ConflictsView,
    pub confirm: Input,
    pub progress: ProgressView,
    pub logs: LogView,
    pub verify: Option<Result<String, String>>,
    pub flavors: Option<Result<FlavorView, String>>,
    pub saved_to: Option<String>,
    pub toast: Option<String>,
    pub help: bool,
    pub quit_asked: bool,
    pub spinner: usize,
    pub audit_log: Option<String>,
    pub resolutions_path: String,
    pub quit: bool,
}

fn is(key: &KeyEvent, code: KeyCode) -> bool {
    key.code == code && !key.modifiers.contains(KeyModifiers::CONTROL)
}

fn ctrl(key: &KeyEvent, c: char) -> bool {
    key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char(c)
}

impl App {
    pub fn new(mode: Mode, prefill: impl Into<Prefill>, plan_options: PlanOptions, resolutions: Resolutions) -> App {
        let prefill = prefill.into();
        let fields = vec![
            Field::new("nova_bm database", FieldKind::Database, true, prefill.nova_bm_db),
            Field::new("Ironic database", FieldKind::Database, mode != Mode::ReadOnly, prefill.ironic_db),
            Field::new("Nova database (optional)", FieldKind::Database, false, prefill.nova_db),
            Field::new("Ironic API (optional)", FieldKind::Http, false, prefill.ironic_url),
            Field::new(
                "Deploy kernel",
                FieldKind::Text,
                mode != Mode::ReadOnly,
                prefill.deploy_kernel.or(plan_options.deploy_kernel.clone()),
            ),
            Field::new(
                "Deploy ramdisk",
                FieldKind::Text,
                mode != Mode::ReadOnly,
                prefill.deploy_ramdisk.or(plan_options.deploy_ramdisk.clone()),
            ),
            Field::new(
                "Default cpu_arch",
                FieldKind::Text,
                false,
                prefill.default_arch.or(plan_options.default_arch.clone()),
            ),
            Field::new(
                "Resource class",
                FieldKind::Text,
                false,
                prefill.resource_class.or(plan_options.resource_class.clone()),
            ),
        ];
        App {
            mode,
            screen: Screen::Credentials,
            fields,
            field: 0,
            busy: None,
            prepared: None,
            inv_summary: Default::default(),
            plan_options,
            resolutions,
            plan: None,
            markers: Default::default(),
            inv: InventoryView::default(),
            sort: SortKey::Id,
            conflicts: ConflictsView::default(),
            confirm: Input::default(),
            progress: ProgressView::default(),
            logs: LogView::default(),
            verify: None,
            flavors: None,
            saved_to: None,
            toast: None,
            help: false,
            quit_asked: false,
            spinner: 0,
            audit_log: None,
            resolutions_path: "bm2ironic-resolutions.toml".into(),
            quit: false,
        }
    }

    pub fn work_running(&self) -> bool {
        self.screen == Screen::Progress && self.progress.finished.is_none()
    }

    /// The keys of the focused screen (key bar and help come from this one list).
    pub fn keys(&self) -> Vec<KeyHelp> {
        let mut v = match self.screen {
            Screen::Credentials => vec![
                k("↑/↓ Tab", "field"),
                k("Enter", "continue"),
                k("^T", "test connection"),
                k("^R", "reveal password"),
                k("^Q", "quit"),
            ],
            Screen::Inventory if self.inv.filtering => vec![k("type", "filter"), k("Enter", "keep"), k("Esc", "clear")],
            Screen::Inventory => {
                let mut v = vec![
                    k("↑/↓ j/k", "move"),
                    k("PgUp/PgDn", "page"),
                    k("/", "filter"),
                    k("s", "sort"),
                    k("r", "reverse"),
                ];
                if self.mode != Mode::ReadOnly {
                    v.push(k("n", "conflicts"));
                    v.push(k("Esc", "back"));
                }
                v.push(k("q", "quit"));
                v
            }
            Screen::Conflicts => vec![
                k("↑/↓", "item"),
                k("Tab", "groups/items"),
                k("1-3", "choose action"),
                k("a", "apply to all of code"),
                k("w", "save decisions"),
                k("n", "confirm"),
                k("Esc", "back"),
                k("q", "quit"),
            ],
            Screen::Flavors if self.mode == Mode::Live => {
                vec![k("A", "apply to Nova"), k("n", "confirm"), k("Esc", "back"), k("q", "quit")]
            }
            Screen::Flavors => vec![k("n", "confirm"), k("Esc", "back"), k("q", "quit")],
            Screen::Confirm => vec![
                k("type", if self.mode == Mode::Live { "the word" } else { "-" }),
                k("Enter", "start"),
                k("Esc", "back"),
            ],
            Screen::Progress if self.progress.cancel_asked => vec![k("y", "cancel the load"), k("n", "keep going")],
            Screen::Progress => {
                vec![k("c", "cancel"), k("L", "logs"), k("Enter", "summary (when done)"), k("q", "quit")]
            }
            Screen::Logs => vec![
                k("↑/↓", "scroll"),
                k("f", "follow"),
                k("e/E", "next/prev error"),
                k("Esc", "back"),
                k("q", "quit"),
            ],
            Screen::Summary => vec![k("L", "logs"), k("i", "inventory"), k("q", "quit")],
        };
        if !(self.screen == Screen::Inventory && self.inv.filtering)
            && self.screen != Screen::Credentials
            && self.screen != Screen::Confirm
        {
            v.push(k("?", "help"));
        }
        v
    }

    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        match msg {
            Msg::Tick(elapsed) => {
                self.spinner = self.spinner.wrapping_add(1);
                if self.work_running() {
                    self.progress.elapsed = elapsed;
                }
                vec![]
            }
            Msg::Key(key) => self.on_key(key),
            Msg::Tested { field, result } => {
                if let Some(f) = self.fields.get_mut(field) {
                    f.status = match result {
                        Ok(v) => FieldStatus::Ok(v),
                        Err(e) => FieldStatus::Failed(e.to_string()),
                    };
                }
                vec![]
            }
            Msg::Prepared(r) => {
                self.busy = None;
                match r {
                    Ok(p) => {
                        self.inv_summary = p.inventory.summary();
                        self.prepared = Some(p);
                        self.replan();
                        self.screen = Screen::Inventory;
                    }
                    Err(e) => self.toast = Some(e.to_string()),
                }
                vec![]
            }
            Msg::Load(ev) => {
                self.on_load_event(ev);
                vec![]
            }
            Msg::LoadDone(r) => {
                let r = r.map_err(|e| e.to_string());
                let ok = r.as_ref().is_ok_and(|s| s.committed);
                match &r {
                    Ok(s) => {
                        self.progress.elapsed = Duration::from_millis(s.elapsed_ms);
                        self.progress.done = s.created;
                        if s.rehearse {
                            for n in self.progress.nodes.iter_mut().filter(|n| n.status == "done") {
                                n.status = "done (rolled back: rehearsal)".into();
                            }
                        }
                    }
                    Err(e) => {
                        for n in self
                            .progress
                            .nodes
                            .iter_mut()
                            .filter(|n| matches!(n.status.as_str(), "done" | "writing" | "queued"))
                        {
                            n.status = format!("failed, rolled back: {e}");
                            n.failed = true;
                        }
                    }
                }
                self.progress.cancelling = false;
                self.progress.cancel_asked = false;
                self.progress.finished = Some(r);
                if ok {
                    return vec![Effect::Verify];
                }
                vec![]
            }
            Msg::Logs(lines) => {
                for l in lines {
                    if self.logs.lines.len() >= LOG_CAPACITY {
                        self.logs.lines.pop_front();
                        self.logs.scroll = self.logs.scroll.saturating_sub(1);
                    }
                    self.logs.lines.push_back(l);
                }
                vec![]
            }
            Msg::Saved(r) => {
                match r {
                    Ok(p) => {
                        self.toast = Some(format!("decisions saved: {p}"));
                        self.saved_to = Some(p);
                    }
                    Err(e) => self.toast = Some(format!("could not save decisions: {e}")),
                }
                vec![]
            }
            Msg::Verified(r) => {
                self.verify = Some(r.map_err(|e| e.to_string()));
                vec![]
            }
            Msg::Flavors(r) => {
                self.flavors = Some(r.map_err(|e| e.to_string()));
                vec![]
            }
            Msg::FlavorsApplied(r) => {
                match (r, &mut self.flavors) {
                    (Ok(set), Some(Ok(v))) => {
                        self.toast =
                            Some(format!("flavors changed (change set {set}; undo: bm2ironic flavors --restore)"));
                        v.applied = Some(set);
                    }
                    (Err(e), _) => self.toast = Some(format!("flavors not changed: {e}")),
                    _ => {}
                }
                vec![]
            }
        }
    }

    fn on_load_event(&mut self, ev: LoadEvent) {
        let p = &mut self.progress;
        match ev {
            LoadEvent::Started { run_id, nodes, rehearse, .. } => {
                p.run_id = run_id;
                p.total = nodes;
                p.rehearse = rehearse;
            }
            LoadEvent::Node { nova_bm_id, uuid, status } => {
                let (status, failed) = match status {
                    NodeStatus::Written => ("done".to_string(), false),
                    NodeStatus::Skipped { reason } => (format!("skipped: {reason}"), false),
                };
                match p.nodes.iter_mut().find(|n| n.nova_bm_id == nova_bm_id) {
                    Some(n) => n.status = status,
                    None => {
                        if p.nodes.len() >= PROGRESS_KEEP {
                            p.nodes.pop_front();
                        }
                        p.nodes.push_back(NodeProgress { nova_bm_id, uuid, status, failed });
                    }
                }
            }
            LoadEvent::Progress { done, total } => {
                p.done = done;
                p.total = total;
                // the next batch is being written now
                for n in p.nodes.iter_mut().filter(|n| n.status == "queued").take(crate::core::migrate::load_sql::BATCH)
                {
                    n.status = "writing".into();
                }
            }
            LoadEvent::Summary(_) => {}
        }
    }

    /// Recomputes the plan after a decision (pure and fast: no I/O).
    pub fn replan(&mut self) {
        let Some(p) = &self.prepared else { return };
        let mut opts = self.plan_options.clone();
        let text = |i: usize| Some(self.fields[i].value().to_string()).filter(|v| !v.is_empty());
        opts.deploy_kernel = text(F_KERNEL);
        opts.deploy_ramdisk = text(F_RAMDISK);
        opts.default_arch = text(F_ARCH);
        opts.resource_class = text(F_RCLASS);
        let plan = plan::plan(&p.inventory, &p.target, p.nova.as_ref(), &opts, &self.resolutions);
        self.markers.clear();
        for c in &plan.conflicts {
            if let Subject::Node { nova_bm_id } | Subject::Interface { nova_bm_id, .. } = &c.subject {
                let m = self.markers.entry(*nova_bm_id).or_default();
                m.0 += 1;
                m.1 |= c.is_unresolved_blocking();
            }
        }
        self.plan = Some(plan);
        self.refresh_rows();
        let groups = self.conflict_groups().len();
        if self.conflicts.group >= groups {
            self.conflicts.group = groups.saturating_sub(1);
        }
    }

    /// Node conflict marker: (number of conflicts, any unresolved blocking).
    pub fn node_marker(&self, nova_bm_id: i64) -> (usize, bool) {
        self.markers.get(&nova_bm_id).copied().unwrap_or((0, false))
    }

    pub fn refresh_rows(&mut self) {
        let Some(p) = &self.prepared else {
            self.inv.rows.clear();
            return;
        };
        let f = self.inv.filter.value().to_lowercase();
        let mut rows: Vec<usize> = p
            .inventory
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| {
                f.is_empty() || {
                    let b = &n.node;
                    [
                        b.uuid.as_deref(),
                        b.service_host.as_deref(),
                        b.task_state.as_deref(),
                        b.instance_uuid.as_deref(),
                        b.pm_address.as_deref(),
                    ]
                    .iter()
                    .flatten()
                    .any(|s| s.to_lowercase().contains(&f))
                        || b.id.to_string() == f
                        || n.interfaces
                            .iter()
                            .any(|i| i.address.as_deref().is_some_and(|a| a.to_lowercase().contains(&f)))
                }
            })
            .map(|(i, _)| i)
            .collect();
        let nodes = &p.inventory.nodes;
        match self.sort {
            SortKey::Id => rows.sort_by_key(|&i| nodes[i].node.id),
            SortKey::Host => rows.sort_by(|&a, &b| {
                nodes[a]
                    .node
                    .service_host
                    .cmp(&nodes[b].node.service_host)
                    .then(nodes[a].node.id.cmp(&nodes[b].node.id))
            }),
            SortKey::State => rows.sort_by(|&a, &b| {
                nodes[a].node.task_state.cmp(&nodes[b].node.task_state).then(nodes[a].node.id.cmp(&nodes[b].node.id))
            }),
            SortKey::Conflicts => {
                let keys: Vec<(usize, bool)> = rows.iter().map(|&i| self.node_marker(nodes[i].node.id)).collect();
                let mut paired: Vec<(usize, (usize, bool))> = rows.iter().copied().zip(keys).collect();
                paired.sort_by(|a, b| {
                    (b.1 .1, b.1 .0).cmp(&(a.1 .1, a.1 .0)).then(nodes[a.0].node.id.cmp(&nodes[b.0].node.id))
                });
                rows = paired.into_iter().map(|(i, _)| i).collect();
            }
        }
        if self.inv.sort_desc {
            rows.reverse();
        }
        self.inv.rows = rows;
        if self.inv.selected >= self.inv.rows.len() {
            self.inv.selected = self.inv.rows.len().saturating_sub(1);
        }
    }

    /// Conflicts grouped by code: (code, indices into plan.conflicts).
    pub fn conflict_groups(&self) -> Vec<(ConflictCode, Vec<usize>)> {
        let Some(plan) = &self.plan else { return vec![] };
        let mut groups: Vec<(ConflictCode, Vec<usize>)> = Vec::new();
        for (i, c) in plan.conflicts.iter().enumerate() {
            match groups.iter_mut().find(|(code, _)| *code == c.code) {
                Some((_, v)) => v.push(i),
                None => groups.push((c.code, vec![i])),
            }
        }
        groups.sort_by_key(|(c, v)| (!v.iter().any(|&i| plan.conflicts[i].is_unresolved_blocking()), *c));
        groups
    }

    fn on_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        self.toast = None;
        if self.quit_asked {
            if matches!(key.code, KeyCode::Char('y') | KeyCode::Char('Y')) {
                self.quit = true;
                let mut e = vec![];
                if self.work_running() {
                    e.push(Effect::Cancel);
                }
                e.push(Effect::Quit);
                return e;
            }
            self.quit_asked = false;
            return vec![];
        }
        if self.help {
            self.help = false;
            return vec![];
        }
        if ctrl(&key, 'c') || ctrl(&key, 'q') {
            return self.ask_quit();
        }
        let typing = matches!(self.screen, Screen::Credentials | Screen::Confirm)
            || (self.screen == Screen::Inventory && self.inv.filtering);
        if !typing {
            if is(&key, KeyCode::Char('?')) {
                self.help = true;
                return vec![];
            }
            if is(&key, KeyCode::Char('q')) {
                return self.ask_quit();
            }
        }
        match self.screen {
            Screen::Credentials => self.key_credentials(key),
            Screen::Inventory => self.key_inventory(key),
            Screen::Conflicts => self.key_conflicts(key),
            Screen::Flavors => self.key_flavors(key),
            Screen::Confirm => self.key_confirm(key),
            Screen::Progress => self.key_progress(key),
            Screen::Logs => self.key_logs(key),
            Screen::Summary => {
                match key.code {
                    KeyCode::Char('L') => self.screen = Screen::Logs,
                    KeyCode::Char('i') => self.screen = Screen::Inventory,
                    _ => {}
                }
                vec![]
            }
        }
    }

    fn ask_quit(&mut self) -> Vec<Effect> {
        if self.work_running() {
            self.quit_asked = true;
            vec![]
        } else {
            self.quit = true;
            vec![Effect::Quit]
        }
    }

    fn key_credentials(&mut self, key: KeyEvent) -> Vec<Effect> {
        if self.busy.is_some() {
            return vec![];
        }
        let n = self.fields.len();
        match key.code {
            KeyCode::Up | KeyCode::BackTab => self.field = (self.field + n - 1) % n,
            KeyCode::Down | KeyCode::Tab => self.field = (self.field + 1) % n,
            _ if ctrl(&key, 'r') => {
                let f = &mut self.fields[self.field];
                f.reveal = !f.reveal;
            }
            _ if ctrl(&key, 't') => {
                let f = &mut self.fields[self.field];
                if matches!(f.status, FieldStatus::Untested | FieldStatus::Ok(_) | FieldStatus::Failed(_))
                    && f.kind != FieldKind::Text
                {
                    f.status = FieldStatus::Testing;
                    return vec![Effect::TestConnection { field: self.field }];
                }
            }
            KeyCode::Enter => {
                if let Some((i, why)) = self.fields.iter().enumerate().find_map(|(i, f)| match &f.status {
                    FieldStatus::Empty if f.required => Some((i, "is required".to_string())),
                    FieldStatus::Invalid(e) => Some((i, e.clone())),
                    _ => None,
                }) {
                    self.field = i;
                    self.toast = Some(format!("{}: {why}", self.fields[i].label));
                    return vec![];
                }
                self.busy = Some("reading nova_bm and the Ironic database, planning".into());
                return vec![Effect::Prepare];
            }
            _ => {
                let f = &mut self.fields[self.field];
                if f.input.handle_event(&ratatui::crossterm::event::Event::Key(key)).is_some() {
                    f.validate();
                }
            }
        }
        vec![]
    }

    fn page(&self) -> usize {
        10
    }

    fn key_inventory(&mut self, key: KeyEvent) -> Vec<Effect> {
        if self.inv.filtering {
            match key.code {
                KeyCode::Enter => self.inv.filtering = false,
                KeyCode::Esc => {
                    self.inv.filtering = false;
                    self.inv.filter.reset();
                    self.refresh_rows();
                }
                _ => {
                    if self.inv.filter.handle_event(&ratatui::crossterm::event::Event::Key(key)).is_some() {
                        self.inv.selected = 0;
                        self.refresh_rows();
                    }
                }
            }
            return vec![];
        }
        let last = self.inv.rows.len().saturating_sub(1);
        let page = self.page();
        let s = &mut self.inv.selected;
        match key.code {
            KeyCode::Down | KeyCode::Char('j') => *s = (*s + 1).min(last),
            KeyCode::Up | KeyCode::Char('k') => *s = s.saturating_sub(1),
            KeyCode::PageDown => *s = (*s + page).min(last),
            KeyCode::PageUp => *s = s.saturating_sub(page),
            KeyCode::Home | KeyCode::Char('g') => *s = 0,
            KeyCode::End | KeyCode::Char('G') => *s = last,
            KeyCode::Char('/') => self.inv.filtering = true,
            KeyCode::Char('s') => {
                self.sort = match self.sort {
                    SortKey::Id => SortKey::Host,
                    SortKey::Host => SortKey::State,
                    SortKey::State => SortKey::Conflicts,
                    SortKey::Conflicts => SortKey::Id,
                };
                self.refresh_rows();
            }
            KeyCode::Char('r') => {
                self.inv.sort_desc = !self.inv.sort_desc;
                self.refresh_rows();
            }
            KeyCode::Char('n') | KeyCode::Right if self.mode != Mode::ReadOnly => self.screen = Screen::Conflicts,
            KeyCode::Esc if self.mode != Mode::ReadOnly => self.screen = Screen::Credentials,
            _ => {}
        }
        vec![]
    }

    fn key_conflicts(&mut self, key: KeyEvent) -> Vec<Effect> {
        let groups = self.conflict_groups();
        let Some(plan) = &self.plan else { return vec![] };
        match key.code {
            KeyCode::Tab | KeyCode::Right | KeyCode::Left | KeyCode::BackTab => {
                self.conflicts.focus_items = !self.conflicts.focus_items
            }
            KeyCode::Down | KeyCode::Char('j') => {
                if self.conflicts.focus_items {
                    let n = groups.get(self.conflicts.group).map(|g| g.1.len()).unwrap_or(0);
                    self.conflicts.item = (self.conflicts.item + 1).min(n.saturating_sub(1));
                } else {
                    self.conflicts.group = (self.conflicts.group + 1).min(groups.len().saturating_sub(1));
                    self.conflicts.item = 0;
                }
            }
            KeyCode::Up | KeyCode::Char('k') => {
                if self.conflicts.focus_items {
                    self.conflicts.item = self.conflicts.item.saturating_sub(1);
                } else {
                    self.conflicts.group = self.conflicts.group.saturating_sub(1);
                    self.conflicts.item = 0;
                }
            }
            KeyCode::Char('a') => self.conflicts.apply_all = !self.conflicts.apply_all,
            KeyCode::Char(c @ '1'..='9') => {
                let Some((code, idx)) = groups.get(self.conflicts.group) else { return vec![] };
                let Some(action) = code.actions().get((c as u8 - b'1') as usize).copied() else {
                    self.toast = Some(format!("{code} has {} action(s)", code.actions().len()));
                    return vec![];
                };
                self.decide(*code, idx, plan.conflicts.clone(), action);
            }
            KeyCode::Char('w') => return vec![Effect::SaveResolutions],
            KeyCode::Char('n') => {
                let blocking = plan.blocking();
                if blocking > 0 {
                    self.toast = Some(format!("{blocking} blocking conflict(s) remain: decide them first"));
                } else if self.fields[F_NOVA].value().is_empty() {
                    self.toast =
                        Some("no Nova database: the flavors step is skipped (bm2ironic flavors does it later)".into());
                    self.confirm.reset();
                    self.screen = Screen::Confirm;
                } else {
                    self.screen = Screen::Flavors;
                    if self.flavors.is_none() {
                        return vec![Effect::PlanFlavors];
                    }
                }
            }
            KeyCode::Esc => self.screen = Screen::Inventory,
            _ => {}
        }
        vec![]
    }

    fn decide(
        &mut self,
        code: ConflictCode,
        idx: &[usize],
        conflicts: Vec<crate::core::migrate::conflict::Conflict>,
        action: Action,
    ) {
        if self.conflicts.apply_all {
            self.resolutions.defaults.insert(code, action);
            self.resolutions.decisions.retain(|d| d.code != code);
            self.toast = Some(format!("{action} for every {code}"));
        } else if let Some(&ci) = idx.get(self.conflicts.item) {
            self.resolutions.decide_item(code, &conflicts[ci].subject, action);
        }
        let item = self.conflicts.item;
        self.replan();
        // stay on this code while it has undecided items; else go to the next undecided code
        let groups = self.conflict_groups();
        let undecided = |idx: &Vec<usize>| {
            self.plan.as_ref().is_some_and(|p| idx.iter().any(|&i| p.conflicts[i].is_unresolved_blocking()))
        };
        match groups.iter().position(|(c, idx)| *c == code && undecided(idx)) {
            Some(pos) => {
                self.conflicts.group = pos;
                self.conflicts.item = item;
            }
            None => {
                self.conflicts.group = groups.iter().position(|(_, idx)| undecided(idx)).unwrap_or(0);
                self.conflicts.item = 0;
            }
        }
    }

    fn key_flavors(&mut self, key: KeyEvent) -> Vec<Effect> {
        match key.code {
            KeyCode::Char('n') | KeyCode::Enter => {
                self.confirm.reset();
                self.screen = Screen::Confirm;
            }
            KeyCode::Esc => self.screen = Screen::Conflicts,
            KeyCode::Char('A') if self.mode == Mode::Live => match &self.flavors {
                Some(Ok(v)) if v.applied.is_none() && !v.changes.is_empty() => return vec![Effect::ApplyFlavors],
                _ => self.toast = Some("nothing to apply".into()),
            },
            _ => {}
        }
        vec![]
    }

    fn key_confirm(&mut self, key: KeyEvent) -> Vec<Effect> {
        match key.code {
            KeyCode::Esc => {
                self.screen = if self.fields[F_NOVA].value().is_empty() { Screen::Conflicts } else { Screen::Flavors }
            }
            KeyCode::Enter => {
                let rehearse = self.mode != Mode::Live;
                if !rehearse && self.confirm.value().trim() != "migrate" {
                    self.toast = Some("type the word migrate to start the LIVE load".into());
                    return vec![];
                }
                self.progress = ProgressView { rehearse, ..Default::default() };
                // every node to write starts queued; the first batch is being written
                if let Some(plan) = &self.plan {
                    for (i, n) in plan.to_write().take(PROGRESS_KEEP).enumerate() {
                        let status = if i < crate::core::migrate::load_sql::BATCH { "writing" } else { "queued" };
                        self.progress.nodes.push_back(NodeProgress {
                            nova_bm_id: n.nova_bm_id,
                            uuid: n.uuid.clone().unwrap_or_default(),
                            status: status.into(),
                            failed: false,
                        });
                    }
                }
                self.screen = Screen::Progress;
                return vec![Effect::StartLoad { rehearse }];
            }
            _ => {
                self.confirm.handle_event(&ratatui::crossterm::event::Event::Key(key));
            }
        }
        vec![]
    }

    fn key_progress(&mut self, key: KeyEvent) -> Vec<Effect> {
        if self.progress.cancel_asked {
            self.progress.cancel_asked = false;
            if matches!(key.code, KeyCode::Char('y') | KeyCode::Char('Y')) {
                self.progress.cancelling = true;
                return vec![Effect::Cancel];
            }
            return vec![];
        }
        match key.code {
            KeyCode::Char('c') if self.work_running() => self.progress.cancel_asked = true,
            KeyCode::Char('L') => self.screen = Screen::Logs,
            KeyCode::Enter if self.progress.finished.is_some() => self.screen = Screen::Summary,
            _ => {}
        }
        vec![]
    }

    fn key_logs(&mut self, key: KeyEvent) -> Vec<Effect> {
        let n = self.logs.lines.len();
        match key.code {
            KeyCode::Esc => {
                self.screen = if self.progress.finished.is_some() || self.progress.total > 0 {
                    if self.work_running() {
                        Screen::Progress
                    } else {
                        Screen::Summary
                    }
                } else {
                    Screen::Inventory
                }
            }
            KeyCode::Char('f') => self.logs.follow = !self.logs.follow,
            KeyCode::Up | KeyCode::Char('k') => {
                if self.logs.follow {
                    self.logs.follow = false;
                    self.logs.scroll = n.saturating_sub(1);
                }
                self.logs.scroll = self.logs.scroll.saturating_sub(1);
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.logs.scroll = (self.logs.scroll + 1).min(n.saturating_sub(1));
            }
            KeyCode::Char('e') | KeyCode::Char('E') => {
                let from = if self.logs.follow { n } else { self.logs.scroll };
                let found = if key.code == KeyCode::Char('e') {
                    (from + 1..n)
                        .chain(0..from.min(n))
                        .find(|&i| self.logs.lines[i].level == Level::Error && self.logs.lines[i].starts_record)
                } else {
                    (0..from.min(n))
                        .rev()
                        .chain((from..n).rev())
                        .find(|&i| self.logs.lines[i].level == Level::Error && self.logs.lines[i].starts_record)
                };
                match found {
                    Some(i) => {
                        self.logs.follow = false;
                        self.logs.scroll = i;
                    }
                    None => self.toast = Some("no error lines".into()),
                }
            }
            _ => {}
        }
        vec![]
    }

    /// Summary counts of the plan for the confirm screen.
    pub fn plan_counts(&self) -> (usize, usize, usize, usize) {
        self.plan
            .as_ref()
            .map(|p| {
                (p.summary.create, p.summary.skip + p.summary.already_migrated, p.summary.maintenance, p.summary.ports)
            })
            .unwrap_or_default()
    }

    pub fn write_count(&self) -> usize {
        self.plan
            .as_ref()
            .map(|p| p.nodes.iter().filter(|n| matches!(n.action, NodeAction::Create | NodeAction::Replace)).count())
            .unwrap_or(0)
    }
}
