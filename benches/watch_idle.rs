//! What following logs costs: process CPU time over 5 s of `bm2ironic::core::logs::watch::watch` on two files, idle and
//! with 1,000 lines/s arriving, measured side by side in one run (from /proc/self/stat; Linux).
//! Then the throughput: 400,000 lines appended at once, and the time until every record has been
//! parsed, classified and delivered (lines per second).
//! Run: cargo bench --bench watch_idle

use std::collections::HashSet;
use std::io::Write;
use std::time::Duration;

use bm2ironic::core::logs::watch::{Patterns, Start, WatchedLog};
use tokio_util::sync::CancellationToken;

fn cpu_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks * 10.0 // USER_HZ = 100
}

fn run(lines_per_sec: u64) -> (f64, usize) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        let logs: Vec<WatchedLog> = ["ironic", "nova-compute"].iter().map(|n| WatchedLog { name: n.to_string(), path: dir.path().join(format!("{n}.log")) }).collect();
        for l in &logs {
            std::fs::write(&l.path, "").unwrap();
        }
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        let (l2, c2) = (logs.clone(), cancel.clone());
        let patterns = Patterns::default_set();
        let task = tokio::spawn(async move { bm2ironic::core::logs::watch::watch(&l2, Start::End, &patterns, &HashSet::new(), tx, c2).await });
        let counter = tokio::spawn(async move {
            let mut n = 0;
            while rx.recv().await.is_some() {
                n += 1;
            }
            n
        });
        let before = cpu_ms();
        let path = logs[0].path.clone();
        let writer = std::thread::spawn(move || {
            if lines_per_sec == 0 {
                std::thread::sleep(Duration::from_secs(5));
                return;
            }
            let mut w = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
            for i in 0..5 * lines_per_sec {
                writeln!(w, "2014-10-02 12:00:00.000 1 INFO ironic.conductor.manager [req-{i} - -] took over node 1be26c0b-03f2-4d2e-ae87-c02d7f33c123").unwrap();
                if i % (lines_per_sec / 10) == 0 {
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        });
        writer.join().unwrap();
        tokio::time::sleep(Duration::from_millis(600)).await;
        let spent = cpu_ms() - before;
        cancel.cancel();
        task.await.unwrap().unwrap();
        (spent, counter.await.unwrap())
    })
}

/// Lines per second: `n` lines appended as fast as the disk takes them, until the last record arrives.
fn throughput(n: usize) -> f64 {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        let logs: Vec<WatchedLog> = vec![WatchedLog { name: "ironic".into(), path: dir.path().join("ironic.log") }];
        std::fs::write(&logs[0].path, "").unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        let (l2, c2) = (logs.clone(), cancel.clone());
        let patterns = Patterns::default_set();
        let task = tokio::spawn(async move { bm2ironic::core::logs::watch::watch(&l2, Start::End, &patterns, &HashSet::new(), tx, c2).await });
        tokio::time::sleep(Duration::from_millis(300)).await;
        let started = std::time::Instant::now();
        let path = logs[0].path.clone();
        std::thread::spawn(move || {
            let mut w = std::io::BufWriter::new(std::fs::OpenOptions::new().append(true).open(&path).unwrap());
            for i in 0..n {
                let level = if i % 50 == 0 { "ERROR" } else { "INFO" };
                writeln!(w, "2014-10-02 12:00:00.{:03} 1 {level} ironic.conductor.manager [req-{i} - -] took over node 1be26c0b-03f2-4d2e-ae87-c02d7f33c123", i % 1000).unwrap();
            }
        });
        let mut got = 0;
        while got < n {
            match tokio::time::timeout(Duration::from_secs(60), rx.recv()).await {
                Ok(Some(_)) => got += 1,
                _ => break,
            }
        }
        let secs = started.elapsed().as_secs_f64();
        cancel.cancel();
        let _ = task.await;
        assert_eq!(got, n, "every line became a record");
        n as f64 / secs
    })
}

fn main() {
    let (idle, n0) = run(0);
    let (busy, n1) = run(1000);
    println!("idle 5 s:            {idle:>6.0} ms CPU ({:.2}% of one core), {n0} records", idle / 5000.0 * 100.0);
    println!("1,000 lines/s, 5 s:  {busy:>6.0} ms CPU ({:.2}% of one core), {n1} records", busy / 5000.0 * 100.0);
    println!("ratio busy/idle: {:.1}x", busy / idle.max(10.0));
    let rate = throughput(400_000);
    println!("throughput: {rate:.0} lines/s parsed, classified and delivered (400,000 lines appended at once)");
}
