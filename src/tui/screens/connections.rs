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
use crate::tui::chrome::spinner;
use crate::tui::field::{Entry, Field, FieldKind, FieldStatus};
use crate::tui::jobs;
use crate::tui::keys::{code, Bar, Binding, Key};
use crate::tui::msg::Effect;
use crate::tui::session::Mode;

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

impl Page for ConnectionsForm {
    type Act = Act;

    fn draw(&self, f: &mut Frame, area: Rect, cx: &DrawCtx) {
        let (theme, mode, tick) = (cx.theme, cx.session.mode, cx.tick);
        let block = Block::bordered().title(" Connections and options ");
        let inner = block.inner(area);
        f.render_widget(block, area);
        let label_w = 31u16;
        let mut y = inner.y;
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
            let scroll = if focused && entry.reveal { entry.input.visual_scroll(value_w as usize) } else { 0 };
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
            f.render_widget(
                Paragraph::new(Line::from(vec![Span::raw("  "), Span::styled(format!("{status}{reveal}"), st)])),
                Rect::new(inner.x + label_w, y + 1, value_w, 1),
            );
            y += 2;
        }
        if y < inner.y + inner.height {
            let hint = match mode {
                Mode::Live => "LIVE: the load writes into the Ironic database (you confirm first).",
                Mode::Rehearsal => "REHEARSAL: everything runs, then rolls back. Nothing stays.",
                Mode::ReadOnly => "READ-ONLY: only nova_bm is read.",
            };
            f.render_widget(
                Paragraph::new(Span::styled(hint, theme.dim())),
                Rect::new(inner.x + 2, inner.y + inner.height - 1, inner.width.saturating_sub(2), 1),
            );
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
mod tests {
    use super::*;
    use crate::tui::keys::ch;
    use crate::tui::screens::fixture;

    fn screen() -> ConnectionsForm {
        let prefill = Prefill {
            nova_bm_db: Some("mysql://nova:secret@db1/nova_bm".into()),
            ironic_db: Some("postgresql://ironic@db2/ironic".into()),
            ironic_url: Some("ironic.example".into()),
            deploy_kernel: Some("file:///k".into()),
            ..Default::default()
        };
        ConnectionsForm::new(Mode::Live, prefill, &PlanOptions::default())
    }

    #[test]
    fn the_ironic_api_takes_a_cloud_of_clouds_yaml() {
        let s = fixture::session(Mode::Live);
        let cx = fixture::ctx(&s);
        let mut c = ConnectionsForm::new(
            Mode::Live,
            Prefill { clouds: vec!["prod".into(), "lab-system".into()], ..Default::default() },
            &PlanOptions::default(),
        );
        c.on_key(Key::Ctrl('o').event(), &cx);
        assert_eq!((c.focus, c.value(Field::IronicApi)), (Field::IronicApi, "prod"));
        assert_eq!(c[Field::IronicApi].status, FieldStatus::Untested);
        c.on_key(Key::Ctrl('o').event(), &cx);
        assert_eq!(c.value(Field::IronicApi), "lab-system");
        c.on_key(Key::Ctrl('o').event(), &cx);
        assert_eq!(c.value(Field::IronicApi), "prod");
        assert_eq!(c.connections().ironic_api, "prod");
        assert!(c.connections().settings().unwrap().ironic_url.is_none(), "a cloud is no URL");
        let mut none = ConnectionsForm::new(Mode::Live, Prefill::default(), &PlanOptions::default());
        assert!(
            matches!(&none.on_key(Key::Ctrl('o').event(), &cx)[..], [Out::Toast(t)] if t.contains("no clouds.yaml"))
        );
    }

    #[test]
    fn fields_are_checked_as_typed_and_named() {
        let c = screen();
        assert_eq!(c[Field::NovaBmDb].status, FieldStatus::Untested);
        assert!(c[Field::NovaBmDb].has_secret());
        assert!(matches!(c[Field::IronicApi].status, FieldStatus::Invalid(_)));
        assert_eq!(c[Field::DeployRamdisk].status, FieldStatus::Empty);
        assert_eq!(c.plan_options(&PlanOptions::default()).deploy_kernel.as_deref(), Some("file:///k"));
    }

    #[test]
    fn enter_stops_at_the_first_bad_field_and_test_asks_for_a_job() {
        let s = fixture::session(Mode::Live);
        let cx = fixture::ctx(&s);
        let mut c = screen();
        let out = c.on_key(Key::Ctrl('t').event(), &cx);
        assert_eq!(out, vec![Out::Effect(Effect::TestConnection { field: Field::NovaBmDb })]);
        assert_eq!(c[Field::NovaBmDb].status, FieldStatus::Testing);
        let out = c.on_key(code(KeyCode::Enter).event(), &cx);
        assert_eq!(c.focus, Field::IronicApi);
        assert!(matches!(&out[..], [Out::Toast(t)] if t.starts_with("Ironic API: must start")));
        c.on_key(code(KeyCode::Up).event(), &cx);
        assert_eq!(c.focus, Field::NovaApiDb);
        c.on_key(ch('x').event(), &cx);
        assert_eq!(c.value(Field::NovaApiDb), "x");
        assert!(matches!(c[Field::NovaApiDb].status, FieldStatus::Invalid(_)));
        assert_eq!(c.flavors_db(), "x", "the flavors are in the Nova API database when it is given");
    }

    #[test]
    fn connections_are_tested_on_open_and_after_an_edit() {
        let s = fixture::session(Mode::Live);
        let cx = fixture::ctx(&s);
        let mut c = screen();
        // the well-formed connections, not the options nor the malformed API URL
        assert_eq!(c.test_all(), vec![Field::NovaBmDb, Field::IronicDb]);
        assert_eq!(c[Field::NovaBmDb].status, FieldStatus::Testing);
        assert!(c.due(1).is_empty(), "nothing edited");
        c.tested(Field::NovaBmDb, 0, Ok("MySQL 8 in 3 ms".into()));
        assert_eq!(c[Field::NovaBmDb].status, FieldStatus::Ok("MySQL 8 in 3 ms".into()));
        // an edit: tested again once the typing pauses; the older test's result is dropped
        c.tested(Field::IronicDb, 0, Err("refused".into()));
        c.focus = Field::IronicDb;
        c.on_key(ch('x').event(), &cx);
        assert_eq!(c[Field::IronicDb].status, FieldStatus::Untested);
        assert!(c.due(10).is_empty(), "the edit is seen");
        assert!(c.due(10 + RETEST_AFTER_TICKS - 1).is_empty(), "still typing");
        assert_eq!(c.due(10 + RETEST_AFTER_TICKS), vec![Field::IronicDb]);
        assert_eq!(c[Field::IronicDb].status, FieldStatus::Testing);
        c.tested(Field::IronicDb, 0, Ok("stale".into()));
        assert_eq!(c[Field::IronicDb].status, FieldStatus::Testing, "a result for the old value is dropped");
        c.tested(Field::IronicDb, 1, Err("unknown database ironicx".into()));
        // Enter stops at the failing connection and says why
        c.focus = Field::DeployKernel;
        c[Field::DeployRamdisk].input = "file:///r".into();
        c[Field::DeployRamdisk].validate();
        c[Field::IronicApi].input = "".into();
        c[Field::IronicApi].validate();
        let out = c.on_key(code(KeyCode::Enter).event(), &cx);
        assert_eq!(c.focus, Field::IronicDb);
        assert_eq!(out, vec![Out::Toast("Ironic database: connection failed: unknown database ironicx".into())]);
        // a connection still being tested does not hold Enter up
        c[Field::IronicDb].status = FieldStatus::Testing;
        let out = c.on_key(code(KeyCode::Enter).event(), &cx);
        assert!(matches!(&out[..], [Out::Busy(_), Out::Effect(Effect::Prepare)]), "{out:?}");
    }

    #[test]
    fn busy_takes_no_keys() {
        let s = fixture::session(Mode::Live);
        let mut cx = fixture::ctx(&s);
        cx.busy = true;
        let mut c = screen();
        assert!(c.on_key(code(KeyCode::Down).event(), &cx).is_empty());
        assert_eq!(c.focus, Field::NovaBmDb);
    }

    #[test]
    fn snapshot() {
        let mut c = screen();
        c.focus = Field::IronicApi;
        c.test_all();
        c.tested(Field::IronicDb, 0, Err("cannot reach db2".into()));
        let s = fixture::session(Mode::Live);
        let text = fixture::draw(80, 20, &c, &fixture::draw_ctx(&s));
        insta::assert_snapshot!(text);
    }

    #[test]
    fn blanks_are_invalid_not_a_value() {
        let mut c = ConnectionsForm::new(Mode::Rehearsal, Prefill::default(), &PlanOptions::default());
        c.focus = Field::DeployKernel;
        c[Field::DeployKernel].input = "   ".into();
        c[Field::DeployKernel].validate();
        assert!(matches!(c[Field::DeployKernel].status, FieldStatus::Invalid(_)));
        assert_eq!(c.plan_options(&PlanOptions::default()).deploy_kernel, None);
    }
}
