//! The BMC check (`plan --check-bmc`, issue #51) at 1,000 BMCs: 1,000 fake BMCs (scripts/fakebmcs.py,
//! four processes of 250 on 127.2.k.x:623, the Ironic test venv's pyghmi) each read once by
//! `bm2ironic::core::bmc::check`, at several concurrency bounds side by side in one run: the wall
//! time, BMCs a second, the ratio to the smallest bound, and the bound kept, seen from both sides:
//! the check's own count of BMCs in flight and, sampled from /proc every 2 ms, how many ipmitool
//! processes were its children at once (a BMC's reads are one ipmitool after the other, so at most
//! one per BMC in flight). Where the CPU went: ipmitool's (the children's rusage) and the fake BMCs'.
//! Run: BM2IRONIC_TEST_IRONIC_VENV=/tmp/bm2ironic-ironic-venv cargo bench --bench bmc_check [-- N]
//! (as root: the BMCs listen on port 623; loopback only)

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bm2ironic::core::bmc::{check, CheckOptions, Power};
use bm2ironic::core::db::secret::Secret;
use bm2ironic::core::source::model::{BmNode, Inventory, InventoryNode};

const PER_PROCESS: usize = 250;
const BOUNDS: [usize; 3] = [8, 32, 64];

/// The fake BMC processes, stopped (their process group, by id) when dropped.
struct Farm(Vec<Child>);

impl Drop for Farm {
    fn drop(&mut self) {
        for c in &mut self.0 {
            unsafe { libc::kill(-(c.id() as i32), libc::SIGTERM) };
            let _ = c.wait();
        }
    }
}

fn addresses(count: usize) -> Vec<String> {
    (0..count).map(|i| format!("127.2.{}.{}", i / PER_PROCESS, i % PER_PROCESS + 1)).collect()
}

fn start_farm(venv: &str, count: usize) -> Farm {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/fakebmcs.py");
    let procs = count.div_ceil(PER_PROCESS);
    let farm = Farm(
        (0..procs)
            .map(|k| {
                let n = PER_PROCESS.min(count - k * PER_PROCESS);
                Command::new(format!("{venv}/bin/python"))
                    .args([script, &format!("127.2.{k}.1"), &n.to_string(), "admin", "benchpw"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .process_group(0)
                    .spawn()
                    .expect("fakebmcs.py")
            })
            .collect(),
    );
    // every process answers (pyghmi takes a moment)
    for k in 0..procs {
        let deadline = Instant::now() + Duration::from_secs(30);
        let addr = format!("127.2.{k}.1");
        loop {
            let out = Command::new("ipmitool")
                .args(["-I", "lanplus", "-H", &addr, "-U", "admin", "-E", "-R", "1", "-N", "1", "power", "status"])
                .env("IPMI_PASSWORD", "benchpw")
                .output()
                .unwrap();
            if out.status.success() {
                break;
            }
            assert!(Instant::now() < deadline, "the fake BMCs at {addr} never answered");
        }
    }
    farm
}

fn inventory(addrs: &[String]) -> Inventory {
    let nodes = addrs
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let node = BmNode {
                id: i as i64 + 1,
                pm_address: Some(a.clone()),
                pm_user: Some("admin".into()),
                pm_password: Some(Secret::new("benchpw")),
                ..Default::default()
            };
            InventoryNode { node, interfaces: vec![] }
        })
        .collect();
    Inventory { nodes, orphan_interfaces: vec![] }
}

/// How many live processes named ipmitool have `parent` as their parent.
fn ipmitool_children(parent: u32) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0 };
    dir.flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|s| {
            let Some((head, rest)) = s.rsplit_once(')') else { return false };
            let ppid = rest.split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok());
            head.ends_with("(ipmitool") && ppid == Some(parent)
        })
        .count()
}

/// CPU seconds (user + system) of the finished children of this process.
fn children_cpu() -> f64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// CPU seconds of process `pid` so far (/proc/PID/stat).
fn cpu_of(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let f: Vec<&str> = stat.rsplit_once(')').map_or(vec![], |(_, r)| r.split_whitespace().collect());
    f.get(11)
        .zip(f.get(12))
        .map_or(0.0, |(u, s)| (u.parse::<f64>().unwrap_or(0.0) + s.parse::<f64>().unwrap_or(0.0)) / 100.0)
}

struct Run {
    bound: usize,
    read: usize,
    secs: f64,
    peak: usize,
    sampled: usize,
    ipmitool_cpu: f64,
    bmc_cpu: f64,
    p50_ms: u64,
}

fn run(rt: &tokio::runtime::Runtime, inv: &Inventory, farm: &Farm, bound: usize) -> Run {
    let opts = CheckOptions { concurrency: bound, timeout: Duration::from_secs(20), ..CheckOptions::default() };
    let (stop, seen) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
    let sampler = {
        let (stop, seen, me) = (stop.clone(), seen.clone(), std::process::id());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                seen.fetch_max(ipmitool_children(me), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let (cpu0, bmc0) = (children_cpu(), farm.0.iter().map(|c| cpu_of(c.id())).sum::<f64>());
    let started = Instant::now();
    let facts = rt.block_on(check(inv, &opts, &|_| {})).expect("ipmitool runs");
    let secs = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    let read = facts.readings.values().filter(|r| r.power == Some(Power::Off)).count();
    if let Some(r) = facts.readings.values().find(|r| r.power.is_none()) {
        println!("bound {bound}: {} BMC(s) not read, e.g. {}: {}", inv.nodes.len() - read, r.address, r.outcome());
    }
    assert!(facts.peak_in_flight <= bound, "{} BMCs in flight, bound {bound}", facts.peak_in_flight);
    let sampled = seen.load(Ordering::Relaxed);
    assert!(sampled <= bound, "{sampled} ipmitool processes at once, bound {bound}");
    let mut ms: Vec<u64> = facts.readings.values().map(|r| r.ms).collect();
    ms.sort_unstable();
    Run {
        bound,
        read,
        secs,
        peak: facts.peak_in_flight,
        sampled,
        ipmitool_cpu: children_cpu() - cpu0,
        bmc_cpu: farm.0.iter().map(|c| cpu_of(c.id())).sum::<f64>() - bmc0,
        p50_ms: ms[ms.len() / 2],
    }
}

fn main() {
    let Some(venv) = std::env::var("BM2IRONIC_TEST_IRONIC_VENV").ok().filter(|v| !v.is_empty()) else {
        println!("bmc_check: SKIPPED: set BM2IRONIC_TEST_IRONIC_VENV (the venv with pyghmi, scripts/ironic.sh)");
        return;
    };
    let count: usize = std::env::args().filter_map(|a| a.parse().ok()).next().unwrap_or(1000);
    let addrs = addresses(count);
    let farm = start_farm(&venv, count);
    let inv = inventory(&addrs);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let runs: Vec<Run> = BOUNDS.iter().map(|b| run(&rt, &inv, &farm, *b)).collect();
    let base = runs[0].secs;
    println!(
        "bmc_check: {count} BMCs (fakebmcs.py x{}), each read once (power status + mc guid), side by side",
        farm.0.len()
    );
    println!(
        "{:>6} {:>6} {:>8} {:>8} {:>9} {:>9} {:>9} {:>10} {:>12} {:>10}",
        "bound", "read", "wall s", "BMC/s", "vs 8", "in flight", "ipmitools", "p50 ms", "ipmitool CPU", "BMCs CPU"
    );
    for r in &runs {
        println!(
            "{:>6} {:>6} {:>8.1} {:>8.1} {:>8.2}x {:>9} {:>9} {:>10} {:>11.1}s {:>9.1}s",
            r.bound,
            r.read,
            r.secs,
            count as f64 / r.secs,
            base / r.secs,
            r.peak,
            r.sampled,
            r.p50_ms,
            r.ipmitool_cpu,
            r.bmc_cpu
        );
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("cores: {}, load average: {}", std::thread::available_parallelism().map_or(0, |n| n.get()), load.trim());
}
