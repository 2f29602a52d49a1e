//! The run report (`migrate --report FILE`) on the demo sandbox: every section holds what the run
//! did (who, when, endpoints, plan checksum, each decision with its consequence, each node's
//! outcome, timings, verification, takeover, how to roll back, and that way back works), as
//! Markdown and as JSON; and the sample in docs/ has the same sections.

use bm2ironic::core::demo::sandbox::{self, Sandbox};
use bm2ironic::core::migrate::conflict::{Action, ConflictCode};
use bm2ironic::core::migrate::consequences::consequence;
use bm2ironic::core::migrate::report::SECTIONS;

use crate::common::{bm, Outcome};

const RESOLVE: [&str; 7] = [
    "invalid-mac=skip-port",
    "duplicate-mac=skip-port",
    "missing-uuid=generate",
    "mid-deploy=maintenance",
    "failed-deploy=maintenance",
    "instance-missing-in-nova=free",
    "missing-bmc=maintenance",
];

fn run(sb: &Sandbox, logs: &std::path::Path, args: &[&str], resolve: bool) -> Outcome {
    let plan_flags = args[0] != "rollback";
    let mut c = bm(args)
        .logs(logs)
        .env("BM2IRONIC_NOVA_BM_DB", &sb.nova_bm_url)
        .env("BM2IRONIC_IRONIC_DB", &sb.ironic_url)
        .env("BM2IRONIC_NOVA_DB", &sb.nova_url)
        .env("BM2IRONIC_NOVA_API_DB", &sb.nova_api_url)
        .env("BM2IRONIC_TFTP_ROOT", &sb.tftp_root)
        .env("USER", "ops-on-call");
    if plan_flags {
        c = c.args([
            "--default-arch",
            "x86_64",
            "--deploy-kernel",
            &sb.deploy_kernel,
            "--deploy-ramdisk",
            &sb.deploy_ramdisk,
        ]);
    }
    if resolve {
        for r in RESOLVE {
            c = c.args(["--resolve", r]);
        }
    }
    c.run()
}

/// The text between a section's heading and the next one.
fn section<'a>(md: &'a str, heading: &str) -> &'a str {
    let start = md.find(heading).unwrap_or_else(|| panic!("{heading} missing:\n{md}"));
    let rest = &md[start + heading.len()..];
    &rest[..rest.find("\n## ").unwrap_or(rest.len())]
}

#[tokio::test(flavor = "multi_thread")]
async fn migrate_report_has_every_section() {
    let tmp = tempfile::tempdir().unwrap();
    let sb = sandbox::build(&tmp.path().join("sb")).await.unwrap();
    let logs = tmp.path().join("logs");
    let plan = run(&sb, &logs, &["plan", "--json"], true);
    assert!(plan.success(), "{}", plan.stderr);
    let plan: serde_json::Value = serde_json::from_str(&plan.stdout).unwrap();

    let before = chrono::Utc::now() - chrono::Duration::seconds(1);
    let path = tmp.path().join("run.md");
    let out = run(&sb, &logs, &["migrate", "--yes", "--report", path.to_str().unwrap()], true);
    assert!(out.success(), "{}", out.stderr);
    let after = chrono::Utc::now() + chrono::Duration::seconds(1);
    let md = std::fs::read_to_string(&path).unwrap();
    let mut at = 0;
    for s in SECTIONS {
        let i = md[at..].find(s).unwrap_or_else(|| panic!("{s} missing or out of order:\n{md}"));
        at += i;
    }
    let run_id = md.lines().next().unwrap().strip_prefix("# bm2ironic run report: ").unwrap().to_string();
    assert_eq!(run_id.len(), 36, "{md}");
    assert!(md.contains("**Outcome:** committed: 35 nodes and 58 ports written in one transaction (LIVE)"), "{md}");

    let who = section(&md, "## Who and when");
    assert!(who.contains("- Operator: ops-on-call on "), "{who}");
    for key in ["- Load started: ", "- Load finished: "] {
        let t = who.lines().find_map(|l| l.strip_prefix(key)).unwrap();
        let t = chrono::DateTime::parse_from_rfc3339(t).unwrap();
        assert!(t >= before && t <= after, "{key}{t}");
    }

    let ends = section(&md, "## Source and target");
    for url in [&sb.nova_bm_url, &sb.ironic_url, &sb.nova_url, &sb.nova_api_url] {
        assert!(ends.contains(&format!("`{url}`")), "{url}: {ends}");
    }
    assert!(ends.contains("Modern Ironic") && ends.contains("- Ironic API: not given"), "{ends}");

    let p = section(&md, "## Plan");
    assert!(p.contains(&format!("- Checksum: `{}`", plan["checksum"].as_str().unwrap())), "{p}");
    assert!(p.contains("36 nodes read: 35 to write (3 in maintenance), 1 skipped"), "{p}");

    let decisions = section(&md, "## Decisions");
    let conflicts = plan["conflicts"].as_array().unwrap();
    assert!(decisions.starts_with(&format!(" ({})", conflicts.len())), "{decisions}");
    for c in conflicts {
        let code: ConflictCode = c["code"].as_str().unwrap().parse().unwrap();
        let action: Action = serde_json::from_value(c["action"].clone()).unwrap();
        let item = format!("- `{code}`, ");
        assert!(decisions.contains(&item), "{code}: {decisions}");
        assert!(decisions.contains(&format!("Action: **{action}**")), "{code} {action}: {decisions}");
        assert!(decisions.contains(&consequence(code, action).unwrap().sentence()), "{code} {action}: {decisions}");
    }

    let nodes = section(&md, "## Nodes");
    for n in plan["nodes"].as_array().unwrap() {
        let row = format!("| {} | {} |", n["nova_bm_id"], n["uuid"].as_str().unwrap_or("-"));
        let line = nodes.lines().find(|l| l.starts_with(&row)).unwrap_or_else(|| panic!("{row}: {nodes}"));
        let want = match n["action"].as_str().unwrap() {
            "create" => "| written |",
            "skip" => "| not written: skipped (deleted-node) |",
            other => panic!("{other}"),
        };
        assert!(line.contains(want), "{line}");
    }
    assert!(
        nodes.contains("bm2ironic: nova_bm task_state was 'building' (deploy not finished) at migration"),
        "{nodes}"
    );

    let timings = section(&md, "## Timings");
    for phase in ["read", "plan", "load", "commit", "verify"] {
        assert!(timings.contains(&format!("| {phase} | ")), "{phase}: {timings}");
    }
    assert!(section(&md, "## Verification")
        .contains("OK: 35 nodes, 58 ports checked against the database and nova_bm: no differences"));
    assert!(section(&md, "## Takeover").contains("Not watched during this run"));

    let back = section(&md, "## How to roll back");
    let cmd = format!("`bm2ironic rollback --run {run_id}`");
    assert!(back.contains(&cmd), "{back}");
    // the way back the report gives works
    let out = run(&sb, &logs, &["rollback", "--yes", "--run", &run_id], false);
    assert!(out.success(), "{}", out.stderr);
    assert!(out.stdout.contains("removed 35 nodes and 58 ports"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_json_report_of_a_rehearsal_and_a_report_of_a_refused_run() {
    let tmp = tempfile::tempdir().unwrap();
    let sb = sandbox::build(&tmp.path().join("sb")).await.unwrap();
    let logs = tmp.path().join("logs");
    let path = tmp.path().join("rehearsal.json");
    let out = run(&sb, &logs, &["migrate", "--rehearse", "--report", path.to_str().unwrap()], true);
    assert!(out.success(), "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(doc["run"]["mode"], "REHEARSAL");
    assert_eq!(doc["run"]["committed"], false);
    assert_eq!(doc["nodes"].as_array().unwrap().len(), 36);
    assert_eq!(doc["nodes"][0]["outcome"], "written, then rolled back (rehearsal)");
    assert_eq!(doc["verify"]["ran"], false);
    assert_eq!(doc["who"]["operator"], "ops-on-call");
    assert!(doc["timings"]["phases"]["commit_ms"].as_f64().unwrap() >= 0.0);
    assert!(doc["rollback"][0].as_str().unwrap().starts_with("Nothing to roll back"), "{doc}");
    assert!(doc["decisions"].as_array().unwrap().iter().all(|d| d["consequence"].is_string()), "{doc}");

    // blocking conflicts: nothing written, and the report says why and lists what is undecided
    let path = tmp.path().join("refused.md");
    let out = run(&sb, &logs, &["migrate", "--yes", "--report", path.to_str().unwrap()], false);
    assert_eq!(out.code, 3);
    let md = std::fs::read_to_string(&path).unwrap();
    assert!(md.contains("not started: 7 blocking conflict(s) unresolved"), "{md}");
    assert!(md.contains("**UNDECIDED**"), "{md}");
}

/// docs/sample-report.md is a report as `migrate --report` writes it: every section, in order.
#[test]
fn the_sample_report_in_docs_has_every_section() {
    let md = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/sample-report.md")).unwrap();
    assert!(md.starts_with("# bm2ironic run report: "), "regenerate it: see docs/sample-report.md's last line");
    let mut at = 0;
    for s in SECTIONS {
        at += md[at..].find(s).unwrap_or_else(|| panic!("docs/sample-report.md: {s} missing or out of order"));
    }
}
