//! Step 1, connections and options: the databases (nova_bm, Ironic, Nova), the Ironic API, and the
//! plan options the target needs (deploy images, default cpu_arch, resource class), each checked as
//! typed and testable with ^T.

use ratatui::crossterm::event::{Event, KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;
use tui_input::backend::crossterm::EventHandler;
use tui_input::Input;

use super::{Ctx, Out, Page};
use crate::core::db::url::{redact_url, DbUrl};
use crate::core::ironic::target::TargetKind;
use crate::core::migrate::flavors::FlavorTarget;
use crate::core::migrate::plan::PlanOptions;
use crate::core::migrate::steps;
use crate::tui::app::Effect;
use crate::tui::chrome::spinner;
use crate::tui::jobs;
use crate::tui::keys::{code, Bar, Binding, Key};
use crate::tui::session::Mode;
use crate::tui::theme::Theme;

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
    /// the cloud names of clouds.yaml (^O on the Ironic API field picks one)
    pub clouds: Vec<String>,
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
            clouds: Vec::new(),
        }
    }
}

/// The form's fields, in screen order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    NovaBmDb,
    IronicDb,
    NovaDb,
    IronicApi,
    DeployKernel,
    DeployRamdisk,
    DefaultArch,
    ResourceClass,
}

impl Field {
    pub const ALL: [Field; 8] = [
        Field::NovaBmDb,
        Field::IronicDb,
        Field::NovaDb,
        Field::IronicApi,
        Field::DeployKernel,
        Field::DeployRamdisk,
        Field::DefaultArch,
        Field::ResourceClass,
    ];

    fn index(self) -> usize {
        Field::ALL.iter().position(|f| *f == self).unwrap_or(0)
    }
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

/// One input of the form.
#[derive(Debug, Clone)]
pub struct Entry {
    pub label: &'static str,
    pub input: Input,
    pub kind: FieldKind,
    pub required: bool,
    pub reveal: bool,
    pub status: FieldStatus,
}

impl Entry {
    fn new(label: &'static str, kind: FieldKind, required: bool, value: Option<String>) -> Entry {
        let mut f = Entry {
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
        self.status = if self.input.value().is_empty() {
            FieldStatus::Empty
        } else if v.is_empty() {
            // blanks are a mistake, never a value (an empty field is "not given")
            FieldStatus::Invalid("only blanks: clear the field or give a value".into())
        } else {
            match self.kind {
                FieldKind::Database => match DbUrl::parse(v) {
                    Ok(_) => FieldStatus::Untested,
                    Err(e) => FieldStatus::Invalid(e.reason),
                },
                FieldKind::Http if !(v.starts_with("http://") || v.starts_with("https://") || is_cloud_name(v)) => {
                    FieldStatus::Invalid("must start with http(s):// or a cloud".into())
                }
                _ => FieldStatus::Untested,
            }
        };
    }
}

/// A cloud of clouds.yaml rather than a URL (Keystone finds Ironic in the catalog).
pub fn is_cloud_name(v: &str) -> bool {
    // no dots: `ironic.example` is a host typed without its scheme, not a cloud
    !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric() || "-_".contains(c))
}

#[derive(Debug, Clone)]
pub struct Connections {
    entries: Vec<Entry>,
    pub focus: Field,
    /// the clouds of clouds.yaml, for ^O
    pub clouds: Vec<String>,
}

impl std::ops::Index<Field> for Connections {
    type Output = Entry;
    fn index(&self, f: Field) -> &Entry {
        &self.entries[f.index()]
    }
}

impl std::ops::IndexMut<Field> for Connections {
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
    bar: Bar::As("↑/↓ Tab", "field"),
};
static CONTINUE: Binding<Act> =
    Binding { keys: &[(code(KeyCode::Enter), Act::Continue)], label: "Enter", what: "continue", bar: Bar::Yes };
static TEST: Binding<Act> =
    Binding { keys: &[(Key::Ctrl('t'), Act::Test)], label: "^T", what: "test connection", bar: Bar::Yes };
static REVEAL: Binding<Act> =
    Binding { keys: &[(Key::Ctrl('r'), Act::Reveal)], label: "^R", what: "reveal password", bar: Bar::Yes };
static CLOUD: Binding<Act> = Binding {
    keys: &[(Key::Ctrl('o'), Act::Cloud)],
    label: "^O",
    what: "next cloud of clouds.yaml (Ironic API)",
    bar: Bar::No,
};
static TYPE: Binding<Act> = Binding { keys: &[], label: "type", what: "edit the field", bar: Bar::No };
static TABLE: [&Binding<Act>; 6] = [&FIELD, &CONTINUE, &TEST, &REVEAL, &CLOUD, &TYPE];

impl Connections {
    pub fn new(mode: Mode, prefill: Prefill, opts: &PlanOptions) -> Connections {
        let write = mode != Mode::ReadOnly;
        let entries = vec![
            Entry::new("nova_bm database", FieldKind::Database, true, prefill.nova_bm_db),
            Entry::new("Ironic database", FieldKind::Database, write, prefill.ironic_db),
            Entry::new("Nova database (optional)", FieldKind::Database, false, prefill.nova_db),
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
        Connections { entries, focus: Field::NovaBmDb, clouds: prefill.clouds }
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
            ironic_api: self.value(Field::IronicApi).into(),
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

    /// A connection test finished.
    pub fn tested(&mut self, field: Field, result: Result<String, String>) {
        self[field].status = match result {
            Ok(v) => FieldStatus::Ok(v),
            Err(e) => FieldStatus::Failed(e),
        };
    }

    pub fn render(&self, f: &mut Frame, area: Rect, theme: Theme, mode: Mode, tick: usize, busy: bool) {
        let block = Block::bordered().title(" Connections and options ");
        let inner = block.inner(area);
        f.render_widget(block, area);
        let label_w = 29u16;
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
            if focused && !busy {
                let cx = if entry.reveal || !entry.has_secret() {
                    entry.input.visual_cursor().saturating_sub(scroll)
                } else {
                    visible.chars().count()
                };
                f.set_cursor_position((inner.x + label_w + (cx as u16).min(value_w.saturating_sub(1)), y));
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
}

impl Page for Connections {
    type Act = Act;

    fn table(&self, _cx: &Ctx) -> Vec<&'static Binding<Act>> {
        TABLE.to_vec()
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
                if matches!(f.status, FieldStatus::Untested | FieldStatus::Ok(_) | FieldStatus::Failed(_))
                    && f.kind != FieldKind::Text
                {
                    f.status = FieldStatus::Testing;
                    return vec![Out::Effect(Effect::TestConnection { field })];
                }
            }
            Act::Continue => {
                let bad = Field::ALL.iter().zip(&self.entries).find_map(|(field, f)| match &f.status {
                    FieldStatus::Empty if f.required => Some((*field, "is required".to_string())),
                    FieldStatus::Invalid(e) => Some((*field, e.clone())),
                    _ => None,
                });
                if let Some((field, why)) = bad {
                    self.focus = field;
                    return vec![Out::Toast(format!("{}: {why}", self[field].label))];
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
        let focus = self.focus;
        let f = &mut self[focus];
        if f.input.handle_event(&Event::Key(key)).is_some() {
            f.validate();
        }
        vec![]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::keys::ch;
    use crate::tui::screens::fixture;

    fn screen() -> Connections {
        let prefill = Prefill {
            nova_bm_db: Some("mysql://nova:secret@db1/nova_bm".into()),
            ironic_db: Some("postgresql://ironic@db2/ironic".into()),
            ironic_url: Some("ironic.example".into()),
            deploy_kernel: Some("file:///k".into()),
            ..Default::default()
        };
        Connections::new(Mode::Live, prefill, &PlanOptions::default())
    }

    #[test]
    fn the_ironic_api_takes_a_cloud_of_clouds_yaml() {
        let s = fixture::session(Mode::Live);
        let cx = fixture::ctx(&s);
        let mut c = Connections::new(
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
        let mut none = Connections::new(Mode::Live, Prefill::default(), &PlanOptions::default());
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
        assert!(matches!(&out[..], [Out::Toast(t)] if t.starts_with("Ironic API (optional): must start")));
        c.on_key(code(KeyCode::Up).event(), &cx);
        assert_eq!(c.focus, Field::NovaDb);
        c.on_key(ch('x').event(), &cx);
        assert_eq!(c.value(Field::NovaDb), "x");
        assert!(matches!(c[Field::NovaDb].status, FieldStatus::Invalid(_)));
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
        c.tested(Field::IronicDb, Err("cannot reach db2".into()));
        let text = fixture::render(80, 20, |f| c.render(f, f.area(), Theme { color: false }, Mode::Live, 0, false));
        insta::assert_snapshot!(text);
    }

    #[test]
    fn blanks_are_invalid_not_a_value() {
        let mut c = Connections::new(Mode::Rehearsal, Prefill::default(), &PlanOptions::default());
        c.focus = Field::DeployKernel;
        c[Field::DeployKernel].input = "   ".into();
        c[Field::DeployKernel].validate();
        assert!(matches!(c[Field::DeployKernel].status, FieldStatus::Invalid(_)));
        assert_eq!(c.plan_options(&PlanOptions::default()).deploy_kernel, None);
    }
}
