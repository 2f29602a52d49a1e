//! `plan --check-bmc` / `migrate --check-bmc` (issue #51) against fake BMCs (scripts/fakebmcs.py, one
//! process serving them all, each logging every IPMI command it receives), with nova_bm, Nova and
//! Ironic on SQLite, MariaDB and PostgreSQL: a stale password, a BMC that never answers, a machine
//! off while Nova says its instance is ACTIVE, one machine enrolled twice, a user refused the
//! ADMINISTRATOR privilege, hostile addresses; each found, named with
//! ipmitool's own words and when it was read, no password shown; and no BMC received anything but
//! reads (no power action). docs/conflicts.md, "The BMC check's codes".

use serde_json::Value;

use crate::common::bmc::{BmcFarm, FarmBmc};
use crate::common::{bm, read_logs, server_env, Backend, Outcome, TestDb, IRONIC_VENV, STANDARD_RESOLUTIONS};
use bm2ironic::core::demo::fixture::Fixture;

/// What a read-only check may make a BMC receive: the session's own commands, what ipmitool asks on
/// opening one (device id, PICMG and VSO probes), and the two reads.
const READS: &[&str] = &[
    "set-session-privilege",
    "get-device-id",
    "get-picmg-properties",
    "get-vso-capabilities",
    "get-chassis-status",
    "get-system-guid",
    "close-session",
];

/// The GUID two BMCs of one machine answer with.
const ONE_MACHINE: &str = "5a5a5a5a-0000-4000-8000-000000000056";

/// Node `id`'s BMC address: a loopback address of each backend's own (the three run at once).
fn addr(backend: Backend, id: i64) -> String {
    let b = match backend {
        Backend::Sqlite => 61,
        Backend::MySql => 62,
        Backend::Postgres => 63,
    };
    format!("127.0.{b}.{id}")
}

/// Nodes 1-8 (`Fixture::generated`: instances on 3 and 6, password `bmc-Secret-ID`):
/// 1 free, off; 2 free, its BMC's password changed since enrolment; 3 off while Nova says its
/// instance is active; 4 a BMC that never answers; 5 and 6 one machine (one GUID, two addresses);
/// 7 and 8 hostile addresses with no BMC behind them (`hostile`); 9's BMC user is only an OPERATOR
/// (Ironic asks for ADMINISTRATOR).
fn bmcs(backend: Backend) -> Vec<FarmBmc> {
    let a = |id| addr(backend, id);
    let mut changed = FarmBmc::new(&a(2), "changed-Secret-2", "on");
    changed.user = "admin".into();
    let mut silent = FarmBmc::new(&a(4), "bmc-Secret-4", "on");
    silent.silent = true;
    let mut five = FarmBmc::new(&a(5), "bmc-Secret-5", "on");
    five.guid = Some(ONE_MACHINE.into());
    let mut six = FarmBmc::new(&a(6), "bmc-Secret-6", "on");
    six.guid = Some(ONE_MACHINE.into());
    let mut operator = FarmBmc::new(&a(9), "bmc-Secret-9", "on");
    operator.max_privilege = Some(3);
    let (one, three) = (FarmBmc::new(&a(1), "bmc-Secret-1", "off"), FarmBmc::new(&a(3), "bmc-Secret-3", "off"));
    vec![one, changed, three, silent, five, six, operator]
}

/// Node 7's `pm_address` holds a port (Ironic's `ipmi_address` takes none: ipmitool fails to
/// resolve it), node 8's begins with `-` (an option to ipmitool: never asked).
fn hostile(backend: Backend, id: i64) -> Option<String> {
    match id {
        7 => Some(format!("{}:623", addr(backend, 7))),
        8 => Some("-oProxyCommand=touch /tmp/bm2ironic-pwned".into()),
        _ => None,
    }
}

/// A Nova database holding the instances of nodes 3, 6 and 9, all ACTIVE.
async fn nova(backend: Backend) -> Option<TestDb> {
    let t = TestDb::create(backend, "bmcnova").await?;
    let q = if backend == Backend::MySql { '`' } else { '"' };
    t.exec("CREATE TABLE instances (id INTEGER NOT NULL PRIMARY KEY, uuid VARCHAR(36) NOT NULL, image_ref VARCHAR(255), root_gb INTEGER, ephemeral_gb INTEGER, node VARCHAR(255), host VARCHAR(255), vm_state VARCHAR(255), deleted INTEGER)").await;
    t.exec(&format!("CREATE TABLE services (id INTEGER NOT NULL PRIMARY KEY, host VARCHAR(255), {q}binary{q} VARCHAR(255), disabled BOOLEAN, deleted INTEGER, updated_at TIMESTAMP)")).await;
    for id in [3, 6, 9] {
        t.exec(&format!("INSERT INTO instances VALUES ({id}, 'aaaaaaaa-0000-4000-8000-{id:012}', 'image', 40, 0, 'bbbbbbbb-0000-4000-8000-{id:012}', 'bm-compute-1', 'active', 0)")).await;
    }
    Some(t)
}

/// The check as an operator runs it; each BMC given 10 s (the farm is one Python process: on a
/// loaded CI machine, 3 s once let node 5's session go unanswered, no command reaching its BMC).
fn check(src: &TestDb, nova: &TestDb, tgt: &TestDb, cmd: &[&str], logs: &std::path::Path) -> Outcome {
    bm(cmd.to_vec())
        .args(["--check-bmc", "--bmc-timeout", "10s", "--bmc-concurrency", "4", "--resolve", "unknown-boot=local-boot"])
        .args(STANDARD_RESOLUTIONS)
        .source(src)
        .nova(Some(nova))
        .target(tgt)
        .logs(logs)
        .run()
}

/// node id -> the BMC codes raised for it, and each detail.
fn findings(plan: &Value) -> Vec<(i64, String, String)> {
    let bmc = ["bmc-no-answer", "bmc-refused", "power-mismatch", "duplicate-bmc"];
    plan["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| bmc.contains(&c["code"].as_str().unwrap_or("")))
        .map(|c| {
            let id = c["subject"]["node"]["nova_bm_id"].as_i64().unwrap();
            (id, c["code"].as_str().unwrap().to_string(), c["detail"].as_str().unwrap().to_string())
        })
        .collect()
}

async fn stale_silent_off_and_twice_enrolled_bmcs_are_found_by_reads_alone(backend: Backend) {
    let Some(venv) = server_env(IRONIC_VENV) else { return };
    let mut fixture = Fixture::generated(9, 1);
    for n in &mut fixture.nodes {
        n.pm_address = Some(hostile(backend, n.id).unwrap_or_else(|| addr(backend, n.id)));
    }
    let Some(src) = TestDb::with_fixture(backend, "bmcsrc", &fixture).await else { return };
    let Some(nova) = nova(backend).await else { return };
    let Some(tgt) = TestDb::ironic(backend, "bmctgt").await else { return };
    let farm = BmcFarm::start(std::path::Path::new(&venv), bmcs(backend));
    let logs = tempfile::tempdir().unwrap();

    let out = check(&src, &nova, &tgt, &["plan", "--json"], logs.path());
    reads_only(&farm, backend, 1, &out.text());
    assert_eq!(out.code, 3, "duplicate-bmc blocks: {}", out.text());
    let plan = out.json();
    let found = findings(&plan);
    let codes: Vec<(i64, &str)> = found.iter().map(|(id, c, _)| (*id, c.as_str())).collect();
    assert_eq!(
        codes,
        [
            (2, "bmc-refused"),
            (3, "power-mismatch"),
            (4, "bmc-no-answer"),
            (5, "duplicate-bmc"),
            (6, "duplicate-bmc"),
            (7, "bmc-no-answer"),
            (8, "bmc-no-answer"),
            (9, "bmc-refused")
        ],
        "{found:#?}"
    );
    let detail = |id: i64| found.iter().find(|f| f.0 == id).unwrap().2.clone();
    assert!(detail(2).contains("credentials refused") && detail(2).contains("RAKP 2 HMAC is invalid"), "{}", detail(2));
    assert!(
        detail(2).contains(&format!("BMC {} as user 'admin'", addr(backend, 2))) && detail(2).contains(" UTC"),
        "{}",
        detail(2)
    );
    assert!(detail(3).contains("the machine is off while Nova says its instance runs"), "{}", detail(3));
    assert!(detail(4).contains("no answer"), "{}", detail(4));
    assert!(detail(5).contains(ONE_MACHINE) && detail(5).contains(&addr(backend, 6)), "{}", detail(5));
    // asked as Ironic would ask (and fails as it would), or not asked at all
    assert!(detail(7).contains(&format!("Address lookup for {}:623 failed", addr(backend, 7))), "{}", detail(7));
    assert!(detail(8).contains("not asked: pm_address") && detail(8).contains("begins with '-'"), "{}", detail(8));
    let refused = "privilege refused, read";
    assert!(detail(9).contains(refused) && detail(9).contains("Level to ADMINISTRATOR failed"), "{}", detail(9));
    // the facts: every node read once, when, within the bound
    let bmc = &plan["bmc"];
    assert_eq!(bmc["readings"].as_object().unwrap().len(), 9, "{bmc}");
    assert_eq!(bmc["readings"]["1"]["power"], "off");
    assert_eq!(bmc["readings"]["6"]["power"], "on");
    assert!(bmc["started_at"].is_string() && bmc["finished_at"].is_string(), "{bmc}");
    assert!(bmc["peak_in_flight"].as_u64().unwrap() <= 4, "{bmc}");

    // the report of a rehearsal with the check: its results and when they were read
    let report = logs.path().join("run.md");
    let r = report.to_str().unwrap();
    let out = check(
        &src,
        &nova,
        &tgt,
        &["migrate", "--rehearse", "--yes", "--resolve", "duplicate-bmc=maintenance", "--report", r],
        logs.path(),
    );
    assert_eq!(out.code, 0, "{}", out.text());
    let md = std::fs::read_to_string(&report).unwrap();
    assert!(md.contains("## BMC check (`--check-bmc`)") && md.contains("BMC check read from "), "{md}");
    assert!(
        md.contains(&format!("| 2 | {} | admin | credentials refused: RAKP 2 HMAC is invalid", addr(backend, 2))),
        "{md}"
    );

    // never a password, anywhere; never a power action, nothing but reads, one power read a node a run
    let audit = read_logs(logs.path());
    for id in 1..=9 {
        let pw = format!("bmc-Secret-{id}");
        assert!(!out.text().contains(&pw) && !md.contains(&pw) && !audit.contains(&pw), "node {id}'s password shown");
    }
    assert!(!audit.contains("changed-Secret-2"));
    reads_only(&farm, backend, 2, &out.text());
}

/// The BMCs received nothing but reads, and one power read each a run (`runs` so far); none was
/// told a power action.
/// Judged after `runs` runs of the check; `said`: the last run's output, shown with a failure.
fn reads_only(farm: &BmcFarm, backend: Backend, runs: usize, said: &str) {
    assert_eq!(farm.power_actions(), Vec::<String>::new(), "a power action reached a BMC");
    let want = |id: i64| if id == 2 || id == 9 { 0 } else { runs };
    // the farm's log of what it received reaches this process a little after the command's end (a
    // loaded machine took seconds): wait for the reads to show, then judge them
    let t0 = std::time::Instant::now();
    while t0.elapsed() < std::time::Duration::from_secs(15)
        && [1, 3, 5, 6].iter().any(|id| {
            farm.commands(&addr(backend, *id)).iter().filter(|c| *c == "get-chassis-status").count() < want(*id)
        })
    {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    for id in [1, 2, 3, 5, 6, 9] {
        let got = farm.commands(&addr(backend, id));
        assert!(got.iter().all(|c| READS.contains(&c.as_str())), "the BMC of node {id} received {got:?}");
        let reads = got.iter().filter(|c| *c == "get-chassis-status").count();
        // node 2's BMC refuses the session, node 9's its privilege: no read reaches them
        assert_eq!(reads, want(id), "node {id}: one power read a run: {got:?}; the check said:\n{said}");
    }
}

crate::per_backend! {
    stale_silent_off_and_twice_enrolled => super::stale_silent_off_and_twice_enrolled_bmcs_are_found_by_reads_alone;
}
