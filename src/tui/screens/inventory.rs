//! Step 2, the inventory: every nova_bm node (filtered, sorted; only the visible rows are built, so
//! 100,000 nodes stay smooth) and, beside it, the selected node as nova_bm has it and as Ironic will.

use ratatui::crossterm::event::{Event, KeyCode, KeyEvent};
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Bar as ChartBar, BarChart, BarGroup, Block, Cell, Paragraph, Row, Table, Wrap};
use ratatui::Frame;
use tui_input::backend::crossterm::EventHandler;
use tui_input::Input;

use super::{Ctx, DrawCtx, Out, Page, Screen};
use crate::core::bmc::BmcFacts;
use crate::core::source::model::{InventoryNode, InventorySummary};
use crate::tui::chrome::{clip, dash, read_cell, short_uuid};
use crate::tui::keys::{ch, code, Bar, Binding};
use crate::tui::msg::Effect;
use crate::tui::session::{Mode, Session};
use crate::tui::theme::Theme;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Id,
    Host,
    State,
    Conflicts,
}

#[derive(Debug, Clone)]
pub struct InventoryScreen {
    pub selected: usize,
    pub filter: Input,
    pub filtering: bool,
    pub sort: SortKey,
    pub sort_desc: bool,
    /// indices into `inventory.nodes`, filtered and sorted
    pub rows: Vec<usize>,
    /// Tab: the node's detail has the focus (↑/↓ scroll it; at 80 columns it takes more room)
    pub detail_focus: bool,
    /// the detail's first line shown
    pub detail_scroll: u16,
    /// the furthest the detail scrolls at the last drawing's size
    detail_max: std::cell::Cell<u16>,
}

impl Default for InventoryScreen {
    fn default() -> Self {
        InventoryScreen {
            selected: 0,
            filter: Input::default(),
            filtering: false,
            sort: SortKey::Id,
            sort_desc: false,
            rows: Vec::new(),
            detail_focus: false,
            detail_scroll: 0,
            detail_max: Default::default(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    Down,
    Up,
    PageDown,
    PageUp,
    First,
    Last,
    Filter,
    Sort,
    Reverse,
    Conflicts,
    Back,
    KeepFilter,
    ClearFilter,
    Focus,
    DetailDown,
    DetailUp,
    CheckBmc,
}

const PAGE: usize = 10;

/// The table's optional columns: CPU/GB/DISK (room for it), READ (the BMC check's, once it ran).
/// The table's optional columns: the sizes, the whole uuid (wide terminals), the BMC check's READ.
type Columns<'a> = (bool, bool, Option<&'a BmcFacts>);

static MOVE: Binding<Act> = Binding {
    keys: &[(code(KeyCode::Up), Act::Up), (code(KeyCode::Down), Act::Down), (ch('j'), Act::Down), (ch('k'), Act::Up)],
    label: "↑/↓ j/k",
    what: "move",
    bar: Bar::Yes,
};
static PAGE_KEYS: Binding<Act> = Binding {
    keys: &[(code(KeyCode::PageUp), Act::PageUp), (code(KeyCode::PageDown), Act::PageDown)],
    label: "PgUp/PgDn",
    what: "page",
    bar: Bar::Yes,
};
static ENDS: Binding<Act> = Binding {
    keys: &[
        (code(KeyCode::Home), Act::First),
        (code(KeyCode::End), Act::Last),
        (ch('g'), Act::First),
        (ch('G'), Act::Last),
    ],
    label: "Home/End g/G",
    what: "first/last",
    bar: Bar::No,
};
static FILTER: Binding<Act> = Binding { keys: &[(ch('/'), Act::Filter)], label: "/", what: "filter", bar: Bar::Yes };
static SORT: Binding<Act> = Binding { keys: &[(ch('s'), Act::Sort)], label: "s", what: "sort", bar: Bar::Yes };
static REVERSE: Binding<Act> = Binding { keys: &[(ch('r'), Act::Reverse)], label: "r", what: "reverse", bar: Bar::Yes };
static NEXT: Binding<Act> = Binding {
    keys: &[(code(KeyCode::Enter), Act::Conflicts), (ch('n'), Act::Conflicts), (code(KeyCode::Right), Act::Conflicts)],
    label: "Enter n →",
    what: "next: conflicts",
    bar: Bar::As("Enter", "next: conflicts"),
};
static BACK: Binding<Act> =
    Binding { keys: &[(code(KeyCode::Esc), Act::Back)], label: "Esc", what: "back", bar: Bar::Yes };
static FOCUS: Binding<Act> = Binding {
    keys: &[(code(KeyCode::Tab), Act::Focus), (code(KeyCode::BackTab), Act::Focus)],
    label: "Tab",
    what: "table/detail",
    bar: Bar::Yes,
};
static DETAIL_MOVE: Binding<Act> = Binding {
    keys: &[
        (code(KeyCode::Up), Act::DetailUp),
        (code(KeyCode::Down), Act::DetailDown),
        (ch('j'), Act::DetailDown),
        (ch('k'), Act::DetailUp),
    ],
    label: "↑/↓ j/k",
    what: "scroll the detail",
    bar: Bar::As("↑/↓", "scroll"),
};
/// The BMC check (issue #51): every BMC's power read once, read only; a READ column after it.
static CHECK_BMC: Binding<Act> =
    Binding { keys: &[(ch('b'), Act::CheckBmc)], label: "b", what: "read BMCs", bar: Bar::Yes };
static BROWSE: [&Binding<Act>; 8] = [&MOVE, &PAGE_KEYS, &ENDS, &FILTER, &SORT, &REVERSE, &FOCUS, &CHECK_BMC];
static DETAIL: [&Binding<Act>; 2] = [&DETAIL_MOVE, &FOCUS];

static TYPE: Binding<Act> = Binding { keys: &[], label: "type", what: "filter", bar: Bar::Yes };
static KEEP: Binding<Act> =
    Binding { keys: &[(code(KeyCode::Enter), Act::KeepFilter)], label: "Enter", what: "keep", bar: Bar::Yes };
static CLEAR: Binding<Act> =
    Binding { keys: &[(code(KeyCode::Esc), Act::ClearFilter)], label: "Esc", what: "clear", bar: Bar::Yes };
static FILTERING: [&Binding<Act>; 3] = [&TYPE, &KEEP, &CLEAR];

impl InventoryScreen {
    /// Re-filters and re-sorts the rows (after a filter or sort key, or a new plan).
    pub fn refresh(&mut self, session: &Session) {
        let Some(p) = &session.prepared else {
            self.rows.clear();
            return;
        };
        let f = self.filter.value().trim().to_lowercase();
        let codes = super::inventory_filter::node_codes(session);
        let mut rows: Vec<usize> = p
            .inventory
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| f.is_empty() || super::inventory_filter::matches(n, &f, session, codes.get(&n.node.id)))
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
                let keys: Vec<(usize, bool)> = rows.iter().map(|&i| session.node_marker(nodes[i].node.id)).collect();
                let mut paired: Vec<(usize, (usize, bool))> = rows.iter().copied().zip(keys).collect();
                paired.sort_by(|a, b| {
                    (b.1 .1, b.1 .0).cmp(&(a.1 .1, a.1 .0)).then(nodes[a.0].node.id.cmp(&nodes[b.0].node.id))
                });
                rows = paired.into_iter().map(|(i, _)| i).collect();
            }
        }
        if self.sort_desc {
            rows.reverse();
        }
        self.rows = rows;
        if self.selected >= self.rows.len() {
            self.selected = self.rows.len().saturating_sub(1);
        }
    }

    /// One node's row of the table (`selected`: the highlighted one).
    fn row(
        &self,
        n: &InventoryNode,
        selected: bool,
        (with_size, full_uuid, bmc): Columns,
        cx: &DrawCtx,
    ) -> Row<'static> {
        let (theme, session) = (cx.theme, cx.session);
        let b = &n.node;
        let (count, blocking) = session.node_marker(b.id);
        let marker = if blocking {
            Span::styled("!", theme.bad())
        } else if count > 0 {
            Span::styled("~", theme.warn())
        } else {
            Span::raw(" ")
        };
        let state = if b.deleted { "(deleted)".to_string() } else { dash(b.task_state.as_deref()) };
        let style = if selected {
            theme.selected()
        } else if b.deleted {
            theme.dim()
        } else {
            Style::new()
        };
        let mut cells = vec![
            Cell::from(marker),
            Cell::from(b.id.to_string()),
            Cell::from(if full_uuid { dash(b.uuid.as_deref()) } else { short_uuid(b.uuid.as_deref()) }),
            Cell::from(dash(b.service_host.as_deref())),
            Cell::from(state),
            Cell::from(short_uuid(b.instance_uuid.as_deref())),
        ];
        if with_size {
            cells.push(Cell::from(format!(
                "{}/{}/{}",
                b.cpus.map(|v| v.to_string()).unwrap_or("-".into()),
                b.memory_mb.map(|v| (v / 1024).to_string()).unwrap_or("-".into()),
                b.local_gb.map(|v| v.to_string()).unwrap_or("-".into())
            )));
        }
        cells.push(Cell::from(dash(b.pm_address.as_deref())));
        if let Some(f) = bmc {
            cells.push(read_cell(f, b.id, theme));
        }
        cells.push(Cell::from(n.interfaces.len().to_string()));
        Row::new(cells).style(style)
    }

    fn render_detail(&self, f: &mut Frame, area: Rect, theme: Theme, session: &Session) {
        let Some(p) = &session.prepared else { return };
        let Some(&ni) = self.rows.get(self.selected) else {
            f.render_widget(Paragraph::new("no node matches").block(Block::bordered().title(" Node ")), area);
            return;
        };
        let n = &p.inventory.nodes[ni];
        let b = &n.node;
        let plan_node = session.plan.as_ref().and_then(|pl| pl.nodes.iter().find(|x| x.nova_bm_id == b.id));
        // this node's rows, built for the frame (the plan does not keep them)
        let rows = session.plan.as_ref().zip(plan_node).and_then(|(pl, x)| pl.rows(x));
        let target = rows.as_ref().map(|r| &r.node);
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
        let or_dash = |v: Option<String>| v.unwrap_or("-".into());
        lines.push(Line::from(vec![
            Span::styled(format!("{:<11}{:<18} ", "", "nova_bm"), theme.key()),
            Span::styled("Ironic", theme.key()),
        ]));
        lines.push(row("action", String::new(), action));
        // what blocks or changes the node first: at 80x24 the pane holds a few lines
        lines.extend(super::inventory_filter::conflict_and_uuid_lines(session, plan_node, b, theme));
        lines.push(row("uuid", short_uuid(b.uuid.as_deref()), or_dash(target.map(|t| short_uuid(Some(&t.uuid))))));
        lines.push(row(
            "state",
            dash(b.task_state.as_deref()),
            or_dash(target.map(|t| t.provision_state.clone().unwrap_or("(none)".into()))),
        ));
        lines.push(row(
            "instance",
            short_uuid(b.instance_uuid.as_deref()),
            or_dash(target.map(|t| short_uuid(t.instance_uuid.as_deref()))),
        ));
        lines.push(row("power", "(not stored)".into(), or_dash(target.map(|_| "read from BMC".to_string()))));
        lines.push(row("driver", String::new(), or_dash(target.map(|t| t.driver.clone()))));
        // the instance's next boot: how Ironic will boot it after the takeover (docs/mapping.md 2.12)
        for (k, src, dst) in plan_node.and_then(|x| x.next_boot.as_ref()).map(|nb| nb.pane()).unwrap_or_default() {
            lines.push(row(k, src.into(), dst));
        }
        lines.push(row(
            "bmc",
            format!("{}@{}", dash(b.pm_user.as_deref()), dash(b.pm_address.as_deref())),
            or_dash(
                target.and_then(|t| t.driver_info.get("ipmi_address").map(|v| v.as_str().unwrap_or("").to_string())),
            ),
        ));
        lines.push(row(
            "password",
            if b.pm_password.is_some() { "***".into() } else { "-".into() },
            or_dash(target.map(|t| {
                if t.driver_info.has_secret("ipmi_password") {
                    "***".to_string()
                } else {
                    "-".to_string()
                }
            })),
        ));
        lines.push(row(
            "properties",
            format!("{}c {}MB {}GB", b.cpus.unwrap_or(0), b.memory_mb.unwrap_or(0), b.local_gb.unwrap_or(0)),
            or_dash(
                target.map(|t| t.properties.get("cpu_arch").and_then(|v| v.as_str()).unwrap_or("no arch").to_string()),
            ),
        ));
        if let Some(t) = target.filter(|t| t.maintenance) {
            lines.push(Line::from(Span::styled(
                format!("maintenance: {}", t.maintenance_reason.clone().unwrap_or_default()),
                theme.warn(),
            )));
        }
        for i in &n.interfaces {
            let dst = rows
                .as_ref()
                .and_then(|r| r.ports.iter().find(|p| p.nova_bm_interface_id == i.id))
                .map(|p| p.address.clone())
                .unwrap_or("(not migrated)".into());
            lines.push(row("mac", dash(i.address.as_deref()), dst));
        }
        let para = Paragraph::new(lines).wrap(Wrap { trim: false });
        let (shown, total) = (area.height.saturating_sub(2), para.line_count(area.width.saturating_sub(2)) as u16);
        self.detail_max.set(total.saturating_sub(shown));
        let top = self.detail_scroll.min(total.saturating_sub(shown));
        let title = if total > shown {
            let hint = if self.detail_focus { "↑/↓" } else { "Tab" };
            format!(" Node {}: {}-{} of {total} ({hint}) ", b.id, top + 1, (top + shown).min(total))
        } else {
            format!(" Node {} ", b.id)
        };
        let style = if self.detail_focus { theme.key() } else { Style::new() };
        let block = Block::bordered().title(Span::styled(title, style));
        f.render_widget(para.block(block).scroll((top, 0)), area);
    }
}

/// Hosts in the chart (the ones with the most nodes).
const CHART_HOSTS: usize = 6;

/// The hosts with the most nodes, and their nodes by state.
fn chart_hosts(s: &InventorySummary) -> Vec<(&String, &std::collections::BTreeMap<String, usize>)> {
    let mut hosts: Vec<_> = s.by_host.iter().collect();
    hosts.sort_by_key(|(h, states)| (std::cmp::Reverse(states.values().sum::<usize>()), *h));
    hosts.truncate(CHART_HOSTS);
    hosts
}

/// Rows the chart needs: a bar per (host, state), a gap between hosts, the border.
fn chart_height(s: &InventorySummary) -> u16 {
    let hosts = chart_hosts(s);
    let bars: usize = hosts.iter().map(|(_, st)| st.len()).sum();
    (bars + hosts.len().saturating_sub(1) + 2) as u16
}

/// nova_bm's nodes by state, host by host: one bar per state (ratatui's bar chart).
fn render_chart(f: &mut Frame, area: Rect, theme: Theme, s: &InventorySummary) {
    let hosts = chart_hosts(s);
    let label_w = hosts.iter().map(|(h, _)| h.chars().count()).max().unwrap_or(0).min(16);
    let groups: Vec<BarGroup> = hosts
        .iter()
        .map(|(host, states)| {
            let bars: Vec<ChartBar> = states
                .iter()
                .enumerate()
                .map(|(i, (state, n))| {
                    let who = if i == 0 { clip(host, label_w) } else { String::new() };
                    let style = match state.trim().to_ascii_lowercase().as_str() {
                        "active" => theme.good(),
                        "(soft-deleted)" | "deleted" => theme.dim(),
                        "error" | "deploy failed" => theme.bad(),
                        "none" => theme.fg(Color::Blue),
                        _ => theme.warn(),
                    };
                    ChartBar::default()
                        .value(*n as u64)
                        .label(Line::from(format!("{who:<label_w$} {}", clip(state, 14))))
                        .text_value(n.to_string())
                        .style(style)
                        .value_style(style.add_modifier(Modifier::REVERSED))
                })
                .collect();
            BarGroup::default().bars(&bars)
        })
        .collect();
    let title = if s.by_host.len() > CHART_HOSTS {
        format!(" States per host (the {CHART_HOSTS} largest of {}) ", s.by_host.len())
    } else {
        " States per host ".to_string()
    };
    let mut chart = BarChart::default()
        .block(Block::bordered().title(title))
        .direction(Direction::Horizontal)
        .bar_width(1)
        .bar_gap(0)
        .group_gap(1);
    for g in groups {
        chart = chart.data(g);
    }
    f.render_widget(chart, area);
}

impl Page for InventoryScreen {
    type Act = Act;

    fn draw(&self, f: &mut Frame, area: Rect, cx: &DrawCtx) {
        let (theme, session) = (cx.theme, cx.session);
        let Some(p) = &session.prepared else {
            f.render_widget(Paragraph::new("no inventory loaded").block(Block::bordered()), area);
            return;
        };
        let wide = area.width >= 110;
        let (table_area, detail_area) = if wide {
            let [a, b] = Layout::horizontal([Constraint::Percentage(58), Constraint::Percentage(42)]).areas(area);
            (a, b)
        } else {
            // the detail gets the room when it has the focus (Tab)
            let detail = if self.detail_focus { Constraint::Percentage(65) } else { Constraint::Length(9) };
            let [a, b] = Layout::vertical([Constraint::Min(6), detail]).areas(area);
            (a, b)
        };
        let s = &session.inv_summary;
        let states: Vec<String> = s.by_state.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let sort = match self.sort {
            SortKey::Id => "id",
            SortKey::Host => "host",
            SortKey::State => "state",
            SortKey::Conflicts => "conflicts",
        };
        let filter = if self.filtering || !self.filter.value().is_empty() {
            format!(" filter: {}{} ", self.filter.value(), if self.filtering { "▏" } else { "" })
        } else {
            String::new()
        };
        // the filter and the count it leaves first: a clipped title must not hide them
        let title = if filter.is_empty() {
            format!(
                " nova_bm: {} nodes ({} live, {} deleted) | sort {sort}{} ",
                s.nodes,
                s.live,
                s.soft_deleted,
                if self.sort_desc { " desc" } else { "" }
            )
        } else {
            format!(
                " {}of {} nodes:{filter}| sort {sort}{} ",
                format_args!("{} ", self.rows.len()),
                s.nodes,
                if self.sort_desc { " desc" } else { "" }
            )
        };
        let bottom = format!(" {} ", states.join(", "));
        let block = Block::bordered()
            .title(clip(&title, table_area.width as usize - 2))
            .title_bottom(clip(&bottom, table_area.width as usize - 2));
        let inner_h = block.inner(table_area).height.saturating_sub(1) as usize;
        // only the visible rows are built (smooth with 100,000 nodes)
        let sel = self.selected;
        let offset = if sel >= inner_h { sel + 1 - inner_h } else { 0 };
        let with_size = !wide || table_area.width > 100;
        // the whole uuid where it fits (200 columns and more), to copy for `baremetal node show`
        let full_uuid = table_area.width >= 110;
        // what the BMC check (`b`) read, once it ran: a READ column
        let bmc = Some(&*session.plan_options.bmc).filter(|f| f.given);
        let rows: Vec<Row> = self
            .rows
            .iter()
            .enumerate()
            .skip(offset)
            .take(inner_h)
            .map(|(i, &ni)| self.row(&p.inventory.nodes[ni], i == sel, (with_size, full_uuid, bmc), cx))
            .collect();
        let (widths, header) = super::inventory_filter::columns(with_size, full_uuid, bmc.is_some());
        let table = Table::new(rows, widths).header(Row::new(header).style(theme.key())).block(block).column_spacing(1);
        f.render_widget(table, table_area);
        // the chart when it fits whole under the detail
        let chart_h = chart_height(s);
        if wide && chart_h <= detail_area.height.saturating_sub(14) {
            let [detail, chart] =
                Layout::vertical([Constraint::Min(14), Constraint::Length(chart_h)]).areas(detail_area);
            self.render_detail(f, detail, theme, session);
            render_chart(f, chart, theme, s);
        } else {
            self.render_detail(f, detail_area, theme, session);
        }
    }

    fn legend(&self, cx: &Ctx) -> Vec<&'static str> {
        let mut l = vec![
            "! blocking  ~ non-blocking  (deleted): not migrated",
            "/ finds uuid, host, state, MAC (any spelling), a",
            "  conflict code or the plan's action, ! or ~",
        ];
        if cx.session.mode == Mode::ReadOnly {
            l.push("arch, boot: options of the migration (notes, not !)");
        }
        l
    }

    fn table(&self, cx: &Ctx) -> Vec<&'static Binding<Act>> {
        if self.filtering {
            return FILTERING.to_vec();
        }
        let mut t = if self.detail_focus { DETAIL.to_vec() } else { BROWSE.to_vec() };
        if cx.session.mode != Mode::ReadOnly {
            t.extend([&NEXT, &BACK]);
        }
        t
    }

    fn act(&mut self, act: Act, cx: &Ctx) -> Vec<Out> {
        let last = self.rows.len().saturating_sub(1);
        if matches!(act, Act::Down | Act::Up | Act::PageDown | Act::PageUp | Act::First | Act::Last) {
            self.detail_scroll = 0; // another node: its detail from the top
        }
        let s = &mut self.selected;
        match act {
            Act::Focus => self.detail_focus = !self.detail_focus,
            Act::DetailDown => self.detail_scroll = (self.detail_scroll + 1).min(self.detail_max.get()),
            Act::DetailUp => self.detail_scroll = self.detail_scroll.saturating_sub(1),
            Act::Down => *s = (*s + 1).min(last),
            Act::Up => *s = s.saturating_sub(1),
            Act::PageDown => *s = (*s + PAGE).min(last),
            Act::PageUp => *s = s.saturating_sub(PAGE),
            Act::First => *s = 0,
            Act::Last => *s = last,
            Act::Filter => self.filtering = true,
            Act::Sort => {
                self.sort = match self.sort {
                    SortKey::Id => SortKey::Host,
                    SortKey::Host => SortKey::State,
                    SortKey::State => SortKey::Conflicts,
                    SortKey::Conflicts => SortKey::Id,
                };
                self.refresh(cx.session);
            }
            Act::Reverse => {
                self.sort_desc = !self.sort_desc;
                self.refresh(cx.session);
            }
            Act::Conflicts => return vec![Out::Go(Screen::Conflicts)],
            Act::CheckBmc => return vec![Out::Busy("reading BMCs (read only)".into()), Out::Effect(Effect::CheckBmc)],
            Act::Back => return vec![Out::Go(Screen::Connections)],
            Act::KeepFilter => self.filtering = false,
            Act::ClearFilter => {
                self.filtering = false;
                self.filter.reset();
                self.refresh(cx.session);
            }
        }
        vec![]
    }

    fn other(&mut self, key: KeyEvent, cx: &Ctx) -> Vec<Out> {
        if self.filtering && self.filter.handle_event(&Event::Key(key)).is_some() {
            self.selected = 0;
            self.refresh(cx.session);
        }
        vec![]
    }
}

#[cfg(test)]
#[path = "inventory_tests.rs"]
mod tests;
