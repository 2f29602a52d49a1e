//! The cloud of the deploy test as nova baremetal left it: a running instance node (its boot learned
//! from the compute host's TFTP tree) and a free node, each machine a QEMU VM big enough for the
//! deploy ramdisk (1,536 MiB, a 4 GiB sparse disk), its BMC on a loopback address of its own; and the
//! Ironic API calls the test makes as Nova (or an operator) would.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bm2ironic::core::demo::fixture::Fixture;
use serde_json::{json, Value};

use crate::common::bmc::{Bmc, BmcOptions, DeployVm, Vm};
use crate::common::ironic;
use crate::common::netboot::{plain, TwoNodes};

pub const BMC_USER: &str = "admin";
pub const BMC_PASSWORD: &str = "deploy-test-pass";

/// The instance node (running, its boot learned), its instance, its NIC and BMC.
pub const NODE: &str = "1be0c0de-0046-4000-8000-000000000001";
pub const INSTANCE: &str = "1a57a7ce-0046-4000-8000-000000000001";
pub const NODE_MAC: &str = "52:54:00:46:00:01";
pub const NODE_BMC: &str = "127.0.46.1";
/// The free node: the first new instance of the cloud lands here.
pub const FREE: &str = "1be0c0de-0046-4000-8000-000000000002";
pub const FREE_MAC: &str = "52:54:00:46:00:02";
pub const FREE_BMC: &str = "127.0.46.2";

/// The name the agent's URLs use: 127.0.0.1 for the conductor (its /etc/hosts in a namespace of its
/// own), QEMU's host address 10.0.2.2 inside the VM (the ramdisk's /init reads `bm2.host=`).
pub const HOST_NAME: &str = "bm2-deploy-host";
pub const VM_HOST_ADDR: &str = "10.0.2.2";
/// The agent's port inside the VM (ironic-python-agent's default).
pub const AGENT_PORT: u16 = 9999;

/// nova_bm: the instance node (active, its instance running) and the free node, both sized as the
/// machines are (1 cpu, 1,536 MiB, 4 GB).
pub fn nova_bm() -> Fixture {
    TwoNodes {
        enrolled: (2014, 6, 1),
        nodes: [(NODE, NODE_BMC), (FREE, FREE_BMC)],
        bmc_login: (BMC_USER, BMC_PASSWORD),
        size: (1, 1536, 4),
        instance: (INSTANCE, "instance-00000046"),
        root_swap_mb: (1024, 0),
        image_path: None,
        macs: &[(1, NODE_MAC), (2, FREE_MAC)],
    }
    .fixture()
}

/// A machine: its BMC and QEMU VM (network boot from the conductor's TFTP root, the host's loopback
/// reached at 10.0.2.2, the agent's port forwarded from `agent_port` on 127.0.0.1).
pub struct Machine {
    pub name: &'static str,
    pub dir: PathBuf,
    pub disk: PathBuf,
    pub agent_port: u16,
    pub bmc: Bmc,
}

impl Machine {
    /// `net`: the TFTP root its network serves (also over HTTP on 127.0.0.1:`boot_http`, where the
    /// machine loads it from), and kvm or tcg; `disk`: the machine's disk as it is before the
    /// migration (copied; grown to 4 GiB sparse).
    pub fn start(
        venv: &Path,
        work: &Path,
        name: &'static str,
        (addr, mac): (&str, &str),
        (tftp, boot_http, accel): (&Path, u16, &str),
        disk: Option<&Path>,
        agent_port: u16,
    ) -> Machine {
        let dir = work.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let disk_file = dir.join("disk.img");
        match disk {
            Some(d) => drop(std::fs::copy(d, &disk_file).unwrap()),
            None => std::fs::write(&disk_file, b"").unwrap(),
        }
        let mut o = BmcOptions { user: BMC_USER.into(), ..BmcOptions::new(venv, BMC_PASSWORD).at(addr, 623) };
        o.stderr = Some(dir.join("bmc.stderr"));
        o.vm = Some(Vm {
            dir: dir.join("vm"),
            disk: disk_file.clone(),
            tftp: tftp.to_path_buf(),
            mac: mac.into(),
            accel: accel.into(),
        });
        o.deploy = Some(DeployVm {
            memory_mib: 1536,
            disk_gib: 4,
            hostfwd: vec![(agent_port, AGENT_PORT)],
            reach_host: true,
            boot_http: Some(boot_http),
        });
        let m = Machine { name, dir, disk: disk_file, agent_port, bmc: Bmc::start(o) };
        m.bmc.wait_power("off");
        m
    }

    pub fn console(&self) -> String {
        plain(&String::from_utf8_lossy(&std::fs::read(self.dir.join("vm/console.log")).unwrap_or_default()))
    }

    /// How many times `what` is on the console.
    pub fn count(&self, what: &str) -> usize {
        self.console().matches(what).count()
    }

    /// Waits until `what` is on the console `n` times; false at the deadline.
    pub fn wait_console(&self, what: &str, n: usize, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if self.count(what) >= n {
                return true;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        self.count(what) >= n
    }

    /// The lines of the console that hold `what`.
    pub fn lines(&self, what: &str) -> Vec<String> {
        self.console().lines().filter(|l| l.contains(what)).map(str::to_string).collect()
    }

    /// The first 512 bytes of its disk (the MBR and its partition table).
    pub fn mbr(&self) -> Vec<u8> {
        let mut b = std::fs::read(&self.disk).map(|d| d[..512.min(d.len())].to_vec()).unwrap_or_default();
        b.resize(512, 0);
        b
    }

    pub fn tail(&self) -> String {
        let c = self.console();
        let lines: Vec<&str> = c.lines().filter(|l| !l.trim().is_empty()).collect();
        let qemu = std::fs::read_to_string(self.dir.join("vm/qemu.log")).unwrap_or_default();
        let qemu: Vec<&str> = qemu.lines().collect();
        format!(
            "--- {} console (last lines) ---\n{}\n--- qemu.log (last lines) ---\n{}\n--- BMC: {:?}",
            self.name,
            lines[lines.len().saturating_sub(40)..].join("\n"),
            qemu[qemu.len().saturating_sub(6)..].join("\n"),
            self.bmc.power_actions()
        )
    }
}

/// An MBR with a partition table: the boot signature and at least one partition entry.
pub fn has_partitions(mbr: &[u8]) -> bool {
    mbr[510..512] == [0x55, 0xaa] && mbr[446..510].iter().any(|b| *b != 0)
}

/// A call to Ironic's API at the latest microversion: (status, body text).
pub async fn call(base: &str, method: reqwest::Method, path: &str, body: Value) -> (u16, String) {
    let r = reqwest::Client::new()
        .request(method, format!("{base}{path}"))
        .header("X-OpenStack-Ironic-API-Version", "latest")
        .json(&body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap_or_default())
}

/// PATCH a node (JSON patch `ops`); must succeed.
pub async fn patch(base: &str, node: &str, ops: Value) {
    let (status, body) = call(base, reqwest::Method::PATCH, &format!("/v1/nodes/{node}"), ops).await;
    assert_eq!(status, 200, "PATCH {node}: {body}");
}

/// PUT a provision state target (`active`, `deleted`, ...), as Nova's driver asks; must be accepted.
pub async fn provision(base: &str, node: &str, target: &str) {
    let (status, body) =
        call(base, reqwest::Method::PUT, &format!("/v1/nodes/{node}/states/provision"), json!({"target": target}))
            .await;
    assert_eq!(status, 202, "provision {target} of {node}: {body}");
}

/// The provision states a node went through, as Ironic's API showed them (polled), with when.
pub struct States {
    pub seen: Vec<(String, Duration)>,
    started: Instant,
}

impl States {
    pub fn new() -> States {
        States { seen: Vec::new(), started: Instant::now() }
    }

    /// Polls the node until its provision state is `want` and nothing is under way (its target
    /// state null); panics on `deploy failed`, `clean failed`, `error` or at the deadline. Each
    /// state seen is noted; `each` runs at every poll with the node.
    pub async fn wait(
        &mut self,
        base: &str,
        node: &str,
        want: &str,
        within: Duration,
        mut each: impl FnMut(&Value),
        context: impl Fn() -> String,
    ) -> Duration {
        let deadline = Instant::now() + within;
        loop {
            let n = ironic::get(base, &format!("/v1/nodes/{node}")).await;
            let state = n["provision_state"].as_str().unwrap_or("null").to_string();
            if self.seen.last().map(|(s, _)| s != &state).unwrap_or(true) {
                self.seen.push((state.clone(), self.started.elapsed()));
            }
            each(&n);
            if state == want && n["target_provision_state"].is_null() {
                return self.started.elapsed();
            }
            assert!(
                !["deploy failed", "clean failed", "error"].contains(&state.as_str()),
                "{node} went {state}: {}\nstates {:?}\n{}",
                n["last_error"],
                self.seen,
                context()
            );
            assert!(
                Instant::now() < deadline,
                "{node} not {want} within {within:?}: {state}, {}\nstates {:?}\n{}",
                n["last_error"],
                self.seen,
                context()
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// The states seen, for a message: `deploying 0s, wait call-back 3s, ...`.
    pub fn line(&self) -> String {
        self.seen.iter().map(|(s, t)| format!("{s} {}s", t.as_secs())).collect::<Vec<_>>().join(", ")
    }
}
