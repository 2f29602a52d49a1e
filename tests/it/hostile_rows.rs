//! Rows a careful operator would never want migrated silently (task states in odd case or unknown,
//! uuids that are not uuids or differ only in case, duplicates the source's indexes did not stop,
//! negative sizes): each is named with a conflict by `plan`, refused by `migrate` (exit 3, nothing
//! written), and loads without a database error once decided. On SQLite, MariaDB and PostgreSQL.

use crate::common::{bm, bm2ironic, Backend, Outcome, TestDb};
use bm2ironic::core::demo::fixture::Fixture;
use serde_json::Value;

const BASE: &[&str] = &[
    "--default-arch",
    "x86_64",
    "--deploy-kernel",
    "file:///k",
    "--deploy-ramdisk",
    "file:///r",
    "--resource-class",
    "baremetal",
    // about hostile rows, not boots (no TFTP tree): each instance's boot is the operator's word
    "--resolve",
    "unknown-boot=local-boot",
];

fn run(extra: &[&str], src: &TestDb, tgt: &TestDb) -> Outcome {
    bm(extra).args(BASE).source(src).target(tgt).run()
}

/// `(nova_bm id, code)` of every conflict in a `plan --json`.
fn conflicts(plan: &Value) -> Vec<(i64, String)> {
    plan["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| {
            let id = c["subject"]["node"]["nova_bm_id"].as_i64()?;
            Some((id, c["code"].as_str()?.to_string()))
        })
        .collect()
}

fn node_action(plan: &Value, id: i64) -> String {
    plan["nodes"].as_array().unwrap().iter().find(|n| n["nova_bm_id"] == id).unwrap()["action"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The refusal every case shares: plan exits 3 naming each (row, code), migrate exits 3 and writes nothing.
async fn refused(src: &TestDb, tgt: &TestDb, expected: &[(i64, &str)]) -> Value {
    let before = tgt.dump();
    let r = run(&["plan", "--json"], src, tgt);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    let found = conflicts(&plan);
    for (id, code) in expected {
        assert!(found.contains(&(*id, code.to_string())), "node {id} should have {code}: {found:?}");
        assert_eq!(node_action(&plan, *id), "blocked", "node {id}");
    }
    let r = run(&["migrate", "--yes"], src, tgt);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    assert!(tgt.dump() == before, "a refused migrate leaves the target untouched");
    plan
}

fn fleet(count: usize) -> Fixture {
    Fixture::generated(count, 1)
}

async fn task_states_are_not_matched_exactly(backend: Backend) {
    let mut f = fleet(8);
    // generated: every 3rd node holds an instance ('active'); give nodes 1..6 an instance and a state
    let states = ["initializing", "deleted", "Deploying", "ERROR", "deploying ", "frobnicating"];
    for (i, st) in states.iter().enumerate() {
        let n = &mut f.nodes[i];
        n.task_state = Some(st.to_string());
        n.instance_uuid = Some(format!("aaaaaaaa-0000-4000-8000-{:012}", n.id));
    }
    // node 7: `active` without an instance; node 8: a free node whose task_state is 'deleted' (ordinary)
    f.nodes[6].task_state = Some("active".into());
    f.nodes[6].instance_uuid = None;
    f.nodes[7].task_state = Some("deleted".into());
    f.nodes[7].instance_uuid = None;
    let Some(src) = TestDb::with_fixture(backend, "src", &f).await else { return };
    let Some(tgt) = TestDb::ironic(backend, "tgt").await else { return };
    let expected = [
        (1, "mid-deploy"),
        (2, "inconsistent-state"),
        (3, "mid-deploy"),
        (4, "failed-deploy"),
        (5, "mid-deploy"),
        (6, "unknown-state"),
        (7, "inconsistent-state"),
    ];
    let plan = refused(&src, &tgt, &expected).await;
    assert!(conflicts(&plan).iter().all(|(id, _)| *id != 8), "a free node with task_state deleted is ordinary");

    // decided: maintenance keeps the instance nodes out of Nova's way; nothing is plainly active
    let decided = [
        "--resolve",
        "mid-deploy=maintenance",
        "--resolve",
        "failed-deploy=maintenance",
        "--resolve",
        "inconsistent-state=maintenance",
        "--resolve",
        "unknown-state=skip",
    ];
    let r = run(&[&["migrate", "--yes"][..], &decided[..]].concat(), &src, &tgt);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let rows = tgt.rows("SELECT uuid, provision_state, CASE WHEN maintenance THEN 'yes' ELSE 'no' END, instance_uuid FROM nodes ORDER BY uuid").await;
    assert_eq!(rows.len(), 7, "node 6 skipped: {rows:?}");
    for r in &rows {
        let id: i64 = r[0][24..].parse().unwrap();
        let maintenance = r[2] == "yes";
        if r[1] == "active" {
            assert!(maintenance, "node {id} written active without maintenance: {r:?}");
        }
        assert_eq!(maintenance, id <= 7, "node {id}: {r:?}");
    }
}

async fn uuids_are_validated_and_compared_in_lower_case(backend: Backend) {
    let mut f = fleet(3);
    f.nodes[0].uuid = Some("not-a-uuid-at-all".into());
    f.nodes[1].uuid = Some("BBBBBBBB-0000-4000-8000-00000000000A".into());
    let Some(src) = TestDb::with_fixture(backend, "src", &f).await else { return };
    let Some(tgt) = TestDb::ironic(backend, "tgt").await else { return };
    tgt.exec(
        "INSERT INTO nodes (uuid, driver, driver_info, properties, instance_info, extra, provision_state, maintenance, console_enabled, conductor_group, protected, version) \
         VALUES ('bbbbbbbb-0000-4000-8000-00000000000a', 'fake-hardware', '{}', '{}', '{}', '{}', 'available', false, false, '', false, '1.44')",
    )
    .await;
    refused(&src, &tgt, &[(1, "invalid-uuid"), (2, "uuid-in-ironic")]).await;

    let r = run(
        &["migrate", "--yes", "--resolve", "invalid-uuid=generate", "--resolve", "uuid-in-ironic=skip"],
        &src,
        &tgt,
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let uuids: Vec<String> = tgt.rows("SELECT uuid FROM nodes").await.into_iter().map(|r| r[0].clone()).collect();
    assert_eq!(uuids.len(), 3, "{uuids:?}");
    assert!(uuids.iter().all(|u| u.len() == 36 && *u == u.to_ascii_lowercase()), "{uuids:?}");
    assert!(!uuids.iter().any(|u| u == "not-a-uuid-at-all"));
}

/// Drops nova_bm's unique index on bm_nodes.uuid, as old deployments may lack it.
async fn without_uuid_index(src: &TestDb) {
    match src.backend {
        Backend::MySql => src.exec("DROP INDEX uuid_ux ON bm_nodes").await,
        _ => src.exec("DROP INDEX uuid_ux").await,
    }
}

async fn insert_node(src: &TestDb, id: i64, uuid: &str, deleted: bool, instance: Option<&str>) {
    let deleted = if deleted { "TRUE" } else { "FALSE" };
    let inst = instance.map(|i| format!("'{i}'")).unwrap_or_else(|| "NULL".into());
    let state = if instance.is_some() { "'active'" } else { "NULL" };
    src.exec(&format!(
        "INSERT INTO bm_nodes (id, uuid, service_host, instance_uuid, task_state, cpus, memory_mb, local_gb, pm_address, pm_user, deleted) \
         VALUES ({id}, '{uuid}', 'bm-compute-1', {inst}, {state}, 8, 16384, 500, '127.0.0.1', 'admin', {deleted})"
    ))
    .await;
}

async fn duplicates_inside_nova_bm_are_found_by_the_plan(backend: Backend) {
    let f = fleet(3); // node 3 holds instance ...003
    let Some(src) = TestDb::with_fixture(backend, "src", &f).await else { return };
    let Some(tgt) = TestDb::ironic(backend, "tgt").await else { return };
    without_uuid_index(&src).await;
    let n1 = f.nodes[0].uuid.clone().unwrap();
    let n3 = f.nodes[2].uuid.clone().unwrap();
    let inst3 = f.nodes[2].instance_uuid.clone().unwrap();
    let n12 = "bbbbbbbb-0000-4000-8000-000000000012";
    insert_node(&src, 10, &n1, false, None).await; // a second live row with node 1's uuid
    insert_node(&src, 11, &n1, true, None).await; // a deleted row with it too
    insert_node(&src, 12, n12, false, Some(&inst3)).await; // node 3's instance

    // nothing says which machine runs the instance: both claimants are blocked, neither is preferred
    let plan =
        refused(&src, &tgt, &[(10, "duplicate-uuid"), (3, "ambiguous-instance"), (12, "ambiguous-instance")]).await;
    assert!(
        !conflicts(&plan).iter().any(|(id, c)| *id <= 3 && c.starts_with("duplicate")),
        "the first uuid holder is fine: {:?}",
        conflicts(&plan)
    );
    let details: Vec<String> = plan["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["code"] == "ambiguous-instance")
        .map(|c| c["detail"].as_str().unwrap().to_string())
        .collect();
    assert!(
        details[0].contains("also claimed by nova_bm node(s) 12") && details[0].contains("--nova-db"),
        "{details:?}"
    );
    assert!(details[1].contains("also claimed by nova_bm node(s) 3"), "{details:?}");
    // migrating the deleted rows too makes node 11 a duplicate as well
    let r = run(&["plan", "--json", "--resolve", "deleted-node=migrate"], &src, &tgt);
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(conflicts(&plan).contains(&(11, "duplicate-uuid".into())), "{:?}", conflicts(&plan));

    // the operator's decisions, one per claimant: two keepers contradict each other and block
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("decisions.toml");
    let decide = |keep12: &str| {
        format!(
            "[[decision]]\ncode = \"ambiguous-instance\"\nnode = 3\naction = \"keep-instance\"\n\n\
             [[decision]]\ncode = \"ambiguous-instance\"\nnode = 12\naction = \"{keep12}\"\n"
        )
    };
    std::fs::write(&file, decide("keep-instance")).unwrap();
    let file = file.display().to_string();
    let decided = ["--resolve", "deleted-node=migrate", "--resolve", "duplicate-uuid=generate", "--resolutions", &file];
    let r = run(&[&["plan", "--json"][..], &decided].concat(), &src, &tgt);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!((node_action(&plan, 3), node_action(&plan, 12)), ("blocked".into(), "blocked".into()));
    assert!(r.stdout.contains("keep-instance is decided for nova_bm nodes 3 and 12"), "{}", r.stdout);

    // decided, the load meets no unique constraint of Ironic's and the instance is where it was said
    std::fs::write(&file, decide("free")).unwrap();
    let r = run(&[&["migrate", "--yes"][..], &decided].concat(), &src, &tgt);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(tgt.scalar_i64("SELECT COUNT(*) FROM nodes").await, 6);
    let holders = tgt.rows(&format!("SELECT uuid FROM nodes WHERE instance_uuid = '{inst3}'")).await;
    assert_eq!(holders, vec![vec![n3.clone()]]);
}

/// With Nova's database, its `instances.node` decides: the claimant it names keeps the instance
/// unflagged, the other is `duplicate-instance` (as before), and `free` loads the instance there.
async fn nova_names_which_claimant_runs_the_instance(backend: Backend) {
    let f = fleet(3);
    let Some(src) = TestDb::with_fixture(backend, "src", &f).await else { return };
    let Some(tgt) = TestDb::ironic(backend, "tgt").await else { return };
    let Some(nova) = TestDb::create(backend, "nova").await else { return };
    let inst3 = f.nodes[2].instance_uuid.clone().unwrap();
    let n12 = "bbbbbbbb-0000-4000-8000-000000000012";
    insert_node(&src, 12, n12, false, Some(&inst3)).await;
    let bin = if backend == Backend::MySql { "`binary`" } else { "\"binary\"" };
    nova.exec("CREATE TABLE instances (id INTEGER NOT NULL PRIMARY KEY, uuid VARCHAR(36) NOT NULL, image_ref VARCHAR(255), root_gb INTEGER, ephemeral_gb INTEGER, node VARCHAR(255), host VARCHAR(255), vm_state VARCHAR(255), power_state INTEGER, deleted INTEGER)").await;
    nova.exec(&format!("CREATE TABLE services (id INTEGER NOT NULL PRIMARY KEY, host VARCHAR(255), {bin} VARCHAR(255), topic VARCHAR(255), report_count INTEGER NOT NULL, disabled BOOLEAN, deleted INTEGER, created_at TIMESTAMP NULL, updated_at TIMESTAMP NULL)")).await;
    // Nova says node 12 runs it (its uuid in upper case, as old rows may hold it)
    nova.exec(&format!(
        "INSERT INTO instances VALUES (1, '{inst3}', 'glance-image', 20, 0, '{}', 'bm-compute-1', 'active', 1, 0)",
        n12.to_uppercase()
    ))
    .await;
    let with_nova = ["--nova-db", nova.reader_url.as_str()];
    let r = run(&[&["plan", "--json"][..], &with_nova].concat(), &src, &tgt);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    let found = conflicts(&plan);
    assert!(found.contains(&(3, "duplicate-instance".into())), "{found:?}");
    assert!(
        !found.iter().any(|(id, c)| *id == 12 && c.ends_with("-instance")),
        "Nova's choice is not flagged: {found:?}"
    );
    assert!(!found.iter().any(|(_, c)| c == "ambiguous-instance"), "{found:?}");
    let r = run(&[&["migrate", "--yes", "--resolve", "duplicate-instance=free"][..], &with_nova].concat(), &src, &tgt);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let holders = tgt.rows(&format!("SELECT uuid FROM nodes WHERE instance_uuid = '{inst3}'")).await;
    assert_eq!(holders, vec![vec![n12.to_string()]]);
}

async fn negative_sizes_are_their_own_conflict(backend: Backend) {
    let mut f = fleet(2);
    f.nodes[0].cpus = Some(-8);
    f.nodes[0].memory_mb = Some(-4096);
    f.nodes[0].local_gb = Some(-2147483648);
    f.nodes[0].terminal_port = Some(-1);
    let Some(src) = TestDb::with_fixture(backend, "src", &f).await else { return };
    let Some(tgt) = TestDb::ironic(backend, "tgt").await else { return };
    let plan = refused(&src, &tgt, &[(1, "invalid-size")]).await;
    assert!(
        !conflicts(&plan).contains(&(1, "incomplete-properties".into())),
        "negative is not 'missing or zero': {:?}",
        conflicts(&plan)
    );
    let r = run(&["migrate", "--yes", "--resolve", "invalid-size=maintenance"], &src, &tgt);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let u = f.nodes[0].uuid.clone().unwrap();
    let rows = tgt.rows(&format!("SELECT properties, driver_info, CASE WHEN maintenance THEN 'yes' ELSE 'no' END FROM nodes WHERE uuid = '{u}'")).await;
    let props: Value = serde_json::from_str(&rows[0][0]).unwrap();
    let di: Value = serde_json::from_str(&rows[0][1]).unwrap();
    assert!(
        props.get("cpus").is_none() && props.get("memory_mb").is_none() && props.get("local_gb").is_none(),
        "{props}"
    );
    assert!(di.get("ipmi_terminal_port").is_none(), "{di}");
    assert_eq!(rows[0][2], "yes", "{rows:?}");
}

async fn four_byte_utf8_reaches_a_utf8mb3_target_escaped(backend: Backend) {
    let mut f = fleet(2);
    f.nodes[0].pm_user = Some("r\u{f6}ot\u{1F600}".into());
    f.nodes[0].service_host = Some("bm-\u{1F600}".into());
    // the source on SQLite, which holds any UTF-8 (a Juno-era MySQL nova_bm could not)
    let Some(src) = TestDb::with_fixture(Backend::Sqlite, "src", &f).await else { return };
    let Some(tgt) = TestDb::ironic(backend, "tgt").await else { return };
    if backend == Backend::MySql {
        // a Juno-era MySQL: 3-byte utf8 only
        tgt.exec("ALTER TABLE nodes CONVERT TO CHARACTER SET utf8mb3").await;
    }
    let r = run(&["migrate", "--yes", "--arch", "bm-\u{1F600}=x86_64"], &src, &tgt);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let u = f.nodes[0].uuid.clone().unwrap();
    let rows = tgt.rows(&format!("SELECT driver_info, extra FROM nodes WHERE uuid = '{u}'")).await;
    for text in &rows[0] {
        assert!(text.is_ascii(), "written as Ironic writes JSON (ASCII-escaped): {text}");
    }
    let di: Value = serde_json::from_str(&rows[0][0]).unwrap();
    assert_eq!(di["ipmi_username"], "r\u{f6}ot\u{1F600}", "and reads back the same");
}

/// A trigger that makes every port INSERT fail: a load that fails after the nodes were written.
async fn ports_refused(tgt: &TestDb) {
    match tgt.backend {
        Backend::Sqlite => {
            tgt.exec("CREATE TRIGGER no_ports BEFORE INSERT ON ports BEGIN SELECT RAISE(ABORT, 'injected failure'); END")
                .await
        }
        Backend::MySql => {
            tgt.exec(
                "CREATE TRIGGER no_ports BEFORE INSERT ON ports FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'injected failure'",
            )
            .await
        }
        Backend::Postgres => {
            tgt.exec("CREATE FUNCTION no_ports() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$ LANGUAGE plpgsql")
                .await;
            tgt.exec("CREATE TRIGGER no_ports BEFORE INSERT ON ports FOR EACH ROW EXECUTE FUNCTION no_ports()").await;
        }
    }
}

async fn a_failed_load_leaves_nothing_behind_and_names_the_row(backend: Backend) {
    let f = fleet(3);
    let Some(src) = TestDb::with_fixture(backend, "src", &f).await else { return };
    let Some(tgt) = TestDb::ironic(backend, "tgt").await else { return };
    ports_refused(&tgt).await;
    let before = tgt.dump();
    let r = run(&["migrate", "--yes"], &src, &tgt);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("injected failure"), "{}", r.stderr);
    let first = &f.nodes[0];
    let mac = f.interfaces.iter().find(|i| i.bm_node_id == Some(first.id)).unwrap().address_normalized.unwrap();
    assert!(
        r.stderr.contains(&format!("nova_bm node {}", first.id)) && r.stderr.contains(mac.as_str()),
        "names the row that failed: {}",
        r.stderr
    );
    assert!(tgt.dump() == before, "no bm2ironic_runs table, no rows: the target is as it was");
}

async fn a_missing_sqlite_target_is_never_created(_backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-ironic.sqlite");
    let url = format!("sqlite:///{}", missing.display());
    let Some(src) = TestDb::with_fixture(Backend::Sqlite, "src", &fleet(1)).await else { return };
    for args in [&["plan"][..], &["migrate", "--yes"], &["verify"], &["rollback", "--list"]] {
        let logs = tempfile::tempdir().unwrap();
        let out = bm2ironic(logs.path())
            .env("BM2IRONIC_NOVA_BM_DB", &src.reader_url)
            .env("BM2IRONIC_IRONIC_DB", &url)
            .args(args)
            .args(BASE.iter().filter(|_| args[0] != "verify" && args[0] != "rollback"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("does not exist"), "{args:?}: {err}");
        assert!(!missing.exists(), "{args:?} created the target file");
    }
}

async fn blank_options_are_usage_errors(_backend: Backend) {
    let Some(src) = TestDb::with_fixture(Backend::Sqlite, "src", &fleet(1)).await else { return };
    let Some(tgt) = TestDb::ironic(Backend::Sqlite, "tgt").await else { return };
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("nova.conf");
    std::fs::write(&conf, "[DEFAULT]\nhost = bm-compute-1\n[baremetal]\nsql_connection =\n").unwrap();
    let conf = conf.display().to_string();
    // (arguments, environment, what the message must name)
    type Case<'a> = (Vec<&'a str>, Vec<(&'a str, &'a str)>, &'a str);
    let cases: Vec<Case> = vec![
        (vec!["plan", "--deploy-kernel", ""], vec![], "--deploy-kernel"),
        (vec!["plan", "--deploy-ramdisk", "  "], vec![], "--deploy-ramdisk"),
        (vec!["plan", "--default-arch", ""], vec![], "--default-arch"),
        (vec!["plan", "--resource-class", " "], vec![], "--resource-class"),
        (vec!["plan", "--arch", "=x86_64"], vec![], "--arch"),
        (vec!["migrate", "--yes", "--deploy-kernel", ""], vec![], "--deploy-kernel"),
        (vec!["plan"], vec![("BM2IRONIC_NOVA_BM_DB", "")], "BM2IRONIC_NOVA_BM_DB"),
        (vec!["plan"], vec![("BM2IRONIC_IRONIC_URL", " ")], "BM2IRONIC_IRONIC_URL"),
        (vec!["plan", "--ironic-db", ""], vec![], "--ironic-db"),
        (vec!["plan", "--nova-conf", &conf], vec![("BM2IRONIC_NOVA_BM_DB", "__unset__")], "sql_connection is empty"),
    ];
    for (args, env, named) in cases {
        let logs = tempfile::tempdir().unwrap();
        let mut c = bm2ironic(logs.path());
        c.env("BM2IRONIC_NOVA_BM_DB", &src.reader_url).env("BM2IRONIC_IRONIC_DB", &tgt.admin_url);
        for (k, v) in &env {
            if *v == "__unset__" {
                c.env_remove(k);
            } else {
                c.env(k, v);
            }
        }
        // the base options first, so the blank one given after them wins
        let out = c.args(&args[..1]).args(BASE).args(&args[1..]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?} {env:?}: {err}");
        assert!(err.contains(named), "{args:?} {env:?} names {named}: {err}");
    }
}

per_backend! {
    task_states_are_not_matched_exactly => super::task_states_are_not_matched_exactly;
    uuids_are_validated_and_compared_in_lower_case => super::uuids_are_validated_and_compared_in_lower_case;
    duplicates_inside_nova_bm_are_found_by_the_plan => super::duplicates_inside_nova_bm_are_found_by_the_plan;
    nova_names_which_claimant_runs_the_instance => super::nova_names_which_claimant_runs_the_instance;
    negative_sizes_are_their_own_conflict => super::negative_sizes_are_their_own_conflict;
    four_byte_utf8_reaches_a_utf8mb3_target_escaped => super::four_byte_utf8_reaches_a_utf8mb3_target_escaped;
    a_failed_load_leaves_nothing_behind_and_names_the_row => super::a_failed_load_leaves_nothing_behind_and_names_the_row;
    a_bad_timestamp_is_its_rows_problem_not_the_reads => super::a_bad_timestamp_is_its_rows_problem_not_the_reads;
    // these need no server: one run each
    [sqlite] broadcast_zero_and_multicast_macs_are_invalid_mac => super::broadcast_zero_and_multicast_macs_are_invalid_mac;
    [sqlite] a_missing_sqlite_target_is_never_created => super::a_missing_sqlite_target_is_never_created;
    [sqlite] blank_options_are_usage_errors => super::blank_options_are_usage_errors;
    [sqlite] a_decision_that_matches_nothing_is_a_usage_error => super::a_decision_that_matches_nothing_is_a_usage_error;
}

async fn a_decision_that_matches_nothing_is_a_usage_error(_backend: Backend) {
    let Some(src) = TestDb::with_fixture(Backend::Sqlite, "src", &fleet(3)).await else { return };
    let Some(tgt) = TestDb::ironic(Backend::Sqlite, "tgt").await else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("decisions.toml");
    std::fs::write(&file, "[[decision]]\ncode = \"mid-deploy\"\nnode = 99\naction = \"maintenance\"\n").unwrap();
    let file = file.display().to_string();
    for cmd in [&["plan"][..], &["migrate", "--yes"]] {
        let before = tgt.dump();
        let r = run(&[cmd, &["--resolutions", &file]].concat(), &src, &tgt);
        assert_eq!(r.code, 2, "{cmd:?}: {}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains("#1 (code = mid-deploy, node = 99, action = maintenance)"), "{}", r.stderr);
        assert!(tgt.dump() == before);
    }
}

/// A timestamp the server holds but that is no date (SQLite: any text; MariaDB: a zero date under
/// a permissive sql_mode; PostgreSQL: `infinity`) stopped even the read-only `inventory` (one
/// soft-deleted row blocked everything). Now: the read goes on, the value is NULL and named in
/// `inventory --json` (`bad_values`); `plan` warns about the live row it writes with one, and says
/// nothing of the soft-deleted row it skips; `migrate` writes the live row with NULL there.
async fn a_bad_timestamp_is_its_rows_problem_not_the_reads(backend: Backend) {
    let Some(src) = TestDb::with_fixture(backend, "src", &fleet(4)).await else { return };
    let Some(tgt) = TestDb::ironic(backend, "tgt").await else { return };
    let (bad, shown) = match backend {
        Backend::Sqlite => ("'sometime in 2014'", "'sometime in 2014'"),
        Backend::MySql => ("'0000-00-00 00:00:00'", "'0000-00-00 00:00:00'"),
        Backend::Postgres => ("'infinity'", "'infinity'"),
    };
    // MariaDB keeps a zero date only under a permissive sql_mode, as old deployments had it
    let set =
        |sql: String| if backend == Backend::MySql { format!("SET STATEMENT sql_mode = '' FOR {sql}") } else { sql };
    let yes = if backend == Backend::Postgres { "true" } else { "1" };
    src.exec(&set(format!("UPDATE bm_nodes SET deleted = {yes}, deleted_at = {bad} WHERE id = 2"))).await;
    src.exec(&set(format!("UPDATE bm_nodes SET created_at = {bad} WHERE id = 3"))).await;
    src.exec(&set(format!("UPDATE bm_interfaces SET updated_at = {bad} WHERE bm_node_id = 3"))).await;

    let logs = tempfile::tempdir().unwrap();
    let out = bm2ironic(logs.path())
        .env("BM2IRONIC_NOVA_BM_DB", &src.reader_url)
        .args(["inventory", "--json"])
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "the read-only inventory is not blocked: {stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("core::"), "{stderr}");
    let inv: Value = serde_json::from_str(&stdout).unwrap();
    let node = |id: i64| inv["nodes"].as_array().unwrap().iter().find(|n| n["id"] == id).unwrap().clone();
    let found = |v: &Value| {
        v["bad_values"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|b| (b["column"].as_str().unwrap().to_string(), b["found"].as_str().unwrap().to_string()))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    assert_eq!(found(&node(2)), vec![("deleted_at".to_string(), shown.to_string())], "{}", node(2));
    assert_eq!(node(2)["deleted_at"], Value::Null);
    assert_eq!(found(&node(3)), vec![("created_at".to_string(), shown.to_string())]);
    assert!(found(&node(1)).is_empty() && node(1)["created_at"].is_string());

    let r = run(&["plan", "--json"], &src, &tgt);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    let warnings: Vec<&str> = plan["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    let named: Vec<&&str> = warnings.iter().filter(|w| w.contains("read as NULL")).collect();
    assert_eq!(named.len(), 1, "only the live row written: {warnings:?}");
    assert!(
        named[0].starts_with("nova_bm node 3: bm_nodes row id 3: column created_at holds") && named[0].contains(shown),
        "{}",
        named[0]
    );
    assert!(named[0].contains("bm_interfaces row id") && named[0].contains("column updated_at"), "{}", named[0]);
    let r = run(&["migrate", "--yes"], &src, &tgt);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let rows =
        tgt.rows("SELECT uuid, CASE WHEN created_at IS NULL THEN 'null' ELSE 'set' END FROM nodes ORDER BY uuid").await;
    let of = |id: i64| rows.iter().find(|r| r[0].ends_with(&format!("{id:012}"))).map(|r| r[1].clone());
    assert_eq!((of(1).as_deref(), of(2), of(3).as_deref()), (Some("set"), None, Some("null")), "{rows:?}");
}

/// Well-formed MACs no NIC has (broadcast, all zeros, multicast) were written as ports without a
/// word: each is `invalid-mac` now, and says which.
async fn broadcast_zero_and_multicast_macs_are_invalid_mac(_backend: Backend) {
    let Some(src) = TestDb::with_fixture(Backend::Sqlite, "src", &fleet(3)).await else { return };
    let Some(tgt) = TestDb::ironic(Backend::Sqlite, "tgt").await else { return };
    let macs = ["ff:ff:ff:ff:ff:ff", "00:00:00:00:00:00", "01:00:5e:00:00:fb"];
    for (k, m) in macs.iter().enumerate() {
        src.exec(&format!("UPDATE bm_interfaces SET address = '{m}' WHERE id = (SELECT MIN(id) FROM bm_interfaces WHERE bm_node_id = {})", k + 1)).await;
    }
    let r = run(&["plan", "--json"], &src, &tgt);
    assert_eq!(r.code, 3, "blocking: {}{}", r.stdout, r.stderr);
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    let invalid: Vec<(i64, &str)> = plan["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["code"] == "invalid-mac")
        .map(|c| (c["subject"]["interface"]["nova_bm_id"].as_i64().unwrap(), c["detail"].as_str().unwrap()))
        .collect();
    assert_eq!(invalid.iter().map(|c| c.0).collect::<Vec<_>>(), vec![1, 2, 3], "{invalid:?}");
    for ((_, d), why) in invalid.iter().zip(["the broadcast address", "all zeros", "a multicast address"]) {
        assert!(d.contains(why), "{d}");
    }
}
