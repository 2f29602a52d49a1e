//! Each instance's next boot through the CLI (docs/mapping.md 2.12): `plan` without a TFTP tree
//! names `unknown-boot` for every instance node (exit 3) and none for free nodes; with the tree it
//! learns nova baremetal's PXE configs (and Nova's kernel_id / ramdisk_id where the files are not
//! beside the config), `migrate` writes the ramdisk deploy, and `verify` finds a changed boot field.
//! Per backend (the Nova read is SQL); the hostile configs on SQLite (they are about files).

use std::path::{Path, PathBuf};

use crate::common::{bm, Backend, Outcome, TestDb};
use bm2ironic::core::demo::fixture::{root_uuid_of, Fixture};
use serde_json::Value;

fn uuid(prefix: &str, id: i64) -> String {
    format!("{prefix}-0000-4000-8000-{id:012}")
}

/// Six nodes on two hosts; nodes 3 (bm-compute-1) and 6 (bm-compute-2) hold instances.
fn fixture() -> Fixture {
    Fixture::generated(6, 2)
}

const BASE: &[&str] = &["--default-arch", "x86_64", "--deploy-kernel", "file:///k", "--deploy-ramdisk", "file:///r"];

/// Nova's `instances` as Nova has it (with `kernel_id`, `ramdisk_id`) for the instances of 3 and 6.
async fn nova_db(backend: Backend) -> Option<TestDb> {
    let t = TestDb::create(backend, "bootnova").await?;
    let (bin, ts) = match backend {
        Backend::MySql => ("`binary`", "DATETIME"),
        Backend::Postgres => ("\"binary\"", "TIMESTAMP"),
        Backend::Sqlite => ("\"binary\"", "DATETIME"),
    };
    t.exec("CREATE TABLE instances (id INTEGER NOT NULL PRIMARY KEY, uuid VARCHAR(36) NOT NULL, image_ref VARCHAR(255), kernel_id VARCHAR(255), ramdisk_id VARCHAR(255), root_gb INTEGER, ephemeral_gb INTEGER, node VARCHAR(255), host VARCHAR(255), vm_state VARCHAR(255), power_state INTEGER, deleted INTEGER)").await;
    t.exec(&format!("CREATE TABLE services (id INTEGER NOT NULL PRIMARY KEY, host VARCHAR(255), {bin} VARCHAR(255), topic VARCHAR(255), report_count INTEGER NOT NULL, disabled BOOLEAN, deleted INTEGER, created_at {ts}, updated_at {ts})")).await;
    for id in [3, 6] {
        t.exec(&format!(
            "INSERT INTO instances VALUES ({id}, '{}', 'glance-image-{id}', 'glance-kernel-{id}', 'glance-ramdisk-{id}', 20, 0, '{}', 'bm-compute-1', 'active', 1, 0)",
            uuid("aaaaaaaa", id),
            uuid("bbbbbbbb", id)
        ))
        .await;
    }
    Some(t)
}

fn run(args: &[&str], src: &TestDb, tgt: &TestDb, nova: Option<&TestDb>) -> Outcome {
    let c = bm(args).source(src).target(tgt).nova(nova);
    match args[0] {
        "verify" => c.run(),
        _ => c.args(BASE).run(),
    }
}

/// `(nova_bm id, detail)` of each `unknown-boot` in a `plan --json`.
fn unknown_boots(plan: &Value) -> Vec<(i64, String)> {
    plan["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["code"] == "unknown-boot")
        .map(|c| (c["subject"]["node"]["nova_bm_id"].as_i64().unwrap(), c["detail"].as_str().unwrap().to_string()))
        .collect()
}

fn tree_of(f: &Fixture, dir: &Path) -> PathBuf {
    let t = dir.join("tftpboot");
    f.write_tftp_tree(&t).unwrap();
    t
}

async fn plan_learns_each_instances_boot_and_verify_checks_it(backend: Backend) {
    let f = fixture();
    let Some(src) = TestDb::with_fixture(backend, "bootsrc", &f).await else { return };
    let Some(tgt) = TestDb::ironic(backend, "boottgt").await else { return };
    let Some(nova) = nova_db(backend).await else { return };

    // no tree: every instance node is unknown-boot, blocking; free nodes are not looked at
    let r = run(&["plan", "--json"], &src, &tgt, Some(&nova));
    assert_eq!(r.code, 3, "{}", r.stderr);
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    let found = unknown_boots(&plan);
    assert_eq!(found.iter().map(|(id, _)| *id).collect::<Vec<_>>(), vec![3, 6], "{found:?}");
    assert!(found.iter().all(|(_, d)| d.contains("no TFTP tree given")), "{found:?}");

    // the tree: node 3 with its kernel and ramdisk beside the config, node 6 without (Nova's ids)
    let tmp = tempfile::tempdir().unwrap();
    let tree = tree_of(&f, tmp.path());
    let (i3, i6) = (uuid("aaaaaaaa", 3), uuid("aaaaaaaa", 6));
    for name in ["kernel", "ramdisk"] {
        std::fs::remove_file(tree.join(&i6).join(name)).unwrap();
    }
    let root = ["--tftp-root", tree.to_str().unwrap()];
    let r = run(&[&["plan", "--json"][..], &root].concat(), &src, &tgt, Some(&nova));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    let nb = |id: i64| {
        plan["nodes"].as_array().unwrap().iter().find(|n| n["nova_bm_id"] == id).unwrap()["next_boot"].clone()
    };
    assert_eq!(nb(3)["how"], "pxe");
    assert_eq!(nb(3)["kernel"], format!("file://{}/{i3}/kernel", tree.display()));
    assert_eq!(nb(3)["root_uuid"], root_uuid_of(&i3));
    assert_eq!(
        (nb(6)["kernel"].as_str(), nb(6)["ramdisk"].as_str()),
        (Some("glance-kernel-6"), Some("glance-ramdisk-6"))
    );
    assert_eq!(nb(1), Value::Null, "a free node has no next boot");
    // the text says how Ironic boots each
    let r = run(&[&["plan"][..], &root].concat(), &src, &tgt, Some(&nova));
    assert!(
        r.stdout.contains("Next boot of each instance:") && r.stdout.contains("ramdisk deploy, PXE every boot"),
        "{}",
        r.stdout
    );

    // written: the ramdisk deploy with the instance's kernel, ramdisk and root
    let r = run(&[&["migrate", "--yes"][..], &root].concat(), &src, &tgt, Some(&nova));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let rows = tgt
        .rows(&format!(
            "SELECT uuid, deploy_interface, boot_interface, instance_info, properties FROM nodes WHERE uuid IN ('{}', '{}', '{}') ORDER BY uuid",
            uuid("bbbbbbbb", 1),
            uuid("bbbbbbbb", 3),
            uuid("bbbbbbbb", 6)
        ))
        .await;
    assert_eq!(rows[0][1..3], ["NULL", "NULL"], "a free node keeps Ironic's defaults: {:?}", rows[0]);
    assert_eq!(rows[1][1..3], ["ramdisk", "pxe"]);
    let ii: Value = serde_json::from_str(&rows[1][3]).unwrap();
    assert_eq!(ii["kernel"], format!("file://{}/{i3}/kernel", tree.display()));
    assert_eq!(ii["ramdisk_kernel_arguments"], format!("root=UUID={} ro nofb nomodeset vga=normal", root_uuid_of(&i3)));
    let props: Value = serde_json::from_str(&rows[1][4]).unwrap();
    assert_eq!(props["capabilities"], "boot_mode:bios");
    // every node boots BIOS, the free one too (docs/mapping.md 2.13)
    let free: Value = serde_json::from_str(&rows[0][4]).unwrap();
    assert_eq!(free["capabilities"], "boot_mode:bios", "{free}");
    let ii6: Value = serde_json::from_str(&rows[2][3]).unwrap();
    assert_eq!((ii6["kernel"].as_str(), ii6["ramdisk"].as_str()), (Some("glance-kernel-6"), Some("glance-ramdisk-6")));

    // verify: clean, then a changed boot field is a difference (exit 4)
    let r = run(&["verify"], &src, &tgt, None);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    tgt.exec(&format!("UPDATE nodes SET deploy_interface = 'direct' WHERE uuid = '{}'", uuid("bbbbbbbb", 3))).await;
    let r = run(&["verify"], &src, &tgt, None);
    assert_eq!(r.code, 4, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("deploy_interface"), "{}", r.stdout);
    tgt.exec(&format!(
        "UPDATE nodes SET deploy_interface = 'ramdisk', instance_info = '{{}}' WHERE uuid = '{}'",
        uuid("bbbbbbbb", 6)
    ))
    .await;
    tgt.exec(&format!("UPDATE nodes SET deploy_interface = 'ramdisk' WHERE uuid = '{}'", uuid("bbbbbbbb", 3))).await;
    let r = run(&["verify"], &src, &tgt, None);
    assert_eq!(r.code, 4, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("instance_info.kernel") && r.stdout.contains("instance_info.ramdisk_kernel_arguments"),
        "{}",
        r.stdout
    );
}

per_backend! {
    plan_learns_each_instances_boot_and_verify_checks_it => super::plan_learns_each_instances_boot_and_verify_checks_it;
    [sqlite] hostile_pxe_configs_are_named_never_followed_or_shown_raw => super::hostile_pxe_configs_are_named_never_followed_or_shown_raw;
}

/// Each hostile config of node 3's instance, through `plan` (text and JSON): the exit code, the
/// words that name it, and no raw control character in anything printed.
async fn hostile_pxe_configs_are_named_never_followed_or_shown_raw(backend: Backend) {
    let f = fixture();
    let Some(src) = TestDb::with_fixture(backend, "hostsrc", &f).await else { return };
    let Some(tgt) = TestDb::ironic(backend, "hosttgt").await else { return };
    let i3 = uuid("aaaaaaaa", 3);
    let good = bm2ironic::core::source::pxe::nova_baremetal_config("/tftpboot", &i3, &root_uuid_of(&i3), "nofb");
    type Spoil = Box<dyn Fn(&Path)>;
    let cases: Vec<(&str, Spoil, i32, &str)> = vec![
        ("CRLF line ends", Box::new(move |c: &Path| std::fs::write(c, good.replace('\n', "\r\n")).unwrap()), 0, ""),
        (
            "two root=",
            Box::new(|c: &Path| {
                let t = std::fs::read_to_string(c).unwrap().replace(" ro ", " ro root=/dev/sda1 ");
                std::fs::write(c, t).unwrap()
            }),
            3,
            "has 2 root= in the boot label's append line",
        ),
        (
            "an escape sequence",
            Box::new(|c: &Path| {
                let t = std::fs::read_to_string(c).unwrap().replace(" ro ", " ro \x1b]0;owned\x07\x1b[2J ");
                std::fs::write(c, t).unwrap()
            }),
            3,
            "a control character (escape sequence) on line",
        ),
        (
            "a symlink out of the tree",
            Box::new(|c: &Path| {
                let outside = c.parent().unwrap().parent().unwrap().parent().unwrap().join("outside-config");
                std::fs::rename(c, &outside).unwrap();
                std::os::unix::fs::symlink(&outside, c).unwrap();
            }),
            3,
            "is a symlink leading out of the TFTP tree: not followed",
        ),
        (
            "a 10 MB file",
            Box::new(|c: &Path| std::fs::File::create(c).unwrap().set_len(10 * 1024 * 1024).unwrap()),
            3,
            "is 10485760 bytes, over 64 KiB: not a PXE config, not read",
        ),
        (
            "default deploy",
            Box::new(|c: &Path| {
                let t = std::fs::read_to_string(c).unwrap().replace("default boot", "default deploy");
                std::fs::write(c, t).unwrap()
            }),
            3,
            "says 'default deploy'",
        ),
        ("missing", Box::new(|c: &Path| std::fs::remove_file(c).unwrap()), 3, "no PXE config"),
    ];
    for (what, spoil, code, words) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let tree = tree_of(&f, tmp.path());
        spoil(&tree.join(&i3).join("config"));
        let root = ["--tftp-root", tree.to_str().unwrap()];
        for json in [false, true] {
            let args: Vec<&str> = [&["plan"][..], if json { &["--json"][..] } else { &[][..] }, &root].concat();
            let r = run(&args, &src, &tgt, None);
            assert_eq!(r.code, code, "{what}: {}{}", r.stdout, r.stderr);
            let all = format!("{}{}", r.stdout, r.stderr);
            assert!(all.contains(words), "{what}: '{words}' not in {all}");
            assert!(
                !all.contains('\x1b') && !all.contains('\x07') && !all.contains('\r'),
                "{what}: a raw control character printed"
            );
            if code == 3 {
                let plan_of_6 = all.contains("unknown-boot") && all.contains(&uuid("bbbbbbbb", 3));
                assert!(plan_of_6, "{what}: the node is named: {all}");
            }
        }
    }
    // a tree for one host applies to that host's nodes only: node 6 (bm-compute-2) is missing there
    let tmp = tempfile::tempdir().unwrap();
    let tree = tree_of(&f, tmp.path());
    let one_host = format!("bm-compute-1={}", tree.display());
    let r = run(&["plan", "--json", "--tftp-root", &one_host], &src, &tgt, None);
    assert_eq!(r.code, 3, "{}", r.stderr);
    let found = unknown_boots(&serde_json::from_str(&r.stdout).unwrap());
    assert_eq!(found.iter().map(|(id, _)| *id).collect::<Vec<_>>(), vec![6], "{found:?}");
    // the operator's word: local-boot writes today's mapping, and the plan says so
    let r =
        run(&["plan", "--json", "--tftp-root", &one_host, "--resolve", "unknown-boot=local-boot"], &src, &tgt, None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    let n6 = plan["nodes"].as_array().unwrap().iter().find(|n| n["nova_bm_id"] == 6).unwrap();
    assert_eq!(n6["next_boot"]["how"], "local-boot", "{n6}");
}
