//! The inventory screen's tests (beside it: the screen is near the 600-line bound).

use super::*;
use crate::core::migrate::conflict::ConflictCode;
use crate::tui::keys::Key;
use crate::tui::screens::fixture;

fn screen(s: &Session) -> InventoryScreen {
    let mut inv = InventoryScreen::default();
    inv.refresh(s);
    inv
}

#[test]
fn moves_filters_and_sorts() {
    let s = fixture::session(Mode::Rehearsal);
    let cx = fixture::ctx(&s);
    let mut inv = screen(&s);
    let n = inv.rows.len();
    assert_eq!(n, s.prepared.as_ref().unwrap().inventory.nodes.len());
    inv.on_key(ch('G').event(), &cx);
    assert_eq!(inv.selected, n - 1);
    inv.on_key(code(KeyCode::Home).event(), &cx);
    assert_eq!(inv.selected, 0);
    inv.on_key(code(KeyCode::PageDown).event(), &cx);
    assert_eq!(inv.selected, PAGE);
    inv.on_key(ch('/').event(), &cx);
    assert!(inv.filtering);
    for c in "bm-compute-2".chars() {
        inv.on_key(ch(c).event(), &cx);
    }
    assert!(inv.rows.len() < n && !inv.rows.is_empty());
    inv.on_key(code(KeyCode::Esc).event(), &cx);
    assert_eq!(inv.rows.len(), n);
    inv.on_key(ch('s').event(), &cx);
    assert_eq!(inv.sort, SortKey::Host);
    assert_eq!(inv.on_key(code(KeyCode::Right).event(), &cx), vec![Out::Go(Screen::Conflicts)]);
}

#[test]
fn read_only_has_no_way_on() {
    let s = fixture::session(Mode::ReadOnly);
    let cx = fixture::ctx(&s);
    let mut inv = screen(&s);
    assert!(inv.on_key(ch('n').event(), &cx).is_empty());
    assert!(inv.on_key(Key::Code(KeyCode::Esc).event(), &cx).is_empty());
    assert!(inv.rows(&cx).iter().all(|r| r.what != "next: conflicts" && r.what != "back"));
}

#[test]
fn snapshot() {
    let s = fixture::session(Mode::Rehearsal);
    let mut inv = screen(&s);
    inv.selected = 3;
    let text = fixture::draw(120, 20, &inv, &fixture::draw_ctx(&s));
    insta::assert_snapshot!(text);
}

/// The states of each host's nodes as a bar chart under the detail, when there is room.
#[test]
fn states_per_host_as_a_bar_chart() {
    let s = fixture::session(Mode::Rehearsal);
    let inv = screen(&s);
    let text = fixture::draw(120, 40, &inv, &fixture::draw_ctx(&s));
    assert!(text.contains("States per host"), "{text}");
    let by_host = &s.inv_summary.by_host;
    assert_eq!(by_host.values().map(|st| st.values().sum::<usize>()).sum::<usize>(), 36);
    for (host, states) in by_host {
        let first = states.keys().next().unwrap();
        assert!(text.contains(&format!("{host} {first}")), "{host} {first}:\n{text}");
    }
    insta::assert_snapshot!(text);
    let small = fixture::draw(120, 24, &inv, &fixture::draw_ctx(&s));
    assert!(!small.contains("States per host"), "no room: no chart");
}

/// At 80x24 (a BMC's serial console) the detail pane holds a few lines: Tab gives it the focus and
/// the room, ↑/↓ scroll it, its title says which lines it shows; the MACs, the BMC and the conflicts
/// are reachable, and Tab gives the table back.
#[test]
fn the_detail_scrolls_at_80x24_to_its_last_line() {
    let s = fixture::session(Mode::Rehearsal);
    let cx = fixture::ctx(&s);
    let mut inv = screen(&s);
    // the node with the most detail lines: ports and conflicts
    let p = s.prepared.as_ref().unwrap();
    inv.selected = (0..inv.rows.len())
        .max_by_key(|&k| {
            let n = &p.inventory.nodes[inv.rows[k]];
            n.interfaces.len()
                + p.plan.nodes.iter().find(|pn| pn.nova_bm_id == n.node.id).map_or(0, |pn| pn.conflicts.len())
        })
        .unwrap();
    let first = fixture::draw(80, 22, &inv, &fixture::draw_ctx(&s));
    assert!(first.contains("(Tab)"), "the title says there is more, and how to see it:\n{first}");
    inv.on_key(code(KeyCode::Tab).event(), &cx);
    assert!(inv.detail_focus);
    let mut seen = fixture::draw(80, 22, &inv, &fixture::draw_ctx(&s));
    for _ in 0..60 {
        inv.on_key(code(KeyCode::Down).event(), &cx);
        seen.push_str(&fixture::draw(80, 22, &inv, &fixture::draw_ctx(&s)));
    }
    let last = fixture::draw(80, 22, &inv, &fixture::draw_ctx(&s));
    for what in ["mac", "bmc", "driver"] {
        assert!(seen.contains(what), "{what} never shown:\n{seen}");
    }
    let title = last.lines().find(|l| l.contains(" of ")).unwrap_or_default().to_string();
    let (shown, total) = title
        .split(": ")
        .nth(1)
        .and_then(|t| t.split(" (").next())
        .and_then(|t| t.split_once(" of "))
        .map(|(a, b)| (a.split('-').nth(1).unwrap().parse::<u16>().unwrap(), b.trim().parse::<u16>().unwrap()))
        .expect(&title);
    assert_eq!(shown, total, "scrolled to its last line: {title}");
    assert!(inv.detail_scroll > 0);
    // ↓ moved the detail, not the selection; Tab gives the table back, and another node starts at the top
    let selected = inv.selected;
    inv.on_key(code(KeyCode::Tab).event(), &cx);
    assert!(!inv.detail_focus);
    inv.on_key(code(KeyCode::Down).event(), &cx);
    assert_eq!((inv.selected, inv.detail_scroll), ((selected + 1).min(inv.rows.len() - 1), 0));
    // Esc still goes back from the detail
    inv.on_key(code(KeyCode::Tab).event(), &cx);
    assert_eq!(inv.on_key(code(KeyCode::Esc).event(), &cx), vec![Out::Go(Screen::Connections)]);
}

/// The read-only browse as `bm2ironic inventory` opens it on the demo: no arch, no TFTP tree given.
fn browse() -> Session {
    let mut s = fixture::session(Mode::ReadOnly);
    let opts =
        crate::core::migrate::plan::PlanOptions { default_arch: None, boots: Default::default(), ..fixture::options() };
    s.replan(&opts);
    s
}

fn filtered(s: &Session, f: &str) -> Vec<i64> {
    let mut inv = InventoryScreen { filter: tui_input::Input::new(f.into()), ..Default::default() };
    inv.refresh(s);
    let nodes = &s.prepared.as_ref().unwrap().inventory.nodes;
    inv.rows.iter().map(|&i| nodes[i].node.id).collect()
}

/// #48 item 7: in the read-only browse, arch and boot are notes of the migration's options, not
/// `!` (before: every node was marked); what nova_bm itself holds is still marked.
#[test]
fn the_browse_notes_arch_and_boot_and_marks_only_real_conflicts() {
    let s = browse();
    let plan = s.plan.as_ref().unwrap();
    let arch_only = plan
        .nodes
        .iter()
        .find(|n| !n.conflicts.is_empty() && n.conflicts.iter().all(|c| s.read_only_note(*c)))
        .expect("a node with only arch/boot");
    assert_eq!(s.node_marker(arch_only.nova_bm_id), (0, false), "{:?}", arch_only.conflicts);
    let failed = plan.nodes.iter().find(|n| n.conflicts.contains(&ConflictCode::FailedDeploy)).unwrap();
    assert!(s.node_marker(failed.nova_bm_id).1, "failed-deploy is real: !");
    let mut inv = screen(&s);
    inv.selected = inv
        .rows
        .iter()
        .position(|&i| s.prepared.as_ref().unwrap().inventory.nodes[i].node.id == arch_only.nova_bm_id)
        .unwrap();
    let text = fixture::draw(120, 36, &inv, &fixture::draw_ctx(&s));
    assert!(text.contains("note: missing-arch") && !text.contains("! missing-arch"), "{text}");
    // the same codes are conflicts in a migration (LIVE, REHEARSAL)
    let live = fixture::session(Mode::Rehearsal);
    assert!(!live.read_only_note(ConflictCode::MissingArch));
}

/// Search by any MAC spelling, uuid, state, conflict code, the plan's action, `!` and `~`.
#[test]
fn the_browse_finds_by_any_mac_spelling_uuid_state_and_conflict() {
    let s = browse();
    // node 10's MAC is stored as 52-54-00-00-00-02 (typed so), node 2's as 52:54:00:00:00:02
    let by_mac = filtered(&s, "52:54:00:00:00:02");
    assert!(by_mac.contains(&2) && by_mac.contains(&10), "{by_mac:?}");
    assert!(filtered(&s, "5254.0000.0002").contains(&10));
    let blocked = filtered(&s, "blocked");
    let bang = filtered(&s, "!");
    assert!(!bang.is_empty() && bang.iter().all(|id| s.node_marker(*id).1), "{bang:?}");
    assert!(!blocked.is_empty(), "the plan's action");
    let fd = filtered(&s, "failed-deploy");
    assert_eq!(fd.len(), 1, "{fd:?}");
    let uuid = s.prepared.as_ref().unwrap().inventory.nodes[4].node.uuid.clone().unwrap();
    assert_eq!(filtered(&s, &uuid), vec![5]);
    assert_eq!(filtered(&s, "building"), vec![4], "by state");
    assert!(!filtered(&s, "~").is_empty());
    assert!(filtered(&s, "missing-arch").is_empty(), "a note is not searched as a conflict");
}

/// Full uuids at a wide terminal (none could be copied for `baremetal node show`), and in the
/// detail at any width; `?` explains `!`, `~` and `(deleted)`.
#[test]
fn the_browse_shows_whole_uuids_and_explains_its_marks() {
    let s = browse();
    let inv = screen(&s);
    let uuid = s.prepared.as_ref().unwrap().inventory.nodes[0].node.uuid.clone().unwrap();
    let wide = fixture::draw(200, 40, &inv, &fixture::draw_ctx(&s));
    assert!(wide.lines().any(|l| l.contains(&uuid) && l.contains("bm-compute-1")), "{wide}");
    let narrow = fixture::draw(80, 24, &inv, &fixture::draw_ctx(&s));
    assert!(narrow.contains(&uuid), "in the detail: {narrow}");
    let legend = inv.legend(&fixture::ctx(&s)).join("\n");
    assert!(
        legend.contains("! blocking") && legend.contains("~ non-blocking") && legend.contains("(deleted)"),
        "{legend}"
    );
    assert!(legend.contains("arch, boot"), "{legend}");
}
