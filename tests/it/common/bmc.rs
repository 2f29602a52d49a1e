//! The one fake BMC starter: scripts/fakebmc.py (PyPI pyghmi, run by the Ironic test venv's Python)
//! on a loopback address, a power state only or, with `--vm`, a QEMU machine its IPMI power actions
//! drive (scripts/bootvm.sh makes its parts). The power actions it was asked for ("power on", "power
//! off", ...) are collected, and every IPMI command it received; ipmitool talks to it like an operator
//! would. Stopped when dropped. `BmcFarm`: many of them in one process (scripts/fakebmcs.py).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::process::Guard;

/// A QEMU machine behind the BMC (fakebmc.py --vm).
#[derive(Clone, Debug)]
pub struct Vm {
    /// Its files: console.log, qemu.log, qmp.sock.
    pub dir: PathBuf,
    /// Its disk (a copy of its own: QEMU locks the image it writes).
    pub disk: PathBuf,
    /// The TFTP root its network serves.
    pub tftp: PathBuf,
    pub mac: String,
    /// kvm or tcg.
    pub accel: String,
}

/// What a machine that runs a deploy (ironic-python-agent) needs beyond a netbooted instance's
/// (fakebmc.py `--memory`, `--disk-size`, `--hostfwd`, `--reach-host`).
#[derive(Clone, Debug)]
pub struct DeployVm {
    pub memory_mib: u32,
    /// The disk grown (sparse) to at least this many GiB.
    pub disk_gib: u32,
    /// (port on 127.0.0.1, the guest's port) forwarded.
    pub hostfwd: Vec<(u16, u16)>,
    /// The guest reaches this host's loopback at 10.0.2.2.
    pub reach_host: bool,
    /// The PXE tree (`Vm::tftp`) also served over HTTP on this 127.0.0.1 port: the machine loads
    /// pxelinux, its config, kernel and initrd from it (fakebmc.py `--boot-http`, needs `reach_host`).
    pub boot_http: Option<u16>,
}

/// What `Bmc::start` starts: `BmcOptions::new(venv, password)`, then what differs.
#[derive(Clone, Debug)]
pub struct BmcOptions {
    /// The venv whose Python has pyghmi (the Ironic test venv).
    pub venv: PathBuf,
    /// A loopback address (127.x.x.x); 127.0.0.1 by default.
    pub addr: String,
    /// 623 by default (the ipmitool default; Juno's driver knows no other).
    pub port: u16,
    pub user: String,
    pub password: String,
    /// The machine's power at start: "on" or "off" (the default).
    pub power: String,
    pub vm: Option<Vm>,
    /// With `vm`: the machine runs deploys.
    pub deploy: Option<DeployVm>,
    /// Where its stderr goes (None: nowhere).
    pub stderr: Option<PathBuf>,
}

impl BmcOptions {
    pub fn new(venv: &Path, password: &str) -> BmcOptions {
        BmcOptions {
            venv: venv.to_path_buf(),
            addr: "127.0.0.1".into(),
            port: 623,
            user: "admin".into(),
            password: password.into(),
            power: "off".into(),
            vm: None,
            deploy: None,
            stderr: None,
        }
    }

    pub fn at(self, addr: &str, port: u16) -> BmcOptions {
        BmcOptions { addr: addr.into(), port, ..self }
    }

    pub fn power(self, power: &str) -> BmcOptions {
        BmcOptions { power: power.into(), ..self }
    }
}

/// A running fake BMC.
pub struct Bmc {
    pub options: BmcOptions,
    process: Guard,
}

impl Bmc {
    pub fn start(o: BmcOptions) -> Bmc {
        let mut c = Command::new(o.venv.join("bin/python"));
        c.arg(super::env::repo_file("scripts/fakebmc.py")).args([
            &o.port.to_string(),
            &o.user,
            &o.password,
            &o.addr,
            &o.power,
        ]);
        if let Some(vm) = &o.vm {
            c.arg("--vm").arg(&vm.dir).arg("--disk").arg(&vm.disk).arg("--tftp").arg(&vm.tftp);
            c.args(["--mac", &vm.mac, "--accel", &vm.accel]);
        }
        if let Some(d) = &o.deploy {
            c.args(["--memory", &d.memory_mib.to_string(), "--disk-size", &d.disk_gib.to_string()]);
            for (host, guest) in &d.hostfwd {
                c.arg("--hostfwd").arg(format!("{host}:{guest}"));
            }
            if d.reach_host {
                c.arg("--reach-host");
            }
            if let Some(port) = d.boot_http {
                c.arg("--boot-http").arg(port.to_string());
            }
        }
        match &o.stderr {
            Some(f) => c.stderr(std::fs::File::create(f).unwrap()),
            None => c.stderr(Stdio::null()),
        };
        let process = Guard::reading_stdout(&mut c);
        Bmc { options: o, process }
    }

    /// The power actions it was asked for so far ("power on", "power off", ...), in order (not the
    /// "ipmi ..." lines: every command it received, `commands`).
    pub fn power_actions(&self) -> Vec<String> {
        self.process.said().into_iter().filter(|l| !l.starts_with("ipmi ")).collect()
    }

    /// Every IPMI command a session sent it, in order (`get-chassis-status`, `chassis-control power-on`, ...).
    pub fn commands(&self) -> Vec<String> {
        self.process.said().iter().filter_map(|l| l.strip_prefix("ipmi ").map(str::to_string)).collect()
    }

    /// ipmitool against this BMC: (success, output).
    pub fn ipmi(&self, args: &[&str]) -> (bool, String) {
        let o = &self.options;
        let out = Command::new("ipmitool")
            .args(["-I", "lanplus", "-H", &o.addr, "-p", &o.port.to_string(), "-U", &o.user, "-P", &o.password])
            .args(["-R", "2", "-N", "1"])
            .args(args)
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        (out.status.success(), text.trim().to_string())
    }

    /// ipmitool that must succeed: its output.
    pub fn must(&self, args: &[&str]) -> String {
        let (ok, out) = self.ipmi(args);
        assert!(ok, "{}: ipmitool {} failed: {out}", self.options.addr, args.join(" "));
        out
    }

    /// Waits (20 s at most) until it answers (pyghmi takes a moment to start) with the power state
    /// `power`.
    pub fn wait_power(&self, power: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let (ok, out) = self.ipmi(&["chassis", "power", "status"]);
            if ok {
                assert_eq!(out, format!("Chassis Power is {power}"), "{}", self.options.addr);
                return;
            }
            let o = &self.options;
            assert!(Instant::now() < deadline, "the BMC on {}:{} never answered: {out}", o.addr, o.port);
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// One BMC of a `BmcFarm` (scripts/fakebmcs.py --spec): a loopback address on port 623.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FarmBmc {
    pub addr: String,
    pub user: String,
    pub password: String,
    /// "on" or "off"
    pub power: String,
    /// the system GUID it answers (None: a random one)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guid: Option<String>,
    /// bound, never answers
    pub silent: bool,
    /// the highest session privilege its user gets (3: OPERATOR, so ADMINISTRATOR is refused)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_privilege: Option<u8>,
}

impl FarmBmc {
    pub fn new(addr: &str, password: &str, power: &str) -> FarmBmc {
        FarmBmc {
            addr: addr.into(),
            user: "admin".into(),
            password: password.into(),
            power: power.into(),
            guid: None,
            silent: false,
            max_privilege: None,
        }
    }
}

/// Many fake BMCs in one process (scripts/fakebmcs.py --spec, the Ironic test venv's pyghmi), each
/// logging every IPMI command it receives. Stopped when dropped.
pub struct BmcFarm {
    pub bmcs: Vec<FarmBmc>,
    process: Guard,
    _spec: tempfile::NamedTempFile,
}

impl BmcFarm {
    /// Starts them and waits (20 s at most) until the first that answers does.
    pub fn start(venv: &Path, bmcs: Vec<FarmBmc>) -> BmcFarm {
        let spec = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(spec.path(), serde_json::to_vec(&bmcs).unwrap()).unwrap();
        let mut c = Command::new(venv.join("bin/python"));
        c.arg(super::env::repo_file("scripts/fakebmcs.py")).arg("--spec").arg(spec.path()).stderr(Stdio::null());
        let process = Guard::reading_stdout(&mut c);
        let farm = BmcFarm { bmcs, process, _spec: spec };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !farm.process.said().iter().any(|l| l.starts_with("serving ")) {
            assert!(Instant::now() < deadline, "fakebmcs.py did not start: {:?}", farm.process.said());
            std::thread::sleep(Duration::from_millis(100));
        }
        farm
    }

    /// The IPMI commands the BMC at `addr` received, in order (`get-chassis-status`, ...).
    pub fn commands(&self, addr: &str) -> Vec<String> {
        let tail = format!(" {addr}");
        self.process
            .said()
            .iter()
            .filter_map(|l| l.strip_prefix("ipmi ").and_then(|l| l.strip_suffix(&tail)).map(str::to_string))
            .collect()
    }

    /// Every line it printed other than the IPMI commands: its power changes ("power on ADDR").
    pub fn power_actions(&self) -> Vec<String> {
        self.process.said().into_iter().filter(|l| l.starts_with("power ")).collect()
    }
}
