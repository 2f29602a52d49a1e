//! Drawing: `view(&App, &mut Frame)` only reads the state. A header (source -> target, mode, steps),
//! the focused screen, a key bar built from the screen's own key list, and overlays (help, quit).

use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Clear, Gauge, Paragraph, Row, Table, Wrap};
use ratatui::Frame;

use super::app::{App, FieldStatus, Level, Mode, Screen, SortKey};
use crate::core::db::url::redact_url;

pub const MIN_WIDTH: u16 = 80;
pub const MIN_HEIGHT: u16 = 24;

/// Colours, or none at all under NO_COLOR.
#[derive(Clone, Copy)]
pub struct Theme {
    pub color: bool,
}

impl Theme {
    pub fn from_env() -> Theme {
        Theme { color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) }
    }
    fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    }
    fn mode(&self, m: Mode) -> Style {
        let base = Style::new().add_modifier(Modifier::BOLD);
        if !self.color {
            return base.add_modifier(Modifier::REVERSED);
        }
        match m {
            Mode::Live => base.fg(Color::White).bg(Color::Red),
            Mode::Rehearsal => base.fg(Color::Black).bg(Color::Yellow),
            Mode::ReadOnly => base.fg(Color::Black).bg(Color::Cyan),
        }
    }
    fn selected(&self) -> Style {
        if self.color {
            Style::new().bg(Color::DarkGray).add_modifier(Modifier::BOLD)
        } else {
            Style::new().add_modifier(Modifier::REVERSED)
        }
    }
    fn dim(&self) -> Style {
        if self.color {
            Style::new().fg(Color::DarkGray)
        } else {
            Style::new().add_modifier(Modifier::DIM)
        }
    }
    fn bad(&self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }
    fn good(&self) -> Style {
        self.fg(Color::Green)
    }
    fn warn(&self) -> Style {
        self.fg(Color::Yellow)
    }
    fn key(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }
}

const SPINNER: [&str; 4] = ["|", "/", "-", "\\"];

pub fn view(app: &App, f: &mut Frame, theme: Theme) {
    let area = f.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let msg = Paragraph::new(vec![
            Line::from("terminal too small"),
            Line::from(format!("{}x{} here, bm2ironic needs {MIN_WIDTH}x{MIN_HEIGHT}", area.width, area.height)),
        ])
        .wrap(Wrap { trim: true });
        f.render_widget(msg, area);
        return;
    }
    let [header, body, toast, keybar] =
        Layout::vertical([Constraint::Length(2), Constraint::Min(10), Constraint::Length(1), Constraint::Length(1)])
            .areas(area);
    draw_header(app, f, header, theme);
    match app.screen {
        Screen::Credentials => draw_credentials(app, f, body, theme),
        Screen::Inventory => draw_inventory(app, f, body, theme),
        Screen::Conflicts => draw_conflicts(app, f, body, theme),
        Screen::Flavors => draw_flavors(app, f, body, theme),
        Screen::Confirm => draw_confirm(app, f, body, theme),
        Screen::Progress => draw_progress(app, f, body, theme),
        Screen::Logs => draw_logs(
            app,
            f,
            body,
            theme,
            &format!("Logs ({})", app.logs.files.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ")),
        ),
        Screen::Summary => draw_summary(app, f, body, theme),
    }
    if let Some(t) = &app.toast {
        f.render_widget(Paragraph::new(Line::from(Span::styled(format!(" {t}"), theme.warn()))), toast);
    } else if let Some(b) = &app.busy {
        f.render_widget(Paragraph::new(format!(" {} {b}…", SPINNER[app.spinner % 4])), toast);
    }
    draw_keybar(app, f, keybar, theme);
    if app.help {
        draw_help(app, f, area, theme);
    }
    if app.quit_asked {
        popup(
            f,
            area,
            theme,
            "Quit?",
            &[
                "A load is running. Quit cancels it: the",
                "transaction is rolled back, nothing stays.",
                "",
                "y: cancel and quit    any other key: stay",
            ],
        );
    }
    if app.progress.cancel_asked {
        popup(
            f,
            area,
            theme,
            "Cancel the load?",
            &[
                "The transaction is rolled back and the",
                "Ironic database stays as it was.",
                "",
                "y: cancel the load    n: keep going",
            ],
        );
    }
}

fn draw_header(app: &App, f: &mut Frame, area: Rect, theme: Theme) {
    let src = redact_url(app.fields[0].value());
    let tgt = if app.mode == Mode::ReadOnly { "(read only)".to_string() } else { redact_url(app.fields[1].value()) };
    let w = area.width as usize;
    let budget = w.saturating_sub(40) / 2;
    let line1 = Line::from(vec![
        Span::styled(format!(" {} ", app.mode.label()), theme.mode(app.mode)),
        Span::raw(" bm2ironic  "),
        Span::styled(endpoint_label(&src, budget), theme.fg(Color::Cyan)),
        Span::raw(" -> "),
        Span::styled(endpoint_label(&tgt, budget), theme.fg(Color::Magenta)),
    ]);
    let mut steps: Vec<Span> = vec![Span::raw(" ")];
    let shown: Vec<Screen> = if app.mode == Mode::ReadOnly { vec![Screen::Inventory] } else { Screen::STEPS.to_vec() };
    let narrow = area.width < 100;
    for (i, s) in shown.iter().enumerate() {
        let current = *s == app.screen || (app.screen == Screen::Logs && *s == Screen::Progress);
        let text = if narrow && !current { format!("{}", i + 1) } else { format!("{} {}", i + 1, s.title()) };
        steps.push(if current {
            Span::styled(format!("[{text}]"), theme.key())
        } else {
            Span::styled(format!(" {text} "), theme.dim())
        });
        if i + 1 < shown.len() {
            steps.push(Span::styled(" > ", theme.dim()));
        }
    }
    f.render_widget(Paragraph::new(vec![line1, Line::from(steps)]), area);
}

/// A database for the header: the (redacted) URL, or for a SQLite file too long to show, its name.
fn endpoint_label(url: &str, max: usize) -> String {
    if url.chars().count() <= max {
        return url.to_string();
    }
    if let Some(path) = url.strip_prefix("sqlite:") {
        let name = path.rsplit('/').next().unwrap_or(path);
        let label = format!("sqlite …/{name}");
        return if label.chars().count() <= max { label } else { shorten(name, max) };
    }
    shorten(url, max)
}

/// Keeps the start (titles): "nova_bm: 36 nodes ... …".
fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let head: String = s.chars().take(max.saturating_sub(1)).collect();
    format!("{head}…")
}

fn shorten(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max || max < 5 {
        return s.to_string();
    }
    let tail: String = s.chars().skip(n - (max - 1)).collect();
    format!("…{tail}")
}

/// The key bar: as many of the screen's keys as fit, `?` help always last.
fn draw_keybar(app: &App, f: &mut Frame, area: Rect, theme: Theme) {
    let keys = app.keys();
    let (help, rest): (Vec<_>, Vec<_>) = keys.into_iter().partition(|k| k.keys == "?");
    let help_w = help.first().map(|h| h.keys.len() + h.what.len() + 2).unwrap_or(0);
    let mut spans = vec![Span::raw(" ")];
    let mut used = 1;
    for kh in rest {
        let w = kh.keys.chars().count() + kh.what.chars().count() + 3;
        if used + w + help_w > area.width as usize {
            break;
        }
        used += w;
        spans.push(Span::styled(kh.keys, theme.key()));
        spans.push(Span::raw(format!(" {}  ", kh.what)));
    }
    for kh in help {
        spans.push(Span::styled(kh.keys, theme.key()));
        spans.push(Span::raw(format!(" {}", kh.what)));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_help(app: &App, f: &mut Frame, area: Rect, theme: Theme) {
    let mut lines =
        vec![Line::from(Span::styled(format!("{}: keys", app.screen.title()), theme.key())), Line::from("")];
    for kh in app.keys() {
        lines.push(Line::from(vec![Span::styled(format!("{:>12}  ", kh.keys), theme.key()), Span::raw(kh.what)]));
    }
    lines.push(Line::from(""));
    lines.push(Line::from(vec![
        Span::styled(format!("{:>12}  ", "^C ^Q"), theme.key()),
        Span::raw("quit (asks while a load runs)"),
    ]));
    lines.push(Line::from(Span::styled("any key closes this help", theme.dim())));
    let h = (lines.len() as u16 + 2).min(area.height);
    let r = centered(area, 56, h);
    f.render_widget(Clear, r);
    f.render_widget(Paragraph::new(lines).block(Block::bordered().title(" Help ")), r);
}

fn popup(f: &mut Frame, area: Rect, theme: Theme, title: &str, lines: &[&str]) {
    let r = centered(area, 50, lines.len() as u16 + 2);
    f.render_widget(Clear, r);
    let text: Vec<Line> = lines.iter().map(|l| Line::from(*l)).collect();
    f.render_widget(
        Paragraph::new(text).block(Block::bordered().title(Span::styled(format!(" {title} "), theme.bad()))),
        r,
    );
}

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let [r] = Layout::horizontal([Constraint::Length(w.min(area.width))]).flex(Flex::Center).areas(area);
    let [r] = Layout::vertical([Constraint::Length(h.min(area.height))]).flex(Flex::Center).areas(r);
    r
}

fn draw_credentials(app: &App, f: &mut Frame, area: Rect, theme: Theme) {
    let block = Block::bordered().title(" Connections and options ");
    let inner = block.inner(area);
    f.render_widget(block, area);
    let label_w = 29u16;
    let mut y = inner.y;
    for (i, field) in app.fields.iter().enumerate() {
        if y + 1 >= inner.y + inner.height {
            break;
        }
        let focused = i == app.field;
        let label = format!("{}{}", field.label, if field.required { " *" } else { "" });
        let marker = if focused { "> " } else { "  " };
        f.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled(marker, theme.key()),
                Span::styled(label, if focused { theme.key() } else { Style::new() }),
            ])),
            Rect::new(inner.x, y, label_w, 1),
        );
        let value_w = inner.width.saturating_sub(label_w + 1);
        let shown = field.shown();
        let scroll = if focused && field.reveal { field.input.visual_scroll(value_w as usize) } else { 0 };
        let visible: String = shown.chars().skip(scroll).take(value_w as usize).collect();
        let style = if focused { theme.selected() } else { Style::new() };
        f.render_widget(
            Paragraph::new(format!("{visible:<w$}", w = value_w as usize)).style(style),
            Rect::new(inner.x + label_w, y, value_w, 1),
        );
        if focused && app.busy.is_none() {
            let cx = if field.reveal || !field.has_secret() {
                field.input.visual_cursor().saturating_sub(scroll)
            } else {
                visible.chars().count()
            };
            f.set_cursor_position((inner.x + label_w + (cx as u16).min(value_w.saturating_sub(1)), y));
        }
        let (status, st) = match &field.status {
            FieldStatus::Empty if field.required => ("required".to_string(), theme.warn()),
            FieldStatus::Empty => ("".to_string(), Style::new()),
            FieldStatus::Invalid(e) => (format!("invalid: {e}"), theme.bad()),
            FieldStatus::Untested => (
                if field.kind == super::app::FieldKind::Text { "".into() } else { "not tested (^T)".into() },
                theme.dim(),
            ),
            FieldStatus::Testing => (format!("{} testing…", SPINNER[app.spinner % 4]), theme.warn()),
            FieldStatus::Ok(v) => (format!("ok: {v}"), theme.good()),
            FieldStatus::Failed(e) => (format!("failed: {e}"), theme.bad()),
        };
        let reveal = if field.has_secret() {
            if field.reveal {
                "  (password shown: ^R hides)"
            } else {
                ""
            }
        } else {
            ""
        };
        f.render_widget(
            Paragraph::new(Line::from(vec![Span::raw("  "), Span::styled(format!("{status}{reveal}"), st)])),
            Rect::new(inner.x + label_w, y + 1, value_w, 1),
        );
        y += 2;
    }
    if y < inner.y + inner.height {
        let hint = match app.mode {
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

fn dash(v: Option<&str>) -> String {
    v.unwrap_or("-").to_string()
}

fn short_uuid(v: Option<&str>) -> String {
    v.map(|u| u.chars().take(8).collect()).unwrap_or_else(|| "-".into())
}

fn draw_inventory(app: &App, f: &mut Frame, area: Rect, theme: Theme) {
    let Some(p) = &app.prepared else {
        f.render_widget(Paragraph::new("no inventory loaded").block(Block::bordered()), area);
        return;
    };
    let wide = area.width >= 110;
    let (table_area, detail_area) = if wide {
        let [a, b] = Layout::horizontal([Constraint::Percentage(58), Constraint::Percentage(42)]).areas(area);
        (a, b)
    } else {
        let [a, b] = Layout::vertical([Constraint::Min(6), Constraint::Length(9)]).areas(area);
        (a, b)
    };
    let s = &app.inv_summary;
    let states: Vec<String> = s.by_state.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let sort = match app.sort {
        SortKey::Id => "id",
        SortKey::Host => "host",
        SortKey::State => "state",
        SortKey::Conflicts => "conflicts",
    };
    let filter = if app.inv.filtering || !app.inv.filter.value().is_empty() {
        format!(" filter: {}{} ", app.inv.filter.value(), if app.inv.filtering { "▏" } else { "" })
    } else {
        String::new()
    };
    let title = format!(
        " nova_bm: {} nodes ({} live, {} deleted) | sort {sort}{} {filter}",
        s.nodes,
        s.live,
        s.soft_deleted,
        if app.inv.sort_desc { " desc" } else { "" }
    );
    let bottom = format!(" {} ", states.join(", "));
    let block = Block::bordered()
        .title(clip(&title, table_area.width as usize - 2))
        .title_bottom(clip(&bottom, table_area.width as usize - 2));
    let inner_h = block.inner(table_area).height.saturating_sub(1) as usize;
    // only the visible rows are built (smooth with 100,000 nodes)
    let sel = app.inv.selected;
    let offset = if sel >= inner_h { sel + 1 - inner_h } else { 0 };
    let rows: Vec<Row> = app
        .inv
        .rows
        .iter()
        .enumerate()
        .skip(offset)
        .take(inner_h)
        .map(|(i, &ni)| {
            let n = &p.inventory.nodes[ni];
            let b = &n.node;
            let (count, blocking) = app.node_marker(b.id);
            let marker = if blocking {
                Span::styled("!", theme.bad())
            } else if count > 0 {
                Span::styled("~", theme.warn())
            } else {
                Span::raw(" ")
            };
            let state = if b.deleted { "(deleted)".to_string() } else { dash(b.task_state.as_deref()) };
            let style = if i == sel {
                theme.selected()
            } else if b.deleted {
                theme.dim()
            } else {
                Style::new()
            };
            let mut cells = vec![
                Cell::from(marker),
                Cell::from(b.id.to_string()),
                Cell::from(short_uuid(b.uuid.as_deref())),
                Cell::from(dash(b.service_host.as_deref())),
                Cell::from(state),
                Cell::from(short_uuid(b.instance_uuid.as_deref())),
            ];
            if !wide || table_area.width > 100 {
                cells.push(Cell::from(format!(
                    "{}/{}/{}",
                    b.cpus.map(|v| v.to_string()).unwrap_or("-".into()),
                    b.memory_mb.map(|v| (v / 1024).to_string()).unwrap_or("-".into()),
                    b.local_gb.map(|v| v.to_string()).unwrap_or("-".into())
                )));
            }
            cells.push(Cell::from(dash(b.pm_address.as_deref())));
            cells.push(Cell::from(n.interfaces.len().to_string()));
            Row::new(cells).style(style)
        })
        .collect();
    let mut widths = vec![
        Constraint::Length(1),
        Constraint::Length(5),
        Constraint::Length(8),
        Constraint::Length(13),
        Constraint::Length(13),
        Constraint::Length(8),
    ];
    let mut header = vec!["", "ID", "UUID", "HOST", "STATE", "INSTANCE"];
    if !wide || table_area.width > 100 {
        widths.push(Constraint::Length(11));
        header.push("CPU/GB/DISK");
    }
    widths.extend([Constraint::Min(9), Constraint::Length(4)]);
    header.extend(["BMC", "MACS"]);
    let table = Table::new(rows, widths).header(Row::new(header).style(theme.key())).block(block).column_spacing(1);
    f.render_widget(table, table_area);
    draw_node_detail(app, f, detail_area, theme);
}

fn draw_node_detail(app: &App, f: &mut Frame, area: Rect, theme: Theme) {
    let Some(p) = &app.prepared else { return };
    let Some(&ni) = app.inv.rows.get(app.inv.selected) else {
        f.render_widget(Paragraph::new("no node matches").block(Block::bordered().title(" Node ")), area);
        return;
    };
    let n = &p.inventory.nodes[ni];
    let b = &n.node;
    let plan_node = app.plan.as_ref().and_then(|pl| pl.nodes.iter().find(|x| x.nova_bm_id == b.id));
    let target = plan_node.and_then(|x| x.node.as_ref());
    let action = plan_node
        .map(|x| serde_json::to_value(x.action).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default())
        .unwrap_or_else(|| "-".into());
    let mut lines: Vec<Line> = Vec::new();
    let row = |k: &str, src: String, dst: String| {
        Line::from(vec![
            Span::styled(format!("{k:<11}"), theme.dim()),
            Span::raw(format!("{src:<18} ")),
            Span::styled(dst, theme.fg(Color::Magenta)),
        ])
    };
    lines.push(Line::from(vec![
        Span::styled(format!("{:<11}{:<18} ", "", "nova_bm"), theme.key()),
        Span::styled("Ironic", theme.key()),
    ]));
    lines.push(row("action", String::new(), action));
    lines.push(row(
        "uuid",
        short_uuid(b.uuid.as_deref()),
        target.map(|t| short_uuid(Some(&t.uuid))).unwrap_or("-".into()),
    ));
    lines.push(row(
        "state",
        dash(b.task_state.as_deref()),
        target.map(|t| t.provision_state.clone().unwrap_or("(none)".into())).unwrap_or("-".into()),
    ));
    lines.push(row(
        "instance",
        short_uuid(b.instance_uuid.as_deref()),
        target.map(|t| short_uuid(t.instance_uuid.as_deref())).unwrap_or("-".into()),
    ));
    lines.push(row("power", "(not stored)".into(), target.map(|_| "read from BMC".to_string()).unwrap_or("-".into())));
    lines.push(row("driver", String::new(), target.map(|t| t.driver.clone()).unwrap_or("-".into())));
    lines.push(row(
        "bmc",
        format!("{}@{}", dash(b.pm_user.as_deref()), dash(b.pm_address.as_deref())),
        target
            .and_then(|t| t.driver_info.get("ipmi_address").map(|v| v.as_str().unwrap_or("").to_string()))
            .unwrap_or("-".into()),
    ));
    lines.push(row(
        "password",
        if b.pm_password.is_some() { "***".into() } else { "-".into() },
        target
            .map(|t| if t.driver_info.has_secret("ipmi_password") { "***".to_string() } else { "-".to_string() })
            .unwrap_or("-".into()),
    ));
    lines.push(row(
        "properties",
        format!("{}c {}MB {}GB", b.cpus.unwrap_or(0), b.memory_mb.unwrap_or(0), b.local_gb.unwrap_or(0)),
        target
            .map(|t| t.properties.get("cpu_arch").and_then(|v| v.as_str()).unwrap_or("no arch").to_string())
            .unwrap_or("-".into()),
    ));
    if let Some(t) = target.filter(|t| t.maintenance) {
        lines.push(Line::from(Span::styled(
            format!("maintenance: {}", t.maintenance_reason.clone().unwrap_or_default()),
            theme.warn(),
        )));
    }
    for i in &n.interfaces {
        let dst = plan_node
            .and_then(|x| x.ports.iter().find(|p| p.nova_bm_interface_id == i.id))
            .map(|p| p.address.clone())
            .unwrap_or("(not migrated)".into());
        lines.push(row("mac", dash(i.address.as_deref()), dst));
    }
    if let Some(pn) = plan_node {
        for c in &pn.conflicts {
            lines.push(Line::from(Span::styled(format!("! {c}"), theme.bad())));
        }
    }
    f.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(format!(" Node {} ", b.id))).wrap(Wrap { trim: false }),
        area,
    );
}

fn draw_conflicts(app: &App, f: &mut Frame, area: Rect, theme: Theme) {
    let Some(plan) = &app.plan else { return };
    let groups = app.conflict_groups();
    let [left, right] = Layout::horizontal([Constraint::Length(34), Constraint::Min(40)]).areas(area);
    let blocking = plan.blocking();
    let title = if blocking > 0 { format!(" {blocking} blocking left ") } else { " all decided ".to_string() };
    let items: Vec<Line> = groups
        .iter()
        .enumerate()
        .map(|(i, (code, idx))| {
            let open = idx.iter().filter(|&&c| plan.conflicts[c].is_unresolved_blocking()).count();
            let mark = if open > 0 {
                Span::styled(format!("{open:>3} "), theme.bad())
            } else {
                Span::styled("  ✓ ", theme.good())
            };
            let style = if i == app.conflicts.group && !app.conflicts.focus_items {
                theme.selected()
            } else if i == app.conflicts.group {
                theme.key()
            } else {
                Style::new()
            };
            Line::from(vec![mark, Span::styled(format!("{:<24}{:>3}", code.as_str(), idx.len()), style)])
        })
        .collect();
    f.render_widget(
        Paragraph::new(items)
            .block(Block::bordered().title(Span::styled(title, if blocking > 0 { theme.bad() } else { theme.good() }))),
        left,
    );

    let Some((code, idx)) = groups.get(app.conflicts.group) else {
        f.render_widget(Paragraph::new("No conflicts: every node can go as planned.").block(Block::bordered()), right);
        return;
    };
    let mut lines = vec![Line::from(vec![
        Span::styled(code.as_str(), theme.key()),
        Span::raw(if code.blocking() { "  (blocking)" } else { "  (not blocking)" }),
    ])];
    let actions: Vec<Span> = if code.actions().is_empty() {
        vec![Span::styled("no action: fix the cause (see the detail)", theme.warn())]
    } else {
        code.actions()
            .iter()
            .enumerate()
            .flat_map(|(i, a)| vec![Span::styled(format!("{}", i + 1), theme.key()), Span::raw(format!(" {a}   "))])
            .collect()
    };
    let mut l = vec![Span::raw("actions: ")];
    l.extend(actions);
    if app.conflicts.apply_all {
        l.push(Span::styled("[applies to ALL]", theme.bad()));
    }
    lines.push(Line::from(l));
    lines.push(Line::from(""));
    let visible = right.height.saturating_sub(6) as usize / 2;
    let off = app.conflicts.item.saturating_sub(visible.saturating_sub(1));
    for (j, &ci) in idx.iter().enumerate().skip(off).take(visible.max(1)) {
        let c = &plan.conflicts[ci];
        let who = match &c.subject {
            crate::core::migrate::conflict::Subject::Node { nova_bm_id } => format!("node {nova_bm_id}"),
            crate::core::migrate::conflict::Subject::Interface { nova_bm_id, interface_id } => {
                format!("node {nova_bm_id} if {interface_id}")
            }
            crate::core::migrate::conflict::Subject::Host { host } => host.clone(),
            crate::core::migrate::conflict::Subject::Run => "the run".into(),
        };
        let decision = match (c.action, c.decided_by) {
            (Some(a), Some(by)) => Span::styled(format!("{a} ({by})"), theme.good()),
            _ => Span::styled("UNDECIDED", theme.bad()),
        };
        let style = if j == app.conflicts.item && app.conflicts.focus_items { theme.selected() } else { Style::new() };
        lines.push(Line::from(vec![Span::styled(format!("{who:<16}"), style), Span::raw(" -> "), decision]));
        lines.push(Line::from(Span::styled(format!("   {}", c.detail), theme.dim())));
    }
    f.render_widget(
        Paragraph::new(lines)
            .block(Block::bordered().title(format!(" {} of {} ", app.conflicts.item + 1, idx.len())))
            .wrap(Wrap { trim: false }),
        right,
    );
}

fn draw_flavors(app: &App, f: &mut Frame, area: Rect, theme: Theme) {
    let mut lines = vec![Line::from("")];
    match &app.flavors {
        None => lines.push(Line::from(format!("  {} reading the Nova flavors…", SPINNER[app.spinner % 4]))),
        Some(Err(e)) => {
            lines.push(Line::from(Span::styled(format!("  Cannot plan the flavor change: {e}"), theme.warn())));
            lines.push(Line::from("  Continue with n; do it later with `bm2ironic flavors`."));
        }
        Some(Ok(v)) => {
            lines.push(Line::from(format!("  {}", v.what)));
            lines.push(Line::from(""));
            if v.changes.is_empty() {
                lines.push(Line::from(Span::styled("  The baremetal flavors need no change.", theme.good())));
            } else {
                let new_w = (area.width as usize).saturating_sub(2 + 2 + 14 + 1 + 30 + 1 + 16 + 1).max(8);
                lines.push(Line::from(Span::styled(
                    format!("  {:<14} {:<30} {:<16} {}", "FLAVOR", "KEY", "OLD", "NEW"),
                    theme.key(),
                )));
                for c in &v.changes {
                    lines.push(Line::from(format!(
                        "  {:<14} {:<30} {:<16} {}",
                        clip(&c.flavor, 14),
                        clip(&c.key, 30),
                        clip(c.old.as_deref().unwrap_or("(added)"), 16),
                        clip(&c.new, new_w)
                    )));
                }
            }
            lines.push(Line::from(""));
            let status = match (&v.applied, app.mode) {
                (Some(set), _) => Span::styled(
                    format!("  Applied as change set {set} (undo: bm2ironic flavors --restore)."),
                    theme.good(),
                ),
                (None, Mode::Live) if !v.changes.is_empty() => Span::styled(
                    "  A applies this to the Nova DB in one transaction (before the load); n goes on without it.",
                    theme.warn(),
                ),
                (None, Mode::Live) => Span::raw(""),
                (None, _) => Span::styled("  REHEARSAL: shown only, nothing is changed in Nova.", theme.warn()),
            };
            lines.push(Line::from(status));
        }
    }
    f.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" Flavors (Nova) ")).wrap(Wrap { trim: false }),
        area,
    );
}

fn draw_confirm(app: &App, f: &mut Frame, area: Rect, theme: Theme) {
    let (create, skip, maint, ports) = app.plan_counts();
    let kind = app
        .prepared
        .as_ref()
        .map(|p| format!("{:?} Ironic (schema {})", p.target.schema.kind, p.target.schema.schema))
        .unwrap_or_default();
    let mut lines = vec![
        Line::from(""),
        Line::from(vec![
            Span::raw("  Target        "),
            Span::styled(redact_url(app.fields[1].value()), theme.fg(Color::Magenta)),
        ]),
        Line::from(format!("  Schema        {kind}")),
        Line::from("  Load path     SQL, one transaction (all or nothing)"),
        Line::from(""),
        Line::from(format!("  Create        {create} nodes, {ports} ports")),
        Line::from(format!("  Skip          {skip} nodes")),
        Line::from(format!("  Maintenance   {maint} nodes (held, with a reason)")),
        Line::from(""),
    ];
    for w in app.plan.as_ref().map(|p| p.warnings.clone()).unwrap_or_default() {
        lines.push(Line::from(Span::styled(format!("  warning: {w}"), theme.warn())));
    }
    lines.push(Line::from(""));
    match app.mode {
        Mode::Live => {
            lines.push(Line::from(Span::styled("  LIVE: this writes into the Ironic database.", theme.bad())));
            lines.push(Line::from(vec![
                Span::raw("  Type "),
                Span::styled("migrate", theme.key()),
                Span::raw(" and press Enter: "),
                Span::styled(app.confirm.value().to_string(), theme.selected()),
            ]));
        }
        _ => {
            lines.push(Line::from(Span::styled(
                "  REHEARSAL: everything is written, then rolled back. Nothing will stay.",
                theme.warn(),
            )));
            lines.push(Line::from("  Press Enter to start the rehearsal."));
        }
    }
    f.render_widget(Paragraph::new(lines).block(Block::bordered().title(" Ready ")).wrap(Wrap { trim: false }), area);
}

fn draw_progress(app: &App, f: &mut Frame, area: Rect, theme: Theme) {
    let (main, logs) = if area.width >= 110 {
        let [a, b] = Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(area);
        (a, Some(b))
    } else {
        (area, None)
    };
    let p = &app.progress;
    let [gauge, stats, list] =
        Layout::vertical([Constraint::Length(3), Constraint::Length(3), Constraint::Min(3)]).areas(main);
    let ratio = if p.total == 0 {
        if p.finished.is_some() {
            1.0
        } else {
            0.0
        }
    } else {
        p.done as f64 / p.total as f64
    };
    let label = format!("{}/{} nodes", p.done, p.total);
    f.render_widget(
        Gauge::default()
            .block(Block::bordered().title(format!(
                " {} run {} ",
                if p.rehearse { "Rehearsal" } else { "Live" },
                short_uuid(Some(&p.run_id))
            )))
            .gauge_style(theme.good())
            .ratio(ratio.clamp(0.0, 1.0))
            .label(label),
        gauge,
    );
    let secs = p.elapsed.as_secs_f64();
    let rate = if secs > 0.0 { p.done as f64 / secs } else { 0.0 };
    let eta =
        if rate > 0.0 && p.total > p.done { format!("{:.0}s", (p.total - p.done) as f64 / rate) } else { "-".into() };
    let state = match &p.finished {
        None if p.cancelling => Span::styled("cancelling: rolling back…", theme.warn()),
        None => Span::styled(format!("{} writing", SPINNER[app.spinner % 4]), theme.warn()),
        Some(Ok(s)) if s.committed => Span::styled("committed (Enter: summary)", theme.good()),
        Some(Ok(s)) if s.rehearse => Span::styled("rehearsal done, rolled back (Enter: summary)", theme.good()),
        Some(Ok(_)) => Span::styled("nothing to write (Enter: summary)", theme.good()),
        Some(Err(e)) => Span::styled(format!("FAILED, rolled back: {e}"), theme.bad()),
    };
    f.render_widget(
        Paragraph::new(vec![
            Line::from(format!(" {rate:.0} nodes/s   elapsed {secs:.3}s   ETA {eta}")),
            Line::from(vec![Span::raw(" "), state]),
        ])
        .block(Block::new().borders(Borders::LEFT | Borders::RIGHT | Borders::BOTTOM)),
        stats,
    );
    let h = list.height.saturating_sub(2) as usize;
    // in plan order, the window kept on the work in progress (or on the end once finished)
    let first_open = p.nodes.iter().position(|n| n.status == "writing" || n.status == "queued");
    let start = match first_open {
        Some(i) => i.saturating_sub(h / 3),
        None => p.nodes.len().saturating_sub(h),
    };
    let lines: Vec<Line> = p
        .nodes
        .iter()
        .skip(start)
        .take(h)
        .map(|n| {
            let st = if n.failed {
                theme.bad()
            } else if n.status.starts_with("done") {
                theme.good()
            } else if n.status == "writing" {
                theme.warn()
            } else {
                theme.dim()
            };
            Line::from(vec![
                Span::raw(format!(" {:>5} {} ", n.nova_bm_id, short_uuid(Some(&n.uuid)))),
                Span::styled(n.status.clone(), st),
            ])
        })
        .collect();
    f.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(format!(" Nodes: {} to write ", p.total))),
        list,
    );
    if let Some(l) = logs {
        draw_logs(app, f, l, theme, "Takeover watch");
    }
}

fn draw_logs(app: &App, f: &mut Frame, area: Rect, theme: Theme, title: &str) {
    let h = area.height.saturating_sub(2) as usize;
    let w = (area.width as usize).saturating_sub(2).max(10);
    let n = app.logs.lines.len();
    let errors = app.logs.lines.iter().filter(|l| l.level == Level::Error && l.starts_record).count();
    let style = |l: &crate::core::logs::follow::LogLine| match l.level {
        Level::Error => theme.bad(),
        Level::Warning => theme.warn(),
        Level::Info => Style::new(),
        Level::Debug => theme.dim(),
    };
    // long lines wrap (nothing is cut off); the window is counted in screen rows
    let rows_of = |l: &crate::core::logs::follow::LogLine| -> Vec<Line> {
        let text: Vec<char> = l.compact().chars().collect();
        let tag = format!("{:<7}", l.source.chars().take(6).collect::<String>());
        let first = w.saturating_sub(7).max(1);
        let mut out = vec![Line::from(vec![
            Span::styled(tag, theme.dim()),
            Span::styled(text.iter().take(first).collect::<String>(), style(l)),
        ])];
        let mut rest = &text[text.len().min(first)..];
        while !rest.is_empty() {
            let take = rest.len().min(w.saturating_sub(7).max(1));
            out.push(Line::from(vec![
                Span::raw("       "),
                Span::styled(rest[..take].iter().collect::<String>(), style(l)),
            ]));
            rest = &rest[take..];
        }
        out
    };
    let mut lines: Vec<Line> = Vec::new();
    if app.logs.follow {
        for l in app.logs.lines.iter().rev() {
            let mut r = rows_of(l);
            if lines.len() + r.len() > h {
                break;
            }
            r.extend(lines);
            lines = r;
        }
    } else {
        for l in app.logs.lines.iter().skip(app.logs.scroll.min(n.saturating_sub(1))) {
            lines.extend(rows_of(l));
            if lines.len() >= h {
                lines.truncate(h);
                break;
            }
        }
    }
    let title = format!(" {title}: {errors} error(s), {} ", if app.logs.follow { "following" } else { "paused" });
    let body =
        if lines.is_empty() { vec![Line::from(Span::styled("waiting for log lines…", theme.dim()))] } else { lines };
    f.render_widget(Paragraph::new(body).block(Block::bordered().title(clip(&title, area.width as usize - 2))), area);
}

fn draw_summary(app: &App, f: &mut Frame, area: Rect, theme: Theme) {
    let p = &app.progress;
    let mut lines = vec![Line::from("")];
    match &p.finished {
        Some(Ok(s)) => {
            lines.push(Line::from(Span::styled(
                "    read  created  skipped  already  maintenance  ports  errors     time",
                theme.key(),
            )));
            lines.push(Line::from(format!(
                "  {:>6}  {:>7}  {:>7}  {:>7}  {:>11}  {:>5}  {:>6}  {:>7.2}s",
                s.read,
                s.created,
                s.skipped,
                s.already_migrated,
                s.maintenance,
                s.ports,
                s.errors,
                s.elapsed_ms as f64 / 1000.0
            )));
            lines.push(Line::from(""));
            if s.rehearse {
                lines.push(Line::from(Span::styled(
                    "  REHEARSAL: everything was written and rolled back. Nothing stayed.",
                    theme.warn(),
                )));
            } else if s.committed {
                lines.push(Line::from(Span::styled(
                    format!(
                        "  Committed run {} (plan checksum {})",
                        s.run_id,
                        s.plan_checksum.chars().take(12).collect::<String>()
                    ),
                    theme.good(),
                )));
            }
        }
        Some(Err(e)) => {
            lines.push(Line::from(Span::styled(format!("  The load failed and was rolled back: {e}"), theme.bad())))
        }
        None => lines.push(Line::from("  (no load ran)")),
    }
    match &app.verify {
        Some(Ok(v)) => lines.push(Line::from(Span::styled(format!("  verify: {v}"), theme.good()))),
        Some(Err(e)) => lines.push(Line::from(Span::styled(format!("  verify: {e}"), theme.bad()))),
        None => {}
    }
    lines.push(Line::from(""));
    if let Some(a) = &app.audit_log {
        lines.push(Line::from(format!("  Audit log      {a}")));
    }
    if let Some(r) = &app.saved_to {
        lines.push(Line::from(format!("  Decisions      {r}")));
        lines.push(Line::from(Span::styled(
            "                 replay them with: bm2ironic migrate --resolutions FILE",
            theme.dim(),
        )));
    }
    let errors = app.logs.lines.iter().filter(|l| l.level == Level::Error && l.starts_record).count();
    lines.push(Line::from(vec![
        Span::raw("  Takeover log   "),
        if errors > 0 {
            Span::styled(format!("{errors} error line(s): press L"), theme.bad())
        } else {
            Span::styled("no errors seen", theme.good())
        },
    ]));
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled("  Next steps", theme.key())));
    for s in [
        "1. Start Ironic; watch the takeover (L here, or bm2ironic watch).",
        "2. nova-scheduler: Ironic host manager, exact-match filters; restart.",
        "3. nova-compute: Ironic driver (ClusteredComputeManager); restart.",
        "4. Watch nova-compute's log: every node's resources reported.",
        "5. bm2ironic verify --ironic-url URL; undo: bm2ironic rollback.",
    ] {
        lines.push(Line::from(format!("  {s}")));
    }
    f.render_widget(Paragraph::new(lines).block(Block::bordered().title(" Summary ")).wrap(Wrap { trim: false }), area);
}
