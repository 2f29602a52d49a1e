//! The inventory's filter (`/`): what a typed text finds, in the operator's words: a uuid, host,
//! state, instance, BMC, id, a MAC in any spelling, a conflict code or the plan's action, `!`, `~`;
//! and what the browse shows of a node beyond the screen's layout: the table's columns (whole uuids
//! where they fit), the detail's conflicts (notes in the read-only browse) and whole uuids.

use ratatui::layout::Constraint;
use ratatui::text::{Line, Span};

use crate::core::source::model::InventoryNode;
use crate::tui::chrome::dash;
use crate::tui::session::Session;
use crate::tui::theme::Theme;

/// Each node's conflict codes (read-only notes left out) and what the plan does with it, once per
/// filtering (a lookup per node would walk the plan for each of 100,000 nodes).
pub fn node_codes(session: &Session) -> std::collections::HashMap<i64, Vec<&'static str>> {
    let mut out: std::collections::HashMap<i64, Vec<&'static str>> = std::collections::HashMap::new();
    for n in session.plan.iter().flat_map(|p| p.nodes.iter()) {
        let codes = n.conflicts.iter().filter(|c| !session.read_only_note(**c)).map(|c| c.as_str());
        out.entry(n.nova_bm_id).or_default().extend(codes.chain([n.action.as_str()]));
    }
    out
}

/// A MAC as its hex digits only: `52:54:00:00:00:09` finds `52-54-00-00-00-09` and `5254.0000.0009`.
fn mac_digits(s: &str) -> String {
    s.chars().filter(|c| !matches!(c, ':' | '-' | '.' | ' ')).collect::<String>().to_lowercase()
}

/// Whether a node matches the filter `f` (lowercase): its uuid, host, state, instance, BMC, id, a MAC
/// in any spelling, a conflict code or the plan's action (`/blocked`, `/failed-deploy`), `!` (a
/// blocking conflict) or `~` (only others), `deleted`.
pub fn matches(n: &InventoryNode, f: &str, session: &Session, codes: Option<&Vec<&'static str>>) -> bool {
    let b = &n.node;
    let (count, blocking) = session.node_marker(b.id);
    match f {
        "!" => return blocking,
        "~" => return count > 0 && !blocking,
        "deleted" | "(deleted)" if b.deleted => return true,
        _ => {}
    }
    let text = [
        b.uuid.as_deref(),
        b.service_host.as_deref(),
        b.task_state.as_deref(),
        b.instance_uuid.as_deref(),
        b.pm_address.as_deref(),
    ];
    let digits = mac_digits(f);
    let mac_like = digits.len() >= 4 && digits.chars().all(|c| c.is_ascii_hexdigit());
    text.iter().flatten().any(|s| s.to_lowercase().contains(f))
        || b.id.to_string() == f
        || codes.is_some_and(|c| c.iter().any(|c| c.contains(f)))
        || n.interfaces
            .iter()
            .filter_map(|i| i.address.as_deref())
            .any(|a| a.to_lowercase().contains(f) || (mac_like && mac_digits(a).contains(&digits)))
}

/// The detail's first lines: the node's conflicts (the read-only browse's notes as notes), then its
/// uuid and its instance's whole, to copy (`baremetal node show UUID`).
pub fn conflict_and_uuid_lines(
    session: &Session,
    plan_node: Option<&crate::core::migrate::plan::NodePlan>,
    b: &crate::core::source::model::BmNode,
    theme: Theme,
) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    if let Some(pn) = plan_node {
        for c in &pn.conflicts {
            lines.push(match session.read_only_note(*c) {
                true => Line::from(Span::styled(format!("note: {c} (an option of the migration)"), theme.dim())),
                false => Line::from(Span::styled(format!("! {c}"), theme.bad())),
            });
        }
    }
    // whole, to copy (`baremetal node show UUID`)
    lines.push(Line::from(vec![
        Span::styled(format!("{:<11}", "uuid"), theme.dim()),
        Span::raw(dash(b.uuid.as_deref())),
    ]));
    if let Some(i) = b.instance_uuid.as_deref() {
        lines
            .push(Line::from(vec![Span::styled(format!("{:<11}", "instance"), theme.dim()), Span::raw(dash(Some(i)))]));
    }
    lines
}

/// The table's columns: the size when there is room, the whole uuid when there is more.
pub fn columns(with_size: bool, full_uuid: bool, read: bool) -> (Vec<Constraint>, Vec<&'static str>) {
    let mut widths = vec![
        Constraint::Length(1),
        Constraint::Length(5),
        Constraint::Length(if full_uuid { 36 } else { 8 }),
        Constraint::Length(13),
        Constraint::Length(13),
        Constraint::Length(8),
    ];
    let mut header = vec!["", "ID", "UUID", "HOST", "STATE", "INSTANCE"];
    if with_size {
        widths.push(Constraint::Length(11));
        header.push("CPU/GB/DISK");
    }
    widths.push(Constraint::Min(9));
    header.push("BMC");
    // what the BMC check (`b`) read, once it ran
    if read {
        widths.push(Constraint::Length(7));
        header.push("READ");
    }
    widths.push(Constraint::Length(4));
    header.push("MACS");
    (widths, header)
}
