//! Step 1, connections and options: the databases (nova_bm, Ironic, Nova, Nova API), the Ironic API
//! and the plan options, checked as typed; each filled connection is tested in the background when
//! the screen opens and after an edit (^T: again); Enter stops at a failing database and says why.
//! The fields themselves ([`Field`], [`Entry`]) are in `tui/field.rs`.

use ratatui::crossterm::event::{Event, KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;
use tui_input::backend::crossterm::EventHandler;

use super::{Ctx, DrawCtx, Out, Page};
use tui_input::Input;

use crate::core::ironic::target::TargetKind;
use crate::core::migrate::flavors::FlavorTarget;
use crate::core::migrate::plan::PlanOptions;
use crate::core::migrate::steps;
use crate::tui::chrome::{spinner, wrap_words};
use crate::tui::field::{Entry, Field, FieldKind, FieldStatus};
use crate::tui::jobs;
use crate::tui::keys::{code, Bar, Binding, Key};
use crate::tui::msg::Effect;
use crate::tui::session::Mode;
use crate::tui::theme::Theme;

/// Prefilled values (from flags, environment, config files, or the demo).
#[derive(Debug, Clone, Default)]
pub struct Prefill {
    pub nova_bm_db: Option<String>,
    pub ironic_db: Option<String>,
    pub nova_db: Option<String>,
    pub nova_api_db: Option<String>,
    pub ironic_url: Option<String>,
    pub deploy_kernel: Option<String>,
    pub deploy_ramdisk: Option<String>,
    pub default_arch: Option<String>,
    pub resource_class: Option<String>,
    /// the cloud names of clouds.yaml (^O on the Ironic API field picks one)
    pub clouds: Vec<String>,
}

impl From<crate::core::demo::sandbox::SandboxPrefill> for Prefill {
    fn from(s: crate::core::demo::sandbox::SandboxPrefill) -> Prefill {
        Prefill {
            nova_bm_db: Some(s.nova_bm_db),
            ironic_db: Some(s.ironic_db),
            nova_db: Some(s.nova_db),
            nova_api_db: Some(s.nova_api_db),
            ironic_url: None,
            deploy_kernel: Some(s.deploy_kernel),
            deploy_ramdisk: Some(s.deploy_ramdisk),
            default_arch: Some(s.default_arch),
            resource_class: Some(s.resource_class),
            clouds: Vec::new(),
        }
    }
}

/// The connections screen's state: the form's fields and which has focus (the connection values
/// it hands to the jobs are `jobs::Connections`, see [`ConnectionsForm::connections`]).
#[derive(Debug, Clone)]
pub struct ConnectionsForm {
    entries: Vec<Entry>,
    pub focus: Field,
    /// the clouds of clouds.yaml, for ^O
    pub clouds: Vec<String>,
    /// keys type into the focused field (`?` and `q` too: a URL takes `?`); Esc leaves the field,
    /// then `?` is help and `q` quits as on every screen, and typing goes back into it
    pub editing: bool,
}

impl std::ops::Index<Field> for ConnectionsForm {
    type Output = Entry;
    fn index(&self, f: Field) -> &Entry {
        &self.entries[f.index()]
    }
}

impl std::ops::IndexMut<Field> for ConnectionsForm {
    fn index_mut(&mut self, f: Field) -> &mut Entry {
        &mut self.entries[f.index()]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    Prev,
    Next,
    Continue,
    Test,
    Reveal,
    /// the Ironic API field: the next cloud of clouds.yaml
    Cloud,
    /// Esc: out of the field (`?` help and `q` quit then act)
    Leave,
}

static FIELD: Binding<Act> = Binding {
    keys: &[
        (code(KeyCode::Up), Act::Prev),
        (code(KeyCode::BackTab), Act::Prev),
        (code(KeyCode::Down), Act::Next),
        (code(KeyCode::Tab), Act::Next),
    ],
    label: "↑/↓ Tab ⇧Tab",
    what: "field",
    bar: Bar::As("↑/↓", "field"),
};
static CONTINUE: Binding<Act> = Binding {
    keys: &[(code(KeyCode::Enter), Act::Continue)],
    label: "Enter",
    what: "next: read nova_bm",
    bar: Bar::As("Enter", "next"),
};
static TEST: Binding<Act> =
    Binding { keys: &[(Key::Ctrl('t'), Act::Test)], label: "^T", what: "test connection", bar: Bar::As("^T", "test") };
static REVEAL: Binding<Act> = Binding {
    keys: &[(Key::Ctrl('r'), Act::Reveal)],
    label: "^R",
    what: "reveal password",
    bar: Bar::As("^R", "reveal"),
};
static CLOUD: Binding<Act> = Binding {
    keys: &[(Key::Ctrl('o'), Act::Cloud)],
    label: "^O",
    what: "next cloud of clouds.yaml (Ironic API)",
    bar: Bar::No,
};
static TYPE: Binding<Act> = Binding { keys: &[], label: "type", what: "edit the field", bar: Bar::No };
static LEAVE: Binding<Act> = Binding {
    keys: &[(code(KeyCode::Esc), Act::Leave)],
    label: "Esc",
    what: "leave the field (then ? help, q quit)",
    bar: Bar::As("Esc", "leave field"),
};
static TYPE_BACK: Binding<Act> = Binding { keys: &[], label: "type", what: "back into the field", bar: Bar::No };
static EDITING: [&Binding<Act>; 7] = [&FIELD, &CONTINUE, &TEST, &REVEAL, &LEAVE, &CLOUD, &TYPE];
static LEFT: [&Binding<Act>; 6] = [&FIELD, &CONTINUE, &TEST, &REVEAL, &CLOUD, &TYPE_BACK];

/// An edited connection is tested again after this many quiet ticks (about half a second).
pub const RETEST_AFTER_TICKS: usize = 4;

impl ConnectionsForm {
    pub fn new(mode: Mode, prefill: Prefill, opts: &PlanOptions) -> ConnectionsForm {
        let write = mode != Mode::ReadOnly;
        let entries = vec![
            Entry::new("nova_bm database", FieldKind::Database, true, prefill.nova_bm_db),
            Entry::new("Ironic database", FieldKind::Database, write, prefill.ironic_db),
            Entry::new("Nova database (optional)", FieldKind::Database, false, prefill.nova_db),
            Entry::new("Nova API database (optional)", FieldKind::Database, false, prefill.nova_api_db),
            Entry::new("Ironic API (optional)", FieldKind::Http, false, prefill.ironic_url),
            Entry::new("Deploy kernel", FieldKind::Text, write, prefill.deploy_kernel.or(opts.deploy_kernel.clone())),
            Entry::new(
                "Deploy ramdisk",
                FieldKind::Text,
                write,
                prefill.deploy_ramdisk.or(opts.deploy_ramdisk.clone()),
            ),
            Entry::new("Default cpu_arch", FieldKind::Text, false, prefill.default_arch.or(opts.default_arch.clone())),
            Entry::new(
                "Resource class",
                FieldKind::Text,
                false,
                prefill.resource_class.or(opts.resource_class.clone()),
            ),
        ];
        ConnectionsForm { entries, focus: Field::NovaBmDb, clouds: prefill.clouds, editing: true }
    }

    pub fn value(&self, f: Field) -> &str {
        self[f].value()
    }

    /// The connection values, for the jobs.
    pub fn connections(&self) -> jobs::Connections {
        jobs::Connections {
            nova_bm_db: self.value(Field::NovaBmDb).into(),
            ironic_db: self.value(Field::IronicDb).into(),
            nova_db: self.value(Field::NovaDb).into(),
            nova_api_db: self.value(Field::NovaApiDb).into(),
            ironic_api: self.value(Field::IronicApi).into(),
            state_dir: None,
        }
    }

    /// The database the flavors step reads and changes: the Nova API database (modern Nova) when
    /// given, else the Nova database (Juno/Kilo keep the flavors there); empty when neither is.
    pub fn flavors_db(&self) -> &str {
        match self.value(Field::NovaApiDb) {
            "" => self.value(Field::NovaDb),
            api => api,
        }
    }

    /// The plan options: the command line's, with what the fields say.
    pub fn plan_options(&self, base: &PlanOptions) -> PlanOptions {
        let text = |f: Field| Some(self.value(f).trim().to_string()).filter(|v| !v.is_empty());
        PlanOptions {
            deploy_kernel: text(Field::DeployKernel),
            deploy_ramdisk: text(Field::DeployRamdisk),
            default_arch: text(Field::DefaultArch),
            resource_class: text(Field::ResourceClass),
            ..base.clone()
        }
    }

    /// What the flavors step aims at: Ironic's deploy images (Juno/Kilo Nova) or a resource class.
    pub fn flavor_target(&self, kind: TargetKind) -> Option<FlavorTarget> {
        let text = |f: Field| self.value(f);
        steps::flavor_target_for(
            kind,
            text(Field::DeployKernel),
            text(Field::DeployRamdisk),
            text(Field::ResourceClass),
        )
    }

    /// A connection test of the value of `generation` finished (a result for an edited value is dropped).
    pub fn tested(&mut self, field: Field, generation: u64, result: Result<String, String>) {
        let f = &mut self[field];
        if f.generation != generation || f.status != FieldStatus::Testing {
            return;
        }
        f.status = match result {
            Ok(v) => FieldStatus::Ok(v),
            Err(e) => FieldStatus::Failed(e),
        };
    }

    /// Reading and planning failed on what a database holds (it connected, so its test said `ok`):
    /// the field says the same as the bottom line, and Enter stops there until it is changed.
    pub fn prepare_failed(&mut self, why: &str) {
        let field = if why.contains("is not a nova_bm database") {
            Field::NovaBmDb
        } else if why.contains("is not an Ironic database") || why.contains("the Ironic schema") {
            Field::IronicDb
        } else {
            return;
        };
        self[field].status = FieldStatus::Failed(why.to_string());
    }

    /// The screen opens: every filled connection is tested (in the background).
    pub fn test_all(&mut self) -> Vec<Field> {
        let mut out = Vec::new();
        for (field, f) in Field::ALL.iter().zip(self.entries.iter_mut()) {
            if f.testable() {
                f.status = FieldStatus::Testing;
                f.pending = None;
                out.push(*field);
            }
        }
        out
    }

    /// A tick (`tick` counts them): the connections edited and left alone for a moment are tested again.
    pub fn due(&mut self, tick: usize) -> Vec<Field> {
        let mut out = Vec::new();
        for (field, f) in Field::ALL.iter().zip(self.entries.iter_mut()) {
            match f.pending {
                None => {}
                Some(None) => f.pending = Some(Some(tick)),
                Some(Some(seen)) if tick.wrapping_sub(seen) >= RETEST_AFTER_TICKS => {
                    f.pending = None;
                    if f.testable() {
                        f.status = FieldStatus::Testing;
                        out.push(*field);
                    }
                }
                Some(Some(_)) => {}
            }
        }
        out
    }
}

/// A field's status line: what its value is, or what its test said (whole: the drawing wraps it).
fn status_of(entry: &Entry, tick: usize, theme: Theme) -> (String, Style) {
    let (status, st) = match &entry.status {
        FieldStatus::Empty if entry.required => ("required".to_string(), theme.warn()),
        FieldStatus::Empty => ("".to_string(), Style::new()),
        FieldStatus::Invalid(e) => (format!("invalid: {e}"), theme.bad()),
        FieldStatus::Untested => {
            (if entry.kind == FieldKind::Text { "".into() } else { "not tested (^T)".into() }, theme.dim())
        }
        FieldStatus::Testing => (format!("{} testing…", spinner(tick)), theme.warn()),
        FieldStatus::Ok(v) => (format!("ok: {v}"), theme.good()),
        FieldStatus::Failed(e) => (format!("failed: {e}"), theme.bad()),
    };
    let reveal = if entry.has_secret() && entry.reveal { "  (password shown: ^R hides)" } else { "" };
    (crate::core::text::visible_line(&format!("{status}{reveal}")).into_owned(), st)
}

impl Page for ConnectionsForm {
    type Act = Act;

    fn draw(&self, f: &mut Frame, area: Rect, cx: &DrawCtx) {
        let (theme, mode, tick) = (cx.theme, cx.session.mode, cx.tick);
        // the mode's line in the border: it stays when the fields fill an 80x24 console
        let hint = match mode {
            Mode::Live => " LIVE: the load writes into the Ironic database (you confirm first) ",
            Mode::Rehearsal => " REHEARSAL: everything runs, then rolls back. Nothing stays. ",
            Mode::ReadOnly => " READ-ONLY: only nova_bm is read ",
        };
        let block = Block::bordered()
            .title(" Connections and options ")
            .title_bottom(Span::styled(hint, if mode == Mode::Live { theme.bad() } else { theme.warn() }));
        let inner = block.inner(area);
        f.render_widget(block, area);
        let label_w = 31u16;
        let mut y = inner.y;
        let mut whole = None;
        for (field, entry) in Field::ALL.iter().zip(&self.entries) {
            if y + 1 >= inner.y + inner.height {
                break;
            }
            let focused = *field == self.focus;
            let label = format!("{}{}", entry.label, if entry.required { " *" } else { "" });
            let marker = if focused { "> " } else { "  " };
            f.render_widget(
                Paragraph::new(Line::from(vec![
                    Span::styled(marker, theme.key()),
                    Span::styled(label, if focused { theme.key() } else { Style::new() }),
                ])),
                Rect::new(inner.x, y, label_w, 1),
            );
            let value_w = inner.width.saturating_sub(label_w + 1);
            let shown = entry.shown();
            // a long URL scrolls sideways with the cursor (a masked password's field only when shown)
            let scroll = if focused && (entry.reveal || !entry.has_secret()) {
                entry.input.visual_scroll(value_w as usize)
            } else {
                0
            };
            let visible: String = shown.chars().skip(scroll).take(value_w as usize).collect();
            let style = if focused { theme.selected() } else { Style::new() };
            f.render_widget(
                Paragraph::new(format!("{visible:<w$}", w = value_w as usize)).style(style),
                Rect::new(inner.x + label_w, y, value_w, 1),
            );
            if focused && !cx.busy {
                let col = if entry.reveal || !entry.has_secret() {
                    entry.input.visual_cursor().saturating_sub(scroll)
                } else {
                    visible.chars().count()
                };
                f.set_cursor_position((inner.x + label_w + (col as u16).min(value_w.saturating_sub(1)), y));
            }
            let (status, st) = status_of(entry, tick, theme);
            if focused && status.chars().count() + 2 > value_w as usize {
                whole = Some((status.clone(), st, y + 1));
            }
            // an unfocused field's status that does not fit says so (`…`); focused, it is shown whole below
            let line = crate::core::text::clipped(&status, value_w.saturating_sub(2) as usize).into_owned();
            f.render_widget(
                Paragraph::new(Line::from(vec![Span::raw("  "), Span::styled(line, st)])),
                Rect::new(inner.x + label_w, y + 1, value_w, 1),
            );
            y += 2;
        }
        // the focused field's status when it does not fit its line, whole, over the lines below
        if let Some((text, st, at)) = whole {
            let lines: Vec<Line> = wrap_words(&text, inner.width.saturating_sub(label_w + 3) as usize)
                .into_iter()
                .map(|l| Line::from(Span::styled(format!("  {l}"), st)))
                .collect();
            let h = (lines.len() as u16).min(inner.y + inner.height - at);
            let r = Rect::new(inner.x + label_w, at, inner.width.saturating_sub(label_w + 1), h);
            f.render_widget(ratatui::widgets::Clear, r);
            f.render_widget(Paragraph::new(lines), r);
        }
    }

    fn table(&self, _cx: &Ctx) -> Vec<&'static Binding<Act>> {
        if self.editing {
            EDITING.to_vec()
        } else {
            LEFT.to_vec()
        }
    }

    fn on_key(&mut self, key: KeyEvent, cx: &Ctx) -> Vec<Out> {
        if cx.busy {
            return vec![];
        }
        match crate::tui::keys::find(&self.table(cx), &key) {
            Some(a) => self.act(a, cx),
            None => self.other(key, cx),
        }
    }

    fn act(&mut self, act: Act, _cx: &Ctx) -> Vec<Out> {
        let i = self.focus.index();
        let n = Field::ALL.len();
        match act {
            Act::Leave => self.editing = false,
            Act::Prev => self.focus = Field::ALL[(i + n - 1) % n],
            Act::Next => self.focus = Field::ALL[(i + 1) % n],
            Act::Cloud => {
                if self.clouds.is_empty() {
                    return vec![Out::Toast(
                        "no clouds.yaml found (./, ~/.config/openstack/, /etc/openstack/, OS_CLIENT_CONFIG_FILE)"
                            .into(),
                    )];
                }
                let cur = self.value(Field::IronicApi).to_string();
                let next = match self.clouds.iter().position(|c| *c == cur) {
                    Some(k) => self.clouds[(k + 1) % self.clouds.len()].clone(),
                    None => self.clouds[0].clone(),
                };
                self.focus = Field::IronicApi;
                let f = &mut self[Field::IronicApi];
                f.input = Input::new(next);
                f.validate();
            }
            Act::Reveal => {
                let focus = self.focus;
                let f = &mut self[focus];
                f.reveal = !f.reveal;
            }
            Act::Test => {
                let field = self.focus;
                let f = &mut self[field];
                if f.testable() {
                    f.status = FieldStatus::Testing;
                    f.pending = None;
                    return vec![Out::Effect(Effect::TestConnection { field })];
                }
            }
            Act::Continue => {
                let bad = Field::ALL.iter().zip(&self.entries).find_map(|(field, f)| match &f.status {
                    FieldStatus::Empty if f.required => Some((*field, "is required".to_string())),
                    FieldStatus::Invalid(e) => Some((*field, e.clone())),
                    // the prepare would fail on it (the API is only used to verify, after the load)
                    FieldStatus::Failed(e) if f.kind == FieldKind::Database => Some((
                        *field,
                        if f.required {
                            format!("connection failed: {e}")
                        } else {
                            format!("connection failed: {e} (fix it, or clear the field to go on without it)")
                        },
                    )),
                    _ => None,
                });
                if let Some((field, why)) = bad {
                    self.focus = field;
                    return vec![Out::Toast(format!("{}: {why}", self[field].label.trim_end_matches(" (optional)")))];
                }
                return vec![
                    Out::Busy("reading nova_bm and the Ironic database, planning".into()),
                    Out::Effect(Effect::Prepare),
                ];
            }
        }
        vec![]
    }

    fn other(&mut self, key: KeyEvent, _cx: &Ctx) -> Vec<Out> {
        self.editing = true;
        let focus = self.focus;
        let f = &mut self[focus];
        if f.input.handle_event(&Event::Key(key)).is_some_and(|c| c.value) {
            f.validate();
            f.generation += 1;
            f.pending = f.is_connection().then_some(None);
        }
        vec![]
    }
}

#[cfg(test)]
#[path = "connections_tests.rs"]
mod tests;
