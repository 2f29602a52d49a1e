//! Tests of the conflicts screen.
use super::*;
use crate::tui::screens::fixture;
use crate::tui::session::Mode;

/// Issue #48 item 1: typing on the list of codes (`find node 12` typed by habit: `n` led here,
/// then `1` and `2`) decides nothing and says how to decide; `u` takes back the last decision.
#[test]
fn a_digit_on_the_list_of_codes_decides_nothing() {
    let s = fixture::session(Mode::Rehearsal);
    let cx = fixture::ctx(&s);
    let mut c = Conflicts::default();
    assert!(!c.focus_items);
    for k in "find node 12".chars() {
        let out = c.on_key(ch(k).event(), &cx);
        assert!(!out.iter().any(|o| matches!(o, Out::Decide { .. })), "{k:?} decided: {out:?}");
    }
    let out = c.on_key(ch('1').event(), &cx);
    assert!(matches!(&out[..], [Out::Toast(t)] if t.starts_with("nothing decided: Tab")), "{out:?}");
    assert_eq!(c.on_key(ch('u').event(), &cx), vec![Out::Undo]);
}

#[test]
fn moves_and_decides() {
    let s = fixture::session(Mode::Rehearsal);
    let cx = fixture::ctx(&s);
    let mut c = Conflicts::default();
    let groups = s.conflict_groups();
    assert!(groups.len() > 1, "the demo has several codes");
    c.on_key(ch('j').event(), &cx);
    assert_eq!(c.group, 1);
    c.on_key(code(KeyCode::Left).event(), &cx);
    assert!(c.focus_items);
    c.on_key(ch('k').event(), &cx);
    assert_eq!((c.group, c.item), (1, 0));
    let out = c.on_key(ch('1').event(), &cx);
    assert!(
        matches!(&out[..], [Out::Toast(t), Out::Decide { all: false, subject: Some(_), .. }] if t.contains("u undoes")),
        "{out:?}"
    );
    c.on_key(ch('a').event(), &cx);
    let out = c.on_key(ch('1').event(), &cx);
    assert!(matches!(&out[..], [Out::Toast(t), Out::Decide { all: true, .. }] if t.starts_with("every ")), "{out:?}");
    c.on_key(ch('a').event(), &cx);
    let out = c.on_key(ch('9').event(), &cx);
    assert!(matches!(&out[..], [Out::Toast(t)] if t.contains("action(s)")), "{out:?}");
    let out = c.on_key(ch('n').event(), &cx);
    assert!(matches!(&out[..], [Out::Toast(t)] if t.contains("blocking")), "{out:?}");
}

/// Every code, each with one item decided on its last action: the pane says what every action does.
#[test]
fn every_code_and_action_is_explained() {
    use crate::core::migrate::conflict::Conflict;
    let mut s = fixture::session(Mode::Rehearsal);
    let plan = s.plan.as_mut().unwrap();
    plan.conflicts = ConflictCode::ALL
        .iter()
        .enumerate()
        .map(|(i, code)| Conflict {
            code: *code,
            blocking: code.blocking(),
            subject: Subject::Node { nova_bm_id: i as i64 + 1 },
            node_uuid: None,
            detail: format!("an example of {code}"),
            action: code.actions().last().copied(),
            decided_by: code.actions().last().map(|_| "resolutions"),
        })
        .collect();
    let groups = s.conflict_groups();
    assert_eq!(groups.len(), ConflictCode::ALL.len());
    let mut all = String::new();
    for (g, (code, _)) in groups.iter().enumerate() {
        let c = Conflicts { group: g, focus_items: true, ..Default::default() };
        let text = fixture::draw(110, 40, &c, &fixture::draw_ctx(&s));
        // the right pane only (the groups on the left would interleave)
        let right: String = text.lines().map(|l| l.chars().skip(34).collect::<String>() + "\n").collect();
        let flat: String = right.replace('│', " ").split_whitespace().collect::<Vec<_>>().join(" ");
        let code = *code;
        for a in code.actions() {
            let k = consequence(code, *a).unwrap();
            for part in [k.ironic, k.machine, k.afterwards] {
                let words: String = part.split_whitespace().take(8).collect::<Vec<_>>().join(" ");
                assert!(flat.contains(&words), "{code} {a}: '{words}' not shown:\n{text}");
            }
        }
        if let Some(last) = code.actions().last() {
            assert!(flat.contains(&format!("{} {last} ◀ decided", code.actions().len())), "{code}:\n{text}");
        }
        all.push_str(&format!("=== {code}\n{text}\n"));
    }
    insta::assert_snapshot!(all);
}

#[test]
fn x_gives_the_pane_to_the_consequences() {
    let s = fixture::session(Mode::Rehearsal);
    let cx = fixture::ctx(&s);
    let mut c = Conflicts::default();
    let narrow = fixture::draw(80, 20, &c, &fixture::draw_ctx(&s));
    // the selected item's detail, cut on its line, is whole above the consequences (2 lines and a blank)
    assert!(
        narrow.contains(" interface 11 address 'not-a-mac' is not a ") && narrow.contains("of 30: x, PgDn"),
        "{narrow}"
    );
    c.on_key(ch('x').event(), &cx);
    assert!(c.explain);
    let full = fixture::draw(80, 20, &c, &fixture::draw_ctx(&s));
    assert!(!full.contains("UNDECIDED") && full.contains("Afterwards:"), "{full}");
    // at 80x24 even the whole pane does not hold it all: PgDn reads on to the last sentence
    let code = s.conflict_groups()[0].0;
    let last = explain_lines(code, None, 46, crate::tui::theme::Theme { color: false }).len() + 3;
    for _ in 0..10 {
        c.on_key(code_key(KeyCode::PageDown), &cx);
    }
    let end = fixture::draw(80, 20, &c, &fixture::draw_ctx(&s));
    assert!(end.contains(&format!("-{last} of {last}: PgDn/PgUp")), "{end}");
    let tail = consequence(code, *code.actions().last().unwrap()).unwrap().afterwards;
    let last_word = tail.split_whitespace().last().unwrap();
    assert!(end.contains(last_word) || fix(code).is_some(), "the end is reachable: {end}");
}

fn code_key(k: KeyCode) -> ratatui::crossterm::event::KeyEvent {
    ratatui::crossterm::event::KeyEvent::new(k, ratatui::crossterm::event::KeyModifiers::NONE)
}

#[test]
fn snapshot() {
    let s = fixture::session(Mode::Rehearsal);
    let c = Conflicts { focus_items: true, ..Default::default() };
    let text = fixture::draw(100, 20, &c, &fixture::draw_ctx(&s));
    insta::assert_snapshot!(text);
}
