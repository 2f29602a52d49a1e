//! The run report written as Markdown (the change ticket's text); `mod.rs` builds it.

use super::*;
use crate::core::text::{shown, visible_line};

impl Report {
    pub fn markdown(&self) -> String {
        let mut o = String::new();
        // every line through the text discipline (redacted, controls shown): the values in it were
        // made one line each where they are put in (`one`, `cell`), so a value cannot start a line
        let mut line = |s: String| {
            o.push_str(&shown(&s));
            o.push('\n');
        };
        let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
        line(format!("# bm2ironic run report: {}", opt(&self.run.id)));
        line(String::new());
        line(format!("**Outcome:** {} ({})", self.run.outcome, self.run.mode));
        line(String::new());
        line("## Who and when".into());
        line(String::new());
        line(format!("- Operator: {} on {}", self.who.operator, self.who.host));
        line(format!("- Tool: {}", self.who.tool));
        line(format!("- Load started: {}", opt(&self.when.started_at)));
        line(format!("- Load finished: {}", opt(&self.when.finished_at)));
        line(String::new());
        line("## Source and target".into());
        line(String::new());
        let e = &self.endpoints;
        line(format!("- nova_bm (read only): `{}`", e.nova_bm));
        line(format!("- Ironic database: `{}`, {}", e.ironic, e.ironic_schema));
        for (what, v) in [("Nova database", &e.nova), ("Nova API database", &e.nova_api), ("Ironic API", &e.ironic_api)]
        {
            line(format!("- {what}: {}", v.as_deref().map(|v| format!("`{v}`")).unwrap_or_else(|| "not given".into())));
        }
        line(String::new());
        line("## Plan".into());
        line(String::new());
        let p = &self.plan;
        line(format!("- Checksum: `{}`", p.checksum));
        line(format!(
            "- {} nodes read: {} to write ({} in maintenance), {} skipped, {} already migrated; {} ports",
            p.nodes_read, p.create, p.maintenance, p.skip, p.already_migrated, p.ports
        ));
        if let Some(r) = &p.resolutions_file {
            line(format!("- Decisions saved in `{r}` (replay: `bm2ironic migrate --resolutions FILE`)"));
        }
        for w in &p.warnings {
            line(format!("- Warning: {}", one(w)));
        }
        line(String::new());
        line(format!("## Decisions ({})", self.decisions.len()));
        line(String::new());
        if self.decisions.is_empty() {
            line("No conflicts: every node went as planned.".into());
        }
        for d in &self.decisions {
            let who = match &d.node_uuid {
                Some(u) => format!("{} (`{}`)", one(&d.about), one(u)),
                None => one(&d.about),
            };
            let action = match (&d.action, d.decided_by) {
                (Some(a), Some(by)) => format!("**{a}** (decided by {by})"),
                (Some(a), None) => format!("**{a}**"),
                _ => "**UNDECIDED**".into(),
            };
            line(format!("- `{}`, {who}: {}. Action: {action}.", d.code, one(&d.detail)));
            if let Some(c) = &d.consequence {
                line(format!("  {}", one(c)));
            }
        }
        line(String::new());
        line(format!("## Nodes ({})", self.nodes.len()));
        line(String::new());
        line("| nova_bm | uuid | host | plan | outcome | state | ports | maintenance reason |".into());
        line("|---:|---|---|---|---|---|---:|---|".into());
        for n in &self.nodes {
            line(format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                n.nova_bm_id,
                cell(&opt(&n.uuid)),
                cell(&opt(&n.host)),
                n.plan,
                cell(&n.outcome),
                cell(&opt(&n.provision_state)),
                n.ports,
                cell(&n.maintenance_reason.clone().unwrap_or_default())
            ));
        }
        let boots: Vec<&NodeRow> = self.nodes.iter().filter(|n| n.next_boot.is_some()).collect();
        if !boots.is_empty() {
            line(String::new());
            line("Next boot of each instance (`local boot (operator)`: the operator's word, not checked):".into());
            line(String::new());
            for n in boots {
                line(format!("- {}: {}", cell(&opt(&n.uuid)), cell(n.next_boot.as_deref().unwrap_or_default())));
            }
        }
        line(String::new());
        line("## Timings".into());
        line(String::new());
        line("| phase | wall time |".into());
        line("|---|---:|".into());
        for (name, ms) in self.timings.phases.list() {
            line(format!("| {name} | {} |", human_ms(ms)));
        }
        if let Some(ms) = self.timings.elapsed_ms {
            line(format!("| the load, start to end of commit | {} |", human_ms(ms)));
        }
        line(String::new());
        line("## Verification".into());
        line(String::new());
        let v = &self.verify;
        line(format!(
            "{}: {}",
            if !v.ran {
                "Not run"
            } else if v.ok {
                "OK"
            } else {
                "FAILED"
            },
            v.text
        ));
        self.takeover_and_after(&mut line);
        o
    }

    /// The BMC check (when one ran), the takeover, and how to roll back.
    fn takeover_and_after(&self, line: &mut dyn FnMut(String)) {
        if let Some(b) = &self.bmc {
            line(String::new());
            line("## BMC check (`--check-bmc`)".into());
            line(String::new());
            line(one(&b.summary));
            line(String::new());
            line("| nova_bm | pm_address | pm_user | read | system GUID | read at |".into());
            line("|---:|---|---|---|---|---|".into());
            for r in &b.readings {
                let guid = r.guid.clone().unwrap_or_else(|| "-".into());
                let row = [cell(&r.address), cell(&r.user), cell(&r.read), cell(&guid), cell(&r.read_at)];
                line(format!("| {} | {} |", r.nova_bm_id, row.join(" | ")));
            }
        }
        line(String::new());
        line("## Takeover".into());
        line(String::new());
        if !self.takeover.watched {
            line("Not watched during this run: `bm2ironic verify --takeover --ironic-url URL --log ironic=PATH` checks every node.".into());
        } else if self.takeover.errors.is_empty() {
            line("No takeover error in the logs followed.".into());
        } else {
            line(format!("{} error record(s) in the logs followed:", self.takeover.errors.len()));
            line(String::new());
            for t in &self.takeover.errors {
                let node = t.node_uuid.as_deref().map(|u| format!("`{u}`")).unwrap_or_else(|| "(no node named)".into());
                line(format!("- {node}: {}", one(&t.text)));
            }
        }
        line(String::new());
        line("## How to roll back".into());
        line(String::new());
        for r in &self.rollback {
            line(format!("- {r}"));
        }
    }
}

/// A value on one line of Markdown: newlines, controls, bidi and zero-width characters shown visibly.
fn one(s: &str) -> String {
    visible_line(s).into_owned()
}

/// A Markdown table cell: one line, no pipes.
fn cell(s: &str) -> String {
    visible_line(s).replace('|', "\\|")
}
