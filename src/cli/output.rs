//! What the commands print, in one place: aligned text tables (no colour: output is for pipes and
//! logs as much as eyes), writing to stdout (a closed pipe is not an error), JSON lines, the
//! confirmation prompt, and the plan as text (`plan`, and `migrate` when it stops on conflicts).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::Path;

use super::{Failure, MigrateArgs};
use crate::core::migrate::conflict::{Action, Conflict, ConflictCode, Subject};
use crate::core::migrate::consequences::{consequence, fix, Consequence};
use crate::core::migrate::events::LoadSummary;
use crate::core::migrate::plan::{NodePlan, Plan};
use crate::core::migrate::report::{self, Report, ReportInput};
use crate::core::migrate::steps::{rollback::RollbackFace, MigrateFace, Outcome, Planned, StepError};
use crate::core::settings::ConnectionSettings;
use crate::core::text::{clipped, shown, shown_line, visible_line};
use serde_json::json;

/// A table cell or a conflict's subject at most this many characters (a 1 MB `service_host` must not
/// widen every row of `inventory` to a megabyte): `--json` and the report keep the whole value.
pub const CELL_MAX: usize = 64;
/// A conflict's detail line at most this many characters in the plan's text.
pub const DETAIL_MAX: usize = 400;

/// Writes `text` to stdout through the one text discipline (core/text.rs `shown`: redacted, every
/// control, bidi and zero-width character shown visibly); a closed pipe (`| head`) is not an error
/// worth a message.
pub fn print(text: &str) {
    write_raw(shown(text).as_bytes());
}

/// Writes one line to stderr through the same discipline (the face's messages, warnings, progress).
pub fn note(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}", shown(text));
}

/// Like [`note`] without the newline (a progress line rewritten in place with `\r`, which is kept).
pub fn note_inline(text: &str) {
    let mut err = std::io::stderr().lock();
    let shown: String = text.split('\r').map(|part| shown_line(part).into_owned()).collect::<Vec<_>>().join("\r");
    let _ = write!(err, "{shown}").and_then(|_| err.flush());
}

fn write_raw(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes).and_then(|_| out.flush());
}

/// Writes `value` as pretty JSON to stdout as it is encoded (never the whole text in memory: an
/// inventory of 100k nodes is 150 MB of it); control, bidi and zero-width characters as `\u` escapes
/// (core/text.rs `json`).
pub fn print_json_pretty<T: serde::Serialize>(value: &T) {
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    // like `print`: a closed pipe (`| head`) is not an error worth a message
    let _ = crate::core::text::json::write_pretty(&mut out, value)
        .map_err(std::io::Error::from)
        .and_then(|_| out.write_all(b"\n"))
        .and_then(|_| out.flush());
}

/// Writes one JSON value on a line (NDJSON), escaped as [`print_json_pretty`] and redacted.
pub fn print_json<T: serde::Serialize + ?Sized>(value: &T) {
    write_raw(format!("{}\n", crate::core::text::json::to_line(value)).as_bytes());
}

/// A serde enum's wire name (`"create"`, `"held-in-maintenance"`), for a table cell.
pub fn wire_name<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
}

pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    /// columns aligned right (numbers)
    right: Vec<bool>,
    /// columns whose values are kept whole (up to the detail bound): values an operator copies
    whole: Vec<bool>,
}

impl Table {
    pub fn new(headers: &[(&str, bool)]) -> Table {
        Table {
            headers: headers.iter().map(|(h, _)| h.to_string()).collect(),
            right: headers.iter().map(|(_, r)| *r).collect(),
            whole: vec![false; headers.len()],
            rows: Vec::new(),
        }
    }

    /// Column `i` kept whole (a config value, a uuid), not cut at a cell's bound.
    pub fn whole(mut self, i: usize) -> Table {
        if let Some(w) = self.whole.get_mut(i) {
            *w = true;
        }
        self
    }

    pub fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.headers.len());
        // a newline or an escape in a cell would break the alignment (or the terminal), a megabyte
        // value would widen every row; the last column pads nothing, so it keeps a message whole
        let last = cells.len().saturating_sub(1);
        let cells = cells.into_iter().enumerate();
        self.rows.push(
            cells
                .map(|(i, c)| {
                    let keep = i == last || self.whole.get(i).copied().unwrap_or(false);
                    clipped(&c, if keep { DETAIL_MAX } else { CELL_MAX }).into_owned()
                })
                .collect(),
        );
    }

    pub fn render(&self) -> String {
        let n = self.headers.len();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(n) {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        table_line(&self.headers, &widths, &self.right, &mut out);
        for r in &self.rows {
            table_line(r, &widths, &self.right, &mut out);
        }
        out
    }
}

/// One line of a table: cells padded to `widths` (right-aligned where `right`), two spaces apart.
fn table_line<S: AsRef<str>>(cells: &[S], widths: &[usize], right: &[bool], out: &mut String) {
    let start = out.len();
    let n = cells.len();
    for (i, c) in cells.iter().enumerate() {
        let c = c.as_ref();
        if i > 0 {
            out.push_str("  ");
        }
        let pad = widths[i].saturating_sub(c.chars().count());
        if right[i] {
            out.extend(std::iter::repeat_n(' ', pad));
            out.push_str(c);
        } else {
            out.push_str(c);
            if i + 1 < n {
                out.extend(std::iter::repeat_n(' ', pad));
            }
        }
    }
    let kept = out[start..].trim_end().len();
    out.truncate(start + kept);
    out.push('\n');
}

/// Asks the operator to type `word`, or refuses without a terminal (unless `--yes`).
pub(crate) fn confirm(yes: bool, what: &str, word: &str) -> Result<(), Failure> {
    if yes {
        return Ok(());
    }
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Err(Failure::usage(format!("{what}: there is no terminal to confirm on; add --yes to go ahead")));
    }
    note_inline(&format!("{what}. Type '{word}' to go on: "));
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| Failure::runtime(format!("cannot read the confirmation: {e}")))?;
    if line.trim() == word {
        Ok(())
    } else {
        Err(Failure::runtime("not confirmed: nothing written"))
    }
}

/// The terminal's part of a use case (`migrate`, `rollback`): `--yes`, or the operator types
/// `word`; a refusal is kept (`refused`) to be returned as it was made, exit code included.
pub(crate) struct Prompt {
    pub yes: bool,
    pub word: &'static str,
    pub refused: Option<Failure>,
}

impl Prompt {
    fn ask(&mut self, what: &str) -> Result<(), StepError> {
        confirm(self.yes, what, self.word).map_err(|f| StepError::Refused(self.refused.insert(f).message().to_string()))
    }

    /// The failure to return: the refusal as it was made, else `e`.
    pub fn failure(&mut self, e: StepError) -> Failure {
        self.refused.take().unwrap_or_else(|| e.into())
    }
}

impl MigrateFace for Prompt {
    fn confirm(&mut self, _: &Planned, question: &str) -> Result<(), StepError> {
        self.ask(question)
    }
    fn note(&mut self, text: &str) {
        note(text);
    }
}

impl RollbackFace for Prompt {
    fn asks(&self) -> bool {
        !self.yes
    }
    fn confirm(&mut self, what: &str) -> Result<(), StepError> {
        self.ask(what)
    }
}

/// The plan as text (see `write_plan`), for the tests.
#[cfg(test)]
fn render_plan(p: &Plan) -> String {
    let mut out = String::new();
    write_plan(p, &mut |t| out.push_str(t));
    out
}

/// Prints the plan as `write_plan` makes it, a piece at a time (at 100k nodes the table alone is
/// 13 MB of text: never held whole).
pub fn print_plan(p: &Plan) {
    let mut buf = String::with_capacity(64 * 1024);
    write_plan(p, &mut |t| {
        buf.push_str(t);
        if buf.len() >= 60 * 1024 {
            print(&buf);
            buf.clear();
        }
    });
    print(&buf);
}

/// The plan's table cells for one node (each made safe for one line of a terminal; borrowed where
/// they can be: at 100k nodes the table was a fifth of `plan`'s time).
fn plan_cells(n: &NodePlan) -> [Cow<'_, str>; 8] {
    [
        Cow::Owned(n.nova_bm_id.to_string()),
        clipped(n.uuid.as_deref().unwrap_or("-"), CELL_MAX),
        clipped(n.service_host.as_deref().unwrap_or("-"), CELL_MAX),
        Cow::Borrowed(n.action.as_str()),
        Cow::Borrowed(n.write.map(|w| w.provision_state.unwrap_or("(none)")).unwrap_or("-")),
        Cow::Borrowed(if n.write.is_some_and(|w| w.maintenance) { "yes" } else { "" }),
        Cow::Owned(n.write.map_or(0, |w| w.ports).to_string()),
        match n.conflicts.as_slice() {
            [] => Cow::Borrowed(""),
            [one] => Cow::Borrowed(one.as_str()),
            many => Cow::Owned(many.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(",")),
        },
    ]
}

/// The plan as text, handed to `out` a line or a section at a time: the node table (its widths
/// from a first pass over the nodes), the conflicts with what each action does, warnings, summary.
pub fn write_plan(p: &Plan, out: &mut dyn FnMut(&str)) {
    let headers: Vec<String> = ["NOVA_BM_ID", "UUID", "HOST", "ACTION", "STATE", "MAINT", "PORTS", "CONFLICTS"]
        .iter()
        .map(|h| h.to_string())
        .collect();
    let right = [true, false, false, false, false, false, true, false];
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for n in &p.nodes {
        for (w, c) in widths.iter_mut().zip(plan_cells(n).iter()) {
            *w = (*w).max(c.chars().count());
        }
    }
    out(&format!(
        "Target: {:?} Ironic (schema {}), {} existing nodes\n\n",
        p.target.kind, p.target.schema, p.target.existing_nodes
    ));
    let mut line = String::new();
    table_line(&headers, &widths, &right, &mut line);
    out(&line);
    for n in &p.nodes {
        line.clear();
        table_line(&plan_cells(n), &widths, &right, &mut line);
        out(&line);
    }
    // each instance's next boot: how Ironic will boot it after the takeover (docs/mapping.md 2.12)
    let mut header = false;
    for n in p.nodes.iter().filter(|n| n.write.is_some()) {
        if let Some(b) = &n.next_boot {
            if !header {
                out("\nNext boot of each instance:\n");
                header = true;
            }
            line.clear();
            let who = clipped(n.uuid.as_deref().unwrap_or("-"), CELL_MAX);
            line.push_str(&format!("  {who}: {}\n", visible_line(&b.line(p.target.kind))));
            out(&line);
        }
    }
    let mut out_rest = String::new();
    let out_text = &mut out_rest;
    if !p.conflicts.is_empty() {
        out_text.push_str("\nConflicts:\n");
        let mut by_code: BTreeMap<ConflictCode, Vec<&Conflict>> = BTreeMap::new();
        for c in &p.conflicts {
            by_code.entry(c.code).or_default().push(c);
        }
        for (code, list) in by_code {
            let open = list.iter().filter(|c| c.is_unresolved_blocking()).count();
            let actions: Vec<&str> = code.actions().iter().map(|a| a.as_str()).collect();
            out_text.push_str(&format!(
                "  {code} ({}{}; actions: {})\n",
                list.len(),
                if open > 0 { format!(", {open} BLOCKING unresolved") } else { String::new() },
                if actions.is_empty() { "fix the cause".into() } else { actions.join(", ") }
            ));
            // what the actions do: every action while some are undecided, else the ones chosen
            let shown: Vec<Action> = if open > 0 {
                code.actions().to_vec()
            } else {
                code.actions().iter().copied().filter(|a| list.iter().any(|c| c.action == Some(*a))).collect()
            };
            for a in shown {
                if let Some(k) = consequence(code, a) {
                    out_text.push_str(&consequence_text(&format!("    {a}: "), &k, 100));
                }
            }
            if let Some(fix) = fix(code) {
                out_text.push_str(&wrap(&format!("    fix: {fix}"), 100, 6));
            }
            for c in list.iter().take(20) {
                let who = c.node_uuid.clone().unwrap_or_else(|| match &c.subject {
                    Subject::Host { host } => format!("host {}", clipped(host, CELL_MAX)),
                    Subject::Node { nova_bm_id } | Subject::Interface { nova_bm_id, .. } => {
                        format!("nova_bm node {nova_bm_id}")
                    }
                    Subject::Run => "the run".into(),
                });
                let decision = match (c.action, c.decided_by) {
                    (Some(a), Some(by)) => format!("-> {a} ({by})"),
                    _ => "-> UNRESOLVED".into(),
                };
                // one line each: a newline in a row's value must not start a line of its own
                let (who, detail) = (clipped(&who, CELL_MAX), clipped(&c.detail, DETAIL_MAX));
                out_text.push_str(&format!("    {who}: {detail} {decision}\n"));
            }
            if list.len() > 20 {
                out_text.push_str(&format!("    ... and {} more\n", list.len() - 20));
            }
        }
    }
    for w in &p.warnings {
        out_text.push_str(&format!("\nwarning: {w}"));
    }
    out_text.push_str(&format!(
        "\n\nPlan: create {} (active {}, in maintenance {}), skip {}, already migrated {}, blocked {}; {} ports; {} blocking conflict(s) unresolved; checksum {}\n",
        p.summary.create, p.summary.active, p.summary.maintenance, p.summary.skip, p.summary.already_migrated, p.summary.blocked, p.summary.ports, p.summary.blocking, &p.checksum[..12]
    ));
    if p.summary.blocking > 0 {
        out_text.push_str("Resolve the blocking conflicts (--resolve CODE=ACTION, --resolutions FILE, or the wizard) before `migrate`.\n");
    }
    out(&out_rest)
}

/// `text` wrapped at `width` columns (its leading blanks kept); the lines after the first indented
/// by `indent` spaces.
pub fn wrap(text: &str, width: usize, indent: usize) -> String {
    let body = text.trim_start();
    let mut out = String::new();
    let mut line = text[..text.len() - body.len()].to_string();
    let mut empty = true;
    for word in body.split_whitespace() {
        if !empty && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = " ".repeat(indent);
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// One action's consequence as text lines: `head` then Ironic, Machine, Afterwards, wrapped.
pub fn consequence_text(head: &str, k: &Consequence, width: usize) -> String {
    let pad = " ".repeat(head.chars().count());
    let indent = pad.len() + 2;
    let mut out = wrap(&format!("{head}Ironic: {}", k.ironic), width, indent);
    out.push_str(&wrap(&format!("{pad}Machine: {}", k.machine), width, indent));
    out.push_str(&wrap(&format!("{pad}Afterwards: {}", k.afterwards), width, indent));
    out
}

/// The counts of a load, one table for both loaders (`created`/`errors` named as each loader means them).
pub fn print_counts(s: &LoadSummary, created: &str, errors: &str, time: String) {
    let mut t = Table::new(&[
        ("read", true),
        (created, true),
        ("skipped", true),
        ("already", true),
        ("maintenance", true),
        ("ports", true),
        (errors, true),
        ("time", true),
    ]);
    t.row(vec![
        s.read.to_string(),
        s.created.to_string(),
        s.skipped.to_string(),
        s.already_migrated.to_string(),
        s.maintenance.to_string(),
        s.ports.to_string(),
        s.errors.to_string(),
        time,
    ]);
    print(&t.render());
}

/// A plan with unresolved blocking conflicts: the conflicts as events (`--json`) or the plan's text.
pub fn print_blocking(p: &Plan, json_out: bool) {
    if json_out {
        for c in p.conflicts.iter().filter(|c| c.is_unresolved_blocking()) {
            print_json(&json!({"event": "conflict", "code": c.code, "node_uuid": c.node_uuid, "detail": c.detail}));
        }
        print_json(&json!({"event": "summary", "committed": false, "blocking": p.blocking(), "created": 0}));
    } else {
        print_plan(p);
    }
}

/// Checks, before anything is read or written, that `--report FILE` can be written: a report that
/// fails only after the commit would leave the operator with a committed load and no report.
pub fn check_report_path(report: Option<&Path>) -> Result<(), Failure> {
    let Some(path) = report else { return Ok(()) };
    let refuse = |why: String| {
        Failure::usage(format!(
            "--report {}: {why}: nothing was done (name a file in a directory you can write)",
            path.display()
        ))
    };
    if path.is_dir() {
        return Err(refuse("is a directory".into()));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(refuse(format!("the directory {} does not exist", dir.display())));
    }
    if path.exists() {
        // opened for writing without truncating: the old report stays until the new one replaces it
        std::fs::OpenOptions::new().write(true).open(path).map_err(|e| refuse(format!("cannot be written: {e}")))?;
        return Ok(());
    }
    let probe = dir.join(format!(".bm2ironic-report-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(refuse(format!("cannot create a file in {}: {e}", dir.display()))),
    }
}

/// Writes the run report when `--report` asks for one: the core's report of this outcome. `kept`:
/// once something stays in Ironic, a report that cannot be written where asked goes into this
/// directory instead and the command still succeeds (an exit code other than 0 would read as a
/// failed load); before, failing to write it is the command's failure.
pub fn write_report(
    args: &MigrateArgs,
    settings: &ConnectionSettings,
    planned: &Planned,
    outcome: &Outcome,
    kept: Option<&Path>,
) -> Result<(), Failure> {
    let Some(path) = &args.report else { return Ok(()) };
    let resolutions = args.plan.resolutions.as_ref().map(|p| p.display().to_string());
    let input =
        ReportInput::new(settings, planned.plan(), planned.prepared.source.clone(), outcome).resolutions(resolutions);
    let report = Report::new(&input);
    let e = match report::write(&report, path) {
        Ok(()) => {
            // a run that did not start says so here too: the line must not read as a load that ran
            let started = !matches!(outcome.ended, crate::core::migrate::steps::Ended::NotStarted(_));
            let what = if started { "run report" } else { "run report (the run did not start: it says why)" };
            note(&format!("{what} written to {}", path.display()));
            return Ok(());
        }
        Err(e) => e,
    };
    let Some(dir) = kept else {
        return Err(Failure::runtime(format!("cannot write the report {}: {e}", path.display())));
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "report.md".into());
    let run = outcome.run_id().map_or_else(|| "run".to_string(), |r| r.to_string());
    let elsewhere = dir.join("reports").join(format!("{run}-{name}"));
    let kept =
        std::fs::create_dir_all(elsewhere.parent().unwrap_or(dir)).and_then(|_| report::write(&report, &elsewhere));
    let where_ = match kept {
        Ok(()) => format!("it was written to {} instead", elsewhere.display()),
        Err(e2) => {
            format!("nor to {} ({e2}): `bm2ironic verify --run RUN` gives its verification", elsewhere.display())
        }
    };
    note(&format!(
        "warning: the load is committed, but the report could not be written to {}: {e}; {where_}",
        path.display()
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns() {
        let mut t = Table::new(&[("ID", true), ("NAME", false), ("X", false)]);
        t.row(vec!["1".into(), "alpha".into(), "a".into()]);
        t.row(vec!["100".into(), "b".into(), "".into()]);
        assert_eq!(t.render(), " ID  NAME   X\n  1  alpha  a\n100  b\n");
    }

    /// `plan` says what each action of an undecided code does, in consequences.rs's words.
    #[test]
    fn the_plan_says_what_each_action_does() {
        use crate::core::ironic::target::{TargetKind, TargetSchema, TargetState};
        use crate::core::migrate::plan::{plan, PlanOptions};
        let f = crate::core::demo::fixture::Fixture::demo();
        let inv = crate::core::source::model::Inventory::join(f.nodes, f.interfaces);
        let target = TargetState { schema: TargetSchema::known(TargetKind::Modern), nodes: vec![], ports: vec![] };
        let opts = PlanOptions { default_arch: Some("x86_64".into()), ..Default::default() };
        let p = plan(&inv.into(), &target, None, &opts, &Default::default());
        let text = render_plan(&p);
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        for code in [ConflictCode::InvalidMac, ConflictCode::MidDeploy] {
            for a in code.actions() {
                let k = consequence(code, *a).unwrap();
                assert!(flat.contains(&format!("{a}: Ironic: {}", k.ironic)), "{code} {a}:\n{text}");
                assert!(flat.contains(&format!("Afterwards: {}", k.afterwards)), "{code} {a}:\n{text}");
            }
        }
        assert!(flat.contains(&format!("fix: {}", fix(ConflictCode::MissingDeployImages).unwrap())), "{text}");
    }

    #[test]
    fn wraps_words_with_a_hanging_indent() {
        assert_eq!(wrap("aaa bbb ccc ddd", 8, 2), "aaa bbb\n  ccc\n  ddd\n");
        assert_eq!(wrap("short", 80, 4), "short\n");
    }
}
