//! The command line as an operator at 2 a.m. meets it (issue #33): prompts that name what they act
//! on, `--json` that is JSON, times an operator can read.

use bm2ironic::core::demo::fixture::Fixture;

use crate::common::{bm, bm2ironic, Backend, TestDb, STANDARD_RESOLUTIONS};

/// `rollback` names the run it would undo (id, start, nodes) in its prompt; `rollback --list --json`
/// is one JSON document (before: the table); the table's times are to the second, with their zone.
#[tokio::test(flavor = "multi_thread")]
async fn rollback_names_its_run_and_lists_runs_as_json() {
    let Some(src) = TestDb::with_fixture(Backend::Sqlite, "csrc", &Fixture::standard()).await else { return };
    let Some(tgt) = TestDb::ironic(Backend::Sqlite, "ctgt").await else { return };
    let logs = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        bm2ironic(logs.path())
            .env("BM2IRONIC_NOVA_BM_DB", &src.reader_url)
            .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
            .args(args)
            .output()
            .unwrap()
    };
    let mut migrate = vec!["migrate", "--yes"];
    migrate.extend_from_slice(STANDARD_RESOLUTIONS);
    assert!(run(&migrate).status.success());

    let list = run(&["rollback", "--list", "--json"]);
    assert!(list.status.success(), "{}", String::from_utf8_lossy(&list.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&list.stdout).expect("--list --json is JSON");
    let r = &doc["runs"][0];
    let id = r["run_id"].as_str().unwrap().to_string();
    assert_eq!(r["status"], "committed");
    let started = r["started_at"].as_str().unwrap();
    assert!(started.ends_with('Z') && started.len() == 20, "RFC 3339 in UTC, to the second: {started}");

    let table = String::from_utf8_lossy(&run(&["rollback", "--list"]).stdout).into_owned();
    let line = table.lines().find(|l| l.starts_with(&id)).unwrap();
    assert!(line.contains(" UTC") && !line.contains('.'), "no nanoseconds, the zone said: {line}");

    // no terminal to confirm on: the refusal quotes the prompt, which names the run
    let refused = run(&["rollback"]);
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains(&format!("run {id} of ")) && err.contains(" UTC (") && err.contains("nodes)"), "{err}");
}

/// `wizard --help` lists only what the wizard uses (before: `--json`, which it ignored); `--json`
/// given anyway is refused, naming the commands it is for.
#[test]
fn the_wizard_does_not_offer_json() {
    let logs = tempfile::tempdir().unwrap();
    let help = bm2ironic(logs.path()).args(["wizard", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.contains("--rehearse") && !text.contains("--json"), "{text}");
    let out = bm2ironic(logs.path()).args(["wizard", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--json is for the scriptable commands"));
}

/// The plan flags every command would need again (`--resolve` aside).
fn resolves_only() -> Vec<&'static str> {
    let mut v = vec![];
    for pair in STANDARD_RESOLUTIONS.chunks(2) {
        if pair[0] == "--resolve" {
            v.extend_from_slice(pair);
        }
    }
    v
}

/// A project file (`bm2ironic.toml` in the working directory, or `--config FILE`) gives the plan
/// options once (#48 item 9): `plan` there says so and plans exactly what the same flags plan; a
/// flag wins over the file; a file with a database URL is refused without echoing its password.
/// Without the options, `plan` stops at once with a short usage error naming them (#48 item 8;
/// before: about 200 lines, exit 3, the cause at the bottom).
#[tokio::test(flavor = "multi_thread")]
async fn the_project_file_gives_the_plan_options_once() {
    let Some(src) = TestDb::with_fixture(Backend::Sqlite, "psrc", &Fixture::standard()).await else { return };
    let Some(tgt) = TestDb::ironic(Backend::Sqlite, "ptgt").await else { return };
    let dir = tempfile::tempdir().unwrap();
    let plan = |extra: &[&str]| {
        let mut args = vec!["plan", "--json"];
        args.extend_from_slice(extra);
        bm(args).source(&src).target(&tgt).dir(dir.path()).run()
    };
    let checksum = |o: &crate::common::Outcome| o.json()["checksum"].as_str().unwrap().to_string();

    let bare = plan(&resolves_only());
    assert_eq!(bare.code, 2, "{}", bare.text());
    assert!(bare.stdout.is_empty(), "nothing printed before the cause: {}", bare.stdout);
    for says in ["--deploy-kernel REF and --deploy-ramdisk REF", "--default-arch ARCH", "bm-compute-1: "] {
        assert!(bare.stderr.contains(says), "{says}: {}", bare.stderr);
    }
    assert!(bare.stderr.lines().count() < 8, "short: {}", bare.stderr);

    let flags = plan(STANDARD_RESOLUTIONS);
    assert_eq!(flags.code, 0, "{}", flags.text());
    std::fs::write(
        dir.path().join("bm2ironic.toml"),
        "# the plan options of this migration\ndeploy-kernel = \"file:///var/lib/ironic/deploy.kernel\"\n\
         deploy-ramdisk = \"file:///var/lib/ironic/deploy.initramfs\"\ndefault-arch = \"x86_64\"\n",
    )
    .unwrap();
    let from_file = plan(&resolves_only());
    assert_eq!(from_file.code, 0, "{}", from_file.text());
    assert_eq!(checksum(&from_file), checksum(&flags), "the file plans what the flags plan");
    assert!(
        from_file.stderr.contains("bm2ironic.toml: deploy-kernel, deploy-ramdisk, default-arch"),
        "says where the options came from: {}",
        from_file.stderr
    );

    // a flag wins over the file
    let mut aarch = resolves_only();
    aarch.extend_from_slice(&["--default-arch", "aarch64"]);
    let over = plan(&aarch);
    let mut explicit = STANDARD_RESOLUTIONS.to_vec();
    explicit[1] = "aarch64";
    let elsewhere = tempfile::tempdir().unwrap();
    let want = bm([&["plan", "--json"], &explicit[..]].concat()).source(&src).target(&tgt).dir(elsewhere.path()).run();
    assert_ne!(checksum(&over), checksum(&from_file));
    assert_eq!(checksum(&over), checksum(&want));

    // --config from another directory; a --config that is not there is a usage error
    let cfg = dir.path().join("bm2ironic.toml");
    let mut with_config = vec!["plan", "--json", "--config", cfg.to_str().unwrap()];
    with_config.extend(resolves_only());
    let o = bm(&with_config).source(&src).target(&tgt).dir(elsewhere.path()).run();
    assert_eq!(checksum(&o), checksum(&flags));
    let o = bm(["plan", "--config", "/nonexistent/bm2ironic.toml"]).source(&src).target(&tgt).run();
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("/nonexistent/bm2ironic.toml: not found"), "{}", o.stderr);

    // never a password in the file, and never echoed
    std::fs::write(&cfg, "nova-bm-db = \"mysql://nova:S3cretPw@db/nova_bm\"\n").unwrap();
    let o = plan(&resolves_only());
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("`nova-bm-db` is not read from a project file"), "{}", o.stderr);
    assert!(!o.text().contains("S3cretPw"), "{}", o.text());
}

/// A `migrate --report FILE` that is not confirmed (no terminal, no `--yes`) writes the report of a
/// run that did not start (for the ticket), and its line says so (#48 item 8: before, "run report
/// written to run.md" came first, read as a load that ran, then the refusal).
#[tokio::test(flavor = "multi_thread")]
async fn an_unconfirmed_migrate_says_its_report_is_of_a_run_that_did_not_start() {
    let Some(src) = TestDb::with_fixture(Backend::Sqlite, "rsrc", &Fixture::standard()).await else { return };
    let Some(tgt) = TestDb::ironic(Backend::Sqlite, "rtgt").await else { return };
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("run.md");
    let mut args = vec!["migrate", "--report", report.to_str().unwrap()];
    args.extend_from_slice(STANDARD_RESOLUTIONS);
    let o = bm(&args).source(&src).target(&tgt).run();
    assert_eq!(o.code, 2, "{}", o.text());
    assert!(o.stderr.contains("run report (the run did not start: it says why) written to"), "{}", o.text());
    assert!(std::fs::read_to_string(&report).unwrap().contains("not started"));
    args.push("--yes");
    let o = bm(&args).source(&src).target(&tgt).run();
    assert_eq!(o.code, 0, "{}", o.text());
    assert!(o.stderr.contains("run report written to") && report.exists(), "{}", o.text());
}
