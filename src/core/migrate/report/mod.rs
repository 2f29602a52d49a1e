//! The run report for the change ticket (`migrate --report`, `s` on the wizard's summary), from plain
//! values: who, when, endpoints (redacted), plan checksum, every decision with its consequence, each
//! node's outcome, timings, verification, takeover, how to roll back; as Markdown or as JSON.

mod bmc;
mod markdown;
pub use bmc::{BmcRow, BmcSection};

use serde::Serialize;

use super::conflict::{Conflict, Subject};
use super::consequences::consequence;
use super::plan::Plan;
use super::run::RunKind;
use super::steps::outcome::{Ended, Outcome};
use super::timing::{human_ms, Phases};
use crate::core::db::url::{redact_url, DbUrl};
use crate::core::settings::{ConnectionSettings, Setting};

/// Who ran it.
#[derive(Debug, Clone, Serialize)]
pub struct Who {
    pub operator: String,
    pub host: String,
    pub tool: String,
}

impl Who {
    /// The operator ($USER or $LOGNAME, else the name of this process's user in /etc/passwd), this
    /// machine's name, and this build of bm2ironic.
    pub fn current() -> Who {
        let operator = std::env::var("USER")
            .or_else(|_| std::env::var("LOGNAME"))
            .ok()
            .filter(|u| !u.is_empty())
            .or_else(user_from_passwd)
            .unwrap_or_else(|| "?".into());
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .ok()
            .filter(|h| !h.is_empty())
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| "?".into());
        Who { operator, host, tool: format!("bm2ironic {}", env!("CARGO_PKG_VERSION")) }
    }
}

/// The name of this process's real user, from /proc/self/status and /etc/passwd (Linux).
fn user_from_passwd() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let uid = status.lines().find_map(|l| l.strip_prefix("Uid:"))?.split_whitespace().next()?.to_string();
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.get(2) == Some(&uid.as_str()))?
        .first()
        .map(|n| n.to_string())
}

/// A takeover error record, and the node it names (None: it names none).
#[derive(Debug, Clone, Serialize)]
pub struct TakeoverNote {
    pub node_uuid: Option<String>,
    pub text: String,
}

/// Everything the report is made from (URLs may hold passwords: the report redacts them). Made by
/// [`ReportInput::new`] from the settings, the plan and the outcome, as every face makes it; the
/// wizard adds what only it saw with the builder methods.
pub struct ReportInput<'a> {
    pub who: Who,
    pub plan: &'a Plan,
    pub source: String,
    pub target: String,
    pub nova: Option<String>,
    pub nova_api: Option<String>,
    pub ironic_api: Option<String>,
    pub outcome: &'a Outcome,
    pub phases: Phases,
    /// None: the takeover was not watched
    pub takeover: Option<Vec<TakeoverNote>>,
    /// the flavor change applied for this migration (its change set)
    pub flavors_change_set: Option<String>,
    /// where the decisions were saved (to replay them)
    pub resolutions_file: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub who: Who,
    pub when: When,
    pub run: Run,
    pub endpoints: Endpoints,
    pub plan: PlanFacts,
    pub decisions: Vec<DecisionRow>,
    pub nodes: Vec<NodeRow>,
    pub timings: Timings,
    pub verify: Section,
    pub takeover: Takeover,
    pub rollback: Vec<String>,
    /// what `--check-bmc` read before the plan (None: not checked)
    pub bmc: Option<BmcSection>,
}

#[derive(Debug, Clone, Serialize)]
pub struct When {
    /// UTC, RFC 3339; None when the load did not start
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Run {
    pub id: Option<String>,
    pub mode: &'static str,
    pub committed: bool,
    pub outcome: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Endpoints {
    pub nova_bm: String,
    pub ironic: String,
    pub ironic_schema: String,
    pub nova: Option<String>,
    pub nova_api: Option<String>,
    pub ironic_api: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PlanFacts {
    pub checksum: String,
    pub nodes_read: usize,
    pub create: usize,
    pub skip: usize,
    pub already_migrated: usize,
    pub maintenance: usize,
    pub ports: usize,
    pub warnings: Vec<String>,
    pub resolutions_file: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DecisionRow {
    pub code: String,
    pub about: String,
    pub node_uuid: Option<String>,
    pub detail: String,
    /// None: undecided
    pub action: Option<String>,
    pub decided_by: Option<&'static str>,
    /// what the action does (Ironic, machine, afterwards)
    pub consequence: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct NodeRow {
    pub nova_bm_id: i64,
    pub uuid: Option<String>,
    pub host: Option<String>,
    pub plan: String,
    pub outcome: String,
    pub provision_state: Option<String>,
    pub maintenance_reason: Option<String>,
    pub ports: usize,
    pub conflicts: Vec<String>,
    /// how the instance boots after the takeover (docs/mapping.md 2.12), for nodes written with one
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_boot: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Timings {
    pub phases: Phases,
    /// the load, from its start to the end of its commit or rollback
    pub elapsed_ms: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Section {
    pub ran: bool,
    pub ok: bool,
    pub text: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Takeover {
    pub watched: bool,
    pub errors: Vec<TakeoverNote>,
}

fn at(t: chrono::NaiveDateTime) -> String {
    t.and_utc().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn about(c: &Conflict) -> String {
    match &c.subject {
        Subject::Node { nova_bm_id } => format!("nova_bm node {nova_bm_id}"),
        Subject::Interface { nova_bm_id, interface_id } => {
            format!("nova_bm node {nova_bm_id}, interface {interface_id}")
        }
        Subject::Host { host } => format!("host {host}"),
        Subject::Run => "the run".into(),
    }
}

fn wire<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
}

impl<'a> ReportInput<'a> {
    /// The report of a migration: where it read and wrote as the settings say (redacted), the plan
    /// it loaded, and how it ended.
    pub fn new(settings: &ConnectionSettings, plan: &'a Plan, source: String, outcome: &'a Outcome) -> ReportInput<'a> {
        let url = |s: &Option<Setting<DbUrl>>| s.as_ref().map(|s| s.value.redacted().to_string());
        let api = settings.ironic_url.as_ref().map(|u| redact_url(&u.value));
        ReportInput {
            who: Who::current(),
            plan,
            source,
            target: url(&settings.ironic_db)
                .or_else(|| api.as_ref().map(|u| format!("the Ironic API at {u}")))
                .unwrap_or_default(),
            nova: url(&settings.nova_db),
            nova_api: url(&settings.nova_api_db),
            ironic_api: api,
            outcome,
            phases: outcome.phases,
            takeover: None,
            flavors_change_set: None,
            resolutions_file: None,
        }
    }

    /// The takeover errors the wizard saw in the followed logs.
    pub fn takeover(mut self, notes: Vec<TakeoverNote>) -> Self {
        self.takeover = Some(notes);
        self
    }

    /// The flavor change applied for this migration.
    pub fn flavors(mut self, change_set: Option<String>) -> Self {
        self.flavors_change_set = change_set;
        self
    }

    /// Where the decisions were saved (to replay them).
    pub fn resolutions(mut self, file: Option<String>) -> Self {
        self.resolutions_file = file;
        self
    }

    /// Each phase's time as the face measured it (the wizard's plan is its last replan).
    pub fn phases(mut self, phases: Phases) -> Self {
        self.phases = phases;
        self
    }
}

/// How to undo what the run left, in the outcome's own terms.
fn rollback_advice(plan: &Plan, outcome: &Outcome) -> Vec<String> {
    let mut out = Vec::new();
    let id = outcome.run_id().map(|r| r.to_string()).unwrap_or_else(|| "RUN".into());
    let (created, ports) = outcome.summary.as_ref().map_or((0, 0), |s| (s.created, s.ports));
    match &outcome.ended {
        Ended::Committed => {
            out.push(format!(
                "`bm2ironic rollback --run {id}` removes the {created} nodes and {ports} ports this run wrote, in one transaction; it refuses if Ironic has changed them since (`--force` overrides)."
            ));
            let replaced: Vec<String> =
                plan.nodes.iter().filter(|n| n.replaces.is_some()).filter_map(|n| n.uuid.clone()).collect();
            if !replaced.is_empty() {
                out.push(format!(
                    "The Ironic nodes this run replaced cannot be brought back by a rollback ({}): restore them from the database dump taken before the load.",
                    replaced.join(", ")
                ));
            }
            out.push("Before a rollback: stop Ironic's conductor and the Ironic nova-compute; after it, restart the baremetal nova-computes (runbook, steps 6-9).".into());
        }
        _ if outcome.kind == RunKind::Api && outcome.left_something() => out.push(format!(
            "`bm2ironic rollback --run {id}` puts the nodes this run created in maintenance and deletes them through the Ironic API (no power action, no teardown); it leaves alone a node Ironic had before, or another run's."
        )),
        Ended::Rehearsed => out.push("Nothing to roll back: the rehearsal rolled its transaction back.".into()),
        Ended::RolledBack(_) => out.push("Nothing to roll back: the transaction was rolled back, nothing stayed.".into()),
        Ended::NotStarted(_) => out.push("Nothing to roll back: nothing was written.".into()),
        _ => out.push("Nothing to roll back: nothing was written.".into()),
    }
    out
}

impl Report {
    pub fn new(input: &ReportInput) -> Report {
        let (plan, o) = (input.plan, input.outcome);
        let loaded = o.summary.as_ref();
        let mode = match &o.ended {
            Ended::Rehearsed => "REHEARSAL",
            Ended::NotStarted(_) => "-",
            _ => "LIVE",
        };
        let outcome = o.line();
        let redact = |v: &Option<String>| v.as_deref().map(redact_url);
        let decisions = plan
            .conflicts
            .iter()
            .map(|c| DecisionRow {
                code: c.code.to_string(),
                about: about(c),
                node_uuid: c.node_uuid.clone(),
                detail: c.detail.clone(),
                action: c.action.map(|a| a.to_string()),
                decided_by: c.decided_by,
                consequence: c.action.and_then(|a| consequence(c.code, a)).map(|k| k.sentence()),
            })
            .collect();
        let nodes = plan
            .nodes
            .iter()
            .map(|n| (n, n.write.filter(|w| w.maintenance).and_then(|_| plan.rows(n))))
            .map(|(n, maint)| NodeRow {
                nova_bm_id: n.nova_bm_id,
                uuid: n.uuid.clone(),
                host: n.service_host.clone(),
                plan: wire(&n.action),
                outcome: o.node_line(n),
                provision_state: n.write.and_then(|w| w.provision_state.map(String::from)),
                maintenance_reason: maint.and_then(|r| r.node.maintenance_reason),
                ports: n.write.map_or(0, |w| w.ports),
                conflicts: n.conflicts.iter().map(|c| c.to_string()).collect(),
                next_boot: n.next_boot.as_ref().filter(|_| n.write.is_some()).map(|b| b.line(input.plan.target.kind)),
            })
            .collect();
        let verify = match &o.verify {
            None => Section {
                ran: false,
                ok: false,
                text: if o.left_something() {
                    "`bm2ironic verify --run RUN` compares every field and port".into()
                } else {
                    "nothing was committed".into()
                },
            },
            Some(Ok(v)) => match verify_text(v) {
                Ok(t) => Section { ran: true, ok: true, text: t },
                Err(t) => Section { ran: true, ok: false, text: t },
            },
            Some(Err(e)) => Section { ran: true, ok: false, text: e.clone() },
        };
        let run_id = o.reported_run().map(|r| r.to_string());
        let mut rollback = rollback_advice(plan, o);
        if let Some(set) = &input.flavors_change_set {
            rollback.push(format!(
                "The flavors: `bm2ironic flavors --restore --change-set {set}` (a rollback given the Nova API or Nova database does it too)."
            ));
        }
        Report {
            who: input.who.clone(),
            when: When { started_at: loaded.map(|s| at(s.started_at)), finished_at: loaded.map(|s| at(s.finished_at)) },
            run: Run { id: run_id, mode, committed: o.complete(), outcome },
            endpoints: Endpoints {
                nova_bm: redact_url(&input.source),
                ironic: redact_url(&input.target),
                ironic_schema: format!("{:?} Ironic (schema {})", plan.target.kind, plan.target.schema),
                nova: redact(&input.nova),
                nova_api: redact(&input.nova_api),
                ironic_api: redact(&input.ironic_api),
            },
            plan: PlanFacts {
                checksum: plan.checksum.clone(),
                nodes_read: plan.nodes.len(),
                create: plan.summary.create,
                skip: plan.summary.skip,
                already_migrated: plan.summary.already_migrated,
                maintenance: plan.summary.maintenance,
                ports: plan.summary.ports,
                warnings: plan.warnings.clone(),
                resolutions_file: input.resolutions_file.clone(),
            },
            decisions,
            nodes,
            timings: Timings { phases: input.phases, elapsed_ms: loaded.map(|s| s.elapsed_ms) },
            verify,
            takeover: Takeover {
                watched: input.takeover.is_some(),
                errors: input.takeover.clone().unwrap_or_default(),
            },
            rollback,
            bmc: bmc::section(plan),
        }
    }

    pub fn json(&self) -> String {
        // control, bidi and zero-width characters as \u escapes, registered secrets scrubbed
        crate::core::text::json::to_pretty(self) + "\n"
    }
}

/// The section headings every Markdown report has, in order.
pub const SECTIONS: [&str; 9] = [
    "## Who and when",
    "## Source and target",
    "## Plan",
    "## Decisions",
    "## Nodes",
    "## Timings",
    "## Verification",
    "## Takeover",
    "## How to roll back",
];

/// What a verification found, in one sentence: Ok when nothing differs.
pub fn verify_text(v: &super::verify::VerifyReport) -> Result<String, String> {
    match v.differences.first() {
        None => Ok(format!("{} nodes, {} ports checked against {}: no differences", v.nodes_checked, v.ports_checked, v.against())),
        Some(d) => Err(format!(
            "{} difference(s) (`bm2ironic verify --run {}` lists them), e.g. node {} {} against the {}: expected '{}', found '{}'",
            v.differences.len(),
            v.run_id,
            d.uuid,
            d.field,
            d.against,
            d.expected,
            d.found
        )),
    }
}

/// Writes the report to `path`: JSON when it ends in `.json`, Markdown otherwise.
pub fn write(report: &Report, path: &std::path::Path) -> std::io::Result<()> {
    let json = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
    std::fs::write(path, if json { report.json() } else { report.markdown() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ironic::target::{TargetKind, TargetSchema, TargetState};
    use crate::core::migrate::plan::{plan, PlanOptions};

    fn demo_plan() -> Plan {
        let f = crate::core::demo::fixture::Fixture::demo();
        let inv = crate::core::source::model::Inventory::join(f.nodes, f.interfaces);
        let target = TargetState { schema: TargetSchema::known(TargetKind::Modern), nodes: vec![], ports: vec![] };
        let opts = PlanOptions { default_arch: Some("x86_64".into()), ..Default::default() };
        plan(&inv.into(), &target, None, &opts, &Default::default())
    }

    #[test]
    fn a_report_that_did_not_start_says_why_and_hides_passwords() {
        let p = demo_plan();
        let outcome = Outcome {
            kind: RunKind::Sql,
            ended: Ended::NotStarted(crate::core::migrate::steps::StepError::Blocking { count: 7, kind: RunKind::Sql }),
            summary: None,
            run: None,
            verify: None,
            phases: Phases { read_ms: Some(3.0), plan_ms: Some(1.0), ..Default::default() },
        };
        let input = ReportInput {
            who: Who { operator: "ops".into(), host: "bastion".into(), tool: "bm2ironic test".into() },
            plan: &p,
            source: "mysql+pymysql://nova:s3cret@db/nova_bm".into(),
            target: "postgresql://ironic:t0psecret@db/ironic".into(),
            nova: Some("mysql://nova:n0va@db/nova".into()),
            nova_api: None,
            ironic_api: None,
            outcome: &outcome,
            phases: outcome.phases,
            takeover: None,
            flavors_change_set: None,
            resolutions_file: None,
        };
        let r = Report::new(&input);
        let md = r.markdown();
        let json = r.json();
        for secret in ["s3cret", "t0psecret", "n0va"] {
            assert!(!md.contains(secret) && !json.contains(secret), "{secret} leaked");
        }
        for s in SECTIONS {
            assert!(md.contains(s), "{s} missing:\n{md}");
        }
        assert!(md.contains("not started: 7 blocking conflict(s) unresolved"), "{md}");
        assert!(md.contains("**UNDECIDED**") && md.contains("Nothing to roll back"), "{md}");
        assert!(md.contains("Not run: nothing was committed"), "{md}");
        assert_eq!(crate::core::text::doubled_words(&md), Vec::<String>::new(), "{md}");
        assert_eq!(r.nodes.len(), p.nodes.len());
        let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(doc["plan"]["checksum"], p.checksum);
    }
    use crate::core::migrate::events::LoadSummary;
    use crate::core::migrate::run::RunId;
    use crate::core::migrate::steps::outcome::NodeLeft;
    use crate::core::migrate::steps::StepError;

    fn outcome(p: &Plan, kind: RunKind, ended: Ended) -> Outcome {
        let run = RunId::new();
        let mut s = LoadSummary::begin(p, &run, matches!(ended, Ended::Rehearsed));
        s.created = 3;
        s.committed = matches!(ended, Ended::Committed | Ended::Adopted);
        let loaded = !matches!(ended, Ended::NotStarted(_) | Ended::RolledBack(_));
        Outcome { kind, ended, summary: loaded.then_some(s), run: Some(run), verify: None, phases: Default::default() }
    }

    /// Every ending, through the report both faces write (the CLI's `--report`, the wizard's `s`):
    /// its outcome line, a written node's line, whether it is committed, and what the rollback
    /// advice says. A partial load through the API is never "one transaction" nor "rolled back".
    #[test]
    fn each_ending_says_what_stayed_in_ironic() {
        let p = demo_plan();
        let written = p.to_write().next().expect("a node to write").clone();
        let uuid = written.uuid.clone().unwrap();
        let settings = crate::core::settings::ConnectionSettings::default();
        let left =
            vec![NodeLeft { uuid: uuid.clone(), nova_bm_id: written.nova_bm_id, state: "failed (manageable)".into() }];
        let cases = [
            (RunKind::Sql, Ended::Committed, "committed: 3 nodes", "written", true, "in one transaction"),
            (
                RunKind::Sql,
                Ended::Rehearsed,
                "rehearsal: 3 nodes",
                "written, then rolled back",
                false,
                "rehearsal rolled",
            ),
            (
                RunKind::Sql,
                Ended::RolledBack(StepError::Refused("cancelled".into())),
                "failed and rolled back, the target is as it was: cancelled",
                "not written: the load failed",
                false,
                "nothing stayed",
            ),
            (
                RunKind::Api,
                Ended::Adopted,
                "done through the Ironic API: 3 nodes",
                "written through the API",
                true,
                "through the Ironic API",
            ),
            (
                RunKind::Api,
                Ended::PartlyAdopted {
                    failed: vec![(uuid.clone(), "adopt failed: no image".into())],
                    interrupted: false,
                    left: left.clone(),
                },
                "partly done through the Ironic API: 3 nodes changed, 1 failed; 1 node(s) of this run are in Ironic",
                "failed through the API, left where it is: adopt failed: no image",
                false,
                "through the Ironic API",
            ),
            (
                RunKind::Api,
                Ended::Stopped { error: StepError::Refused("Ironic stopped answering".into()), left },
                "stopped part-way through the Ironic API: 1 node(s) left in Ironic",
                "not finished, left in Ironic in state failed (manageable)",
                false,
                "through the Ironic API",
            ),
            (
                RunKind::Api,
                Ended::NotStarted(StepError::Refused("not confirmed".into())),
                "not started: not confirmed",
                "not written: the load did not start",
                false,
                "nothing was written",
            ),
        ];
        for (kind, ended, line, node, committed, rollback) in cases {
            let o = outcome(&p, kind, ended);
            let input = ReportInput::new(&settings, &p, "src".into(), &o);
            let r = Report::new(&input);
            assert!(r.run.outcome.starts_with(line), "{:?}: {}", o.ended, r.run.outcome);
            let row = r.nodes.iter().find(|n| n.uuid.as_deref() == Some(uuid.as_str())).unwrap();
            assert!(row.outcome.starts_with(node), "{:?}: {}", o.ended, row.outcome);
            assert_eq!(r.run.committed, committed, "{:?}", o.ended);
            assert!(r.rollback.iter().any(|l| l.contains(rollback)), "{:?}: {:?}", o.ended, r.rollback);
            if kind == RunKind::Api {
                assert!(
                    !r.run.outcome.contains("transaction") && !r.rollback.iter().any(|l| l.contains("one transaction")),
                    "{:?}",
                    o.ended
                );
            }
            assert_eq!(o.failure().is_none(), o.complete() || o.rehearsal(), "{:?}", o.ended);
        }
    }
}
