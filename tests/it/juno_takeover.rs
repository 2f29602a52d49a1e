//! The REAL Juno Ironic (2014.2, scripts/juno.sh) takes over what bm2ironic migrated: API and
//! conductor in one process (`juno.sh allinone`), `pxe_ipmitool` nodes whose BMCs are fake ones
//! (scripts/fakebmc.py, PyPI pyghmi) on port 623 of 127.0.26.1-3 (Juno's ipmitool driver has no
//! port setting). Checked: each active node gets the conductor's affinity (Juno's takeover ran: PXE
//! config written, images fetched), every node's power state is read from its BMC (on/off as the
//! machine), no `last_error`, and no power action reaches a BMC.
//!
//! MOCKED (the only mock here, and why): Glance and Keystone's v2.0 token call, one small server
//! (scripts/fakeglance.py). Juno's `pxe` takeover (`PXEDeploy.prepare`) asks Glance for the image's
//! kernel and ramdisk ids and downloads the deploy and instance kernels and ramdisks; before that its
//! conductor asks Keystone v2.0 for an admin token (even with `noauth`). No Glance runs here, and the
//! real Keystone of the tests (30.0.0) has no v2.0 API any more.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{server_env, Backend, TestDb, IRONIC_VENV};
use crate::juno::{cli, dbsync, juno_venv, nova_db, repo, sqlalchemy_url, text, KERNEL, RAMDISK};
use bm2ironic::core::demo::fixture::Fixture;
use serde_json::{json, Value};

/// A child process and the lines it printed; its process group is killed when dropped.
pub(crate) struct Proc(Child, pub(crate) Arc<Mutex<Vec<String>>>);
impl Drop for Proc {
    fn drop(&mut self) {
        let pg = format!("-{}", self.0.id());
        let _ = Command::new("kill").args(["-s", "KILL", "--", &pg]).status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Proc {
    pub(crate) fn spawn(cmd: &mut Command) -> Proc {
        use std::os::unix::process::CommandExt;
        let mut child =
            cmd.stdout(Stdio::piped()).stderr(Stdio::null()).stdin(Stdio::null()).process_group(0).spawn().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let out = child.stdout.take().unwrap();
        let l2 = lines.clone();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                l2.lock().unwrap().push(l);
            }
        });
        Proc(child, lines)
    }

    pub(crate) fn said(&self) -> Vec<String> {
        self.1.lock().unwrap().clone()
    }
}

/// A fake BMC on ADDR:623 with the machine `power` ("on"/"off"), run by the Ironic 39 venv's Python.
pub(crate) fn bmc(ironic_venv: &Path, addr: &str, password: &str, power: &str) -> Proc {
    Proc::spawn(
        Command::new(ironic_venv.join("bin/python"))
            .arg(repo().join("scripts/fakebmc.py"))
            .args(["623", "admin", password, addr, power]),
    )
}

/// Waits until `addr:port` accepts TCP connections.
pub(crate) async fn wait_port(port: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{what} did not listen on 127.0.0.1:{port}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Image ids of the fake Glance: the instances' images and their kernel and ramdisk.
pub(crate) const IMAGE: &str = "11111111-0000-4000-8000-00000000000a";
pub(crate) const KERNEL_I: &str = "11111111-0000-4000-8000-00000000000b";
pub(crate) const RAMDISK_I: &str = "11111111-0000-4000-8000-00000000000c";

/// The fake Glance (and Keystone v2.0 token) on 127.0.0.1:`port`, serving small files from `dir`.
pub(crate) async fn fake_glance(dir: &Path, port: u16) -> Proc {
    let mut catalog = serde_json::Map::new();
    for (id, props) in [
        (KERNEL, json!({})),
        (RAMDISK, json!({})),
        (KERNEL_I, json!({})),
        (RAMDISK_I, json!({})),
        (IMAGE, json!({"kernel_id": KERNEL_I, "ramdisk_id": RAMDISK_I})),
    ] {
        let f = dir.join(format!("{id}.img"));
        // 4 KiB exactly: Juno parses `qemu-img info`, and today's qemu-img writes a fractional size
        // as "1.5 KiB", which Juno's parser (made for 2014's "1.5K") cannot read
        let mut bytes = format!("the bytes of image {id}\n").into_bytes();
        bytes.resize(4096, b'.');
        std::fs::write(&f, bytes).unwrap();
        catalog.insert(id.into(), json!({"file": f, "properties": props}));
    }
    let cat = dir.join("catalog.json");
    std::fs::write(&cat, Value::Object(catalog).to_string()).unwrap();
    let p =
        Proc::spawn(Command::new("python3").arg(repo().join("scripts/fakeglance.py")).arg(port.to_string()).arg(cat));
    wait_port(port, "fakeglance.py").await;
    p
}

/// Juno's API and conductor in one process (`juno.sh allinone-fg`) on 127.0.0.1:`port`, power sync
/// and takeover every 2 s, Glance at `glance_port`; its work dir (ironic.conf, ironic.log, tftpboot).
pub(crate) async fn juno_allinone(
    venv: &Path,
    db: &TestDb,
    port: u16,
    glance_port: u16,
    env: &[(&str, &str)],
) -> (Proc, PathBuf) {
    let base = venv.parent().unwrap();
    let p = Proc::spawn(
        Command::new("bash")
            .arg(repo().join("scripts/juno.sh"))
            .args(["allinone-fg", &sqlalchemy_url(db), &port.to_string()])
            .env("BM2_JUNO_BASE", base)
            .env("BM2_JUNO_GLANCE", format!("127.0.0.1:{glance_port}"))
            .env("BM2_JUNO_SYNC_INTERVAL", "2")
            .envs(env.iter().copied()),
    );
    let dir = base.join(format!("allinone-{port}"));
    let deadline = Instant::now() + Duration::from_secs(90);
    while !reqwest::get(format!("http://127.0.0.1:{port}/v1")).await.is_ok_and(|r| r.status().is_success()) {
        let log = std::fs::read_to_string(dir.join("ironic.log")).unwrap_or_default();
        assert!(Instant::now() < deadline, "Juno's allinone did not answer on {port}:\n{log}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    (p, dir)
}

/// The BMC addresses of this test (127.0.26.1-3, port 623).
const BMCS: [&str; 3] = ["127.0.26.1", "127.0.26.2", "127.0.26.3"];
const GLANCE_PORT: u16 = 6461;
const IRONIC_PORT: u16 = 6462;

/// Nodes 1 (free), 3 (an instance, its machine running) and 6 (an instance, its machine stopped) of
/// `Fixture::generated(6, 1)`, each with its own BMC (`bmcs[i]`, password `bmc-pass-<id>`).
pub(crate) fn small_cloud(bmcs: &[&str; 3]) -> Fixture {
    let mut f = Fixture::generated(6, 1);
    f.nodes.retain(|n| [1, 3, 6].contains(&n.id));
    f.interfaces.retain(|i| i.bm_node_id.is_some_and(|n| [1, 3, 6].contains(&n)));
    for (n, addr) in f.nodes.iter_mut().zip(bmcs) {
        n.pm_address = Some(addr.to_string());
        n.pm_password = Some(bm2ironic::core::db::secret::Secret::new(format!("bmc-pass-{}", n.id)));
    }
    f
}

/// Waits until `sql` (one row, one column) says "1", or panics with the log.
pub(crate) async fn wait_for(db: &TestDb, sql: &str, secs: u64, what: &str, log: &Path) -> Duration {
    let t0 = Instant::now();
    loop {
        if db.scalar_i64(sql).await == 1 {
            return t0.elapsed();
        }
        if t0.elapsed() > Duration::from_secs(secs) {
            let l = std::fs::read_to_string(log).unwrap_or_default();
            let tail: Vec<&str> = l.lines().rev().take(60).collect::<Vec<_>>().into_iter().rev().collect();
            panic!("{what}: not after {secs} s; {}:\n{}", log.display(), tail.join("\n"));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn juno_conductor_takes_the_migrated_nodes_over() {
    let Some(venv) = juno_venv() else { return };
    let Some(ironic_venv) = server_env(IRONIC_VENV).map(PathBuf::from) else { return };
    let t0 = Instant::now();
    let f = small_cloud(&BMCS);
    let src = TestDb::with_fixture(Backend::Sqlite, "jtsrc", &f).await.unwrap();
    let nova = nova_db(&[(3, Some(IMAGE), Some(40)), (6, Some(IMAGE), None)]).await;
    let tgt = dbsync(&venv, Backend::Sqlite, "jttgt").await;
    let logs = tempfile::tempdir().unwrap();
    let out = cli(logs.path(), &src, &nova, &tgt)
        .args(["migrate", "--via", "db", "--yes"])
        .args(["--deploy-kernel", KERNEL, "--deploy-ramdisk", RAMDISK, "--default-arch", "x86_64"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));

    // the machines: node 1 free and off, node 3's running, node 6's stopped
    let bmcs: Vec<Proc> = [(1, "off"), (3, "on"), (6, "off")]
        .iter()
        .zip(BMCS)
        .map(|((id, power), addr)| bmc(&ironic_venv, addr, &format!("bmc-pass-{id}"), power))
        .collect();
    let images = tempfile::tempdir().unwrap();
    let glance = fake_glance(images.path(), GLANCE_PORT).await;
    let (_juno, dir) = juno_allinone(&venv, &tgt, IRONIC_PORT, GLANCE_PORT, &[]).await;
    let log = dir.join("ironic.log");

    let uuid = |id: i64| format!("bbbbbbbb-0000-4000-8000-{id:012}");
    let took = wait_for(
        &tgt,
        "SELECT CASE WHEN COUNT(*) = 3 THEN 1 ELSE 0 END FROM nodes WHERE power_state IS NOT NULL AND reservation IS NULL AND (provision_state IS NULL OR conductor_affinity IS NOT NULL)",
        45,
        "Juno's conductor: power read and active nodes taken over",
        &log,
    )
    .await;
    let conductor = tgt.rows("SELECT CAST(id AS TEXT), hostname FROM conductors").await;
    assert_eq!(conductor.len(), 1, "{conductor:?}");
    let rows = tgt
        .rows("SELECT uuid, COALESCE(provision_state, 'NULL'), power_state, COALESCE(CAST(conductor_affinity AS TEXT), 'NULL'), COALESCE(last_error, 'NULL'), COALESCE(target_power_state, 'NULL'), instance_info FROM nodes ORDER BY id")
        .await;
    let want = [
        (1, "NULL", "power off", "NULL"),
        (3, "active", "power on", conductor[0][0].as_str()),
        (6, "active", "power off", conductor[0][0].as_str()),
    ];
    for (r, (id, prov, power, affinity)) in rows.iter().zip(want) {
        assert_eq!(r[0], uuid(id));
        // Juno takes over only `active` nodes (_sync_local_state): a free node keeps no affinity
        assert_eq!(
            (r[1].as_str(), r[2].as_str(), r[3].as_str()),
            (prov, power, affinity),
            "node {id}: provision, power (as its machine), affinity"
        );
        assert_eq!(
            (r[4].as_str(), r[5].as_str()),
            ("NULL", "NULL"),
            "node {id}: no last_error, no power action pending"
        );
    }
    // no power action reached a BMC (fakebmc.py prints each one)
    for (b, addr) in bmcs.iter().zip(BMCS) {
        assert!(b.said().is_empty(), "BMC {addr} was told: {:?}", b.said());
    }
    // the takeover itself (PXEDeploy.prepare): Juno asked Glance for the image's kernel and ramdisk
    // and wrote them into instance_info, fetched the four images, wrote each active node's PXE config
    for r in &rows[1..] {
        let ii: Value = serde_json::from_str(&r[6]).unwrap();
        assert_eq!((ii["kernel"].as_str(), ii["ramdisk"].as_str()), (Some(KERNEL_I), Some(RAMDISK_I)), "{}", r[6]);
        let cfg = std::fs::read_to_string(dir.join("tftpboot").join(&r[0]).join("config")).unwrap();
        assert!(cfg.contains(&format!("{}/kernel", r[0])) && cfg.contains(&format!("{}/deploy_kernel", r[0])), "{cfg}");
        // what Juno 2014.2 leaves for the next PXE boot: its takeover writes the config with
        // `default deploy` (the deploy ramdisk, not the instance's `boot` label); docs/juno.md
        assert!(cfg.starts_with("default deploy\n"), "{cfg}");
        for f in ["kernel", "ramdisk", "deploy_kernel", "deploy_ramdisk"] {
            assert!(dir.join("tftpboot").join(&r[0]).join(f).is_file(), "{}/{f}", r[0]);
        }
    }
    // and pointed each of the node's MACs at that config
    for (id, k) in [(3, 0), (3, 1), (6, 0), (6, 1)] {
        let link = dir.join(format!("tftpboot/pxelinux.cfg/01-52-55-{k:02x}-00-00-{id:02x}"));
        assert_eq!(std::fs::read_link(&link).unwrap(), dir.join("tftpboot").join(uuid(id)).join("config"));
    }
    let asked = glance.said();
    for id in [KERNEL, RAMDISK, KERNEL_I, RAMDISK_I] {
        assert!(asked.contains(&format!("GET /v1/images/{id}")), "{id} fetched: {asked:?}");
    }
    assert!(asked.iter().any(|l| l == "POST /v2.0/tokens"), "the admin token: {asked:?}");
    let l = std::fs::read_to_string(&log).unwrap();
    assert!(!l.contains(" ERROR ") && !l.contains("Traceback"), "Juno's log has errors:\n{l}");
    juno_boot_fixes_the_next_boot(logs.path(), &src, &nova, &tgt, &dir.join("tftpboot"));
    eprintln!("Juno's takeover: {took:?} after it started; the test {:?}", t0.elapsed());
}

/// After Juno's takeover, `bm2ironic juno-boot` (docs/juno.md): without `--apply` nothing changes;
/// with it each active node's config boots its `label boot` with `root=UUID=<the uuid in nova
/// baremetal's config>`, as Juno's own deploy leaves it; the free node gets none; a second run
/// changes nothing.
fn juno_boot_fixes_the_next_boot(logs: &Path, src: &TestDb, nova: &TestDb, tgt: &TestDb, tftp: &Path) {
    let uuid = |id: i64| format!("bbbbbbbb-0000-4000-8000-{id:012}");
    let config = |id: i64| std::fs::read_to_string(tftp.join(uuid(id)).join("config")).unwrap();
    let before = [config(3), config(6)];
    let run = |apply: bool| {
        let mut c = cli(logs, src, nova, tgt);
        c.args(["juno-boot", "--pxe-tftp-root"]).arg(tftp);
        if apply {
            c.arg("--apply");
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let shown = run(false);
    assert!(shown.contains("would switch") && shown.contains("2 node(s), 0 skipped"), "{shown}");
    assert!(!shown.contains(&uuid(1)), "the free node is not looked at: {shown}");
    assert_eq!([config(3), config(6)], before, "without --apply nothing changes");

    let applied = run(true);
    assert_eq!(applied.matches("switched").count(), 2, "{applied}");
    // the root uuid nova baremetal's own config booted (the tree `migrate --tftp-root` read)
    let nova_tree = logs.join("tftpboot");
    for (id, old) in [3, 6].into_iter().zip(&before) {
        let nova_cfg =
            std::fs::read_to_string(nova_tree.join(format!("aaaaaaaa-0000-4000-8000-{id:012}/config"))).unwrap();
        let root = nova_cfg.split_whitespace().find_map(|w| w.strip_prefix("root=UUID=")).unwrap().to_string();
        let cfg = config(id);
        assert!(cfg.starts_with("default boot\n"), "{cfg}");
        let boot = cfg.split("label boot\n").nth(1).unwrap();
        let append = boot.lines().find(|l| l.starts_with("append ")).unwrap();
        assert!(append.contains(&format!(" root=UUID={root} ro ")), "node {id}: {append}");
        assert!(!cfg.contains("{{ ROOT }}"), "{cfg}");
        // everything else as Juno wrote it (its switch_pxe_config changes those two things only)
        let want = old.replacen("default deploy", "default boot", 1).replace("{{ ROOT }}", &format!("UUID={root}"));
        assert_eq!(&cfg, &want);
    }
    assert!(!tftp.join(uuid(1)).exists(), "the free node has no config");
    let again = run(true);
    assert!(again.matches("already `default boot`").count() == 2 && !again.contains("switched"), "{again}");
    assert_eq!(config(3).matches("default boot").count(), 1);
}
