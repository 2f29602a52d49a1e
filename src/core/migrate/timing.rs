//! How long a run took: the wall time of each phase (read, plan, load, commit, verify), the
//! throughput of a load over a moving window (nodes/s and the time left), and durations written
//! for people ("850 µs", "41 ms", "1.52 s", "2 min 03 s").

use std::collections::VecDeque;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The wall time of each phase of a run, in milliseconds (None: the phase did not run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Phases {
    /// reading nova_bm, the Ironic database's state and Nova's facts
    pub read_ms: Option<f64>,
    /// computing the plan (the last one, after the last decision)
    pub plan_ms: Option<f64>,
    /// from the start of the load to just before its commit (every batch, the run record)
    pub load_ms: Option<f64>,
    /// the commit (or, for a rehearsal, the rollback)
    pub commit_ms: Option<f64>,
    /// comparing what was written with the database, nova_bm and the API
    pub verify_ms: Option<f64>,
}

impl Phases {
    /// (name, milliseconds) of the phases that ran, in order.
    pub fn list(&self) -> Vec<(&'static str, f64)> {
        [
            ("read", self.read_ms),
            ("plan", self.plan_ms),
            ("load", self.load_ms),
            ("commit", self.commit_ms),
            ("verify", self.verify_ms),
        ]
        .into_iter()
        .filter_map(|(n, v)| v.map(|v| (n, v)))
        .collect()
    }

    /// "read 12 ms · plan 3.1 ms · …"; `rolled_back` names the commit phase "rollback".
    pub fn line(&self, rolled_back: bool) -> String {
        self.list()
            .into_iter()
            .map(|(n, v)| format!("{} {}", if n == "commit" && rolled_back { "rollback" } else { n }, human_ms(v)))
            .collect::<Vec<_>>()
            .join(" · ")
    }
}

/// Milliseconds of a duration, with the fraction.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A duration for people: "850 µs", "4.2 ms", "41 ms", "1.52 s", "2 min 03 s".
pub fn human_ms(ms: f64) -> String {
    if !ms.is_finite() || ms < 0.0 {
        return "-".into();
    }
    if ms < 1.0 {
        format!("{:.0} µs", ms * 1000.0)
    } else if ms < 10.0 {
        format!("{ms:.1} ms")
    } else if ms < 1000.0 {
        format!("{ms:.0} ms")
    } else if ms < 60_000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else {
        let s = (ms / 1000.0).round() as u64;
        format!("{} min {:02} s", s / 60, s % 60)
    }
}

/// A rate for people: "35", "1,250", "0.4".
pub fn human_rate(per_s: f64) -> String {
    if !per_s.is_finite() {
        return "-".into();
    }
    if per_s < 10.0 {
        return format!("{per_s:.1}");
    }
    let n = per_s.round() as u64;
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The throughput of a load over the last [`Throughput::WINDOW_MS`]: fed (time since the load
/// started, nodes done) after each batch.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Throughput {
    samples: VecDeque<(f64, usize)>,
    /// nodes/s of each batch, oldest first (for a sparkline); at most [`Throughput::KEEP`]
    pub per_batch: VecDeque<f64>,
}

impl Throughput {
    pub const WINDOW_MS: f64 = 5000.0;
    pub const KEEP: usize = 240;

    pub fn push(&mut self, at_ms: f64, done: usize) {
        let (t0, d0) = self.samples.back().copied().unwrap_or((0.0, 0));
        if at_ms > t0 && done >= d0 {
            if self.per_batch.len() >= Self::KEEP {
                self.per_batch.pop_front();
            }
            self.per_batch.push_back((done - d0) as f64 * 1000.0 / (at_ms - t0));
        }
        self.samples.push_back((at_ms, done));
        // keep one sample older than the window: the window's rate starts from it
        while self.samples.len() > 2 && self.samples[1].0 < at_ms - Self::WINDOW_MS {
            self.samples.pop_front();
        }
    }

    /// Nodes per second over the window (from the load's start while the window holds one sample).
    pub fn rate(&self) -> Option<f64> {
        let &(t1, d1) = self.samples.back()?;
        let (t0, d0) = if self.samples.len() >= 2 { self.samples[0] } else { (0.0, 0) };
        (t1 > t0).then(|| (d1 - d0) as f64 * 1000.0 / (t1 - t0))
    }

    /// Seconds left for `total` nodes at the window's rate.
    pub fn eta_s(&self, total: usize) -> Option<f64> {
        let &(_, done) = self.samples.back()?;
        let rate = self.rate().filter(|r| *r > 0.0)?;
        Some(total.saturating_sub(done) as f64 / rate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_rates_for_people() {
        assert_eq!(human_ms(0.85), "850 µs");
        assert_eq!(human_ms(4.24), "4.2 ms");
        assert_eq!(human_ms(41.4), "41 ms");
        assert_eq!(human_ms(1520.0), "1.52 s");
        assert_eq!(human_ms(123_000.0), "2 min 03 s");
        assert_eq!(human_rate(1250.4), "1,250");
        assert_eq!(human_rate(1_234_567.0), "1,234,567");
        assert_eq!(human_rate(0.42), "0.4");
    }

    #[test]
    fn the_rate_is_over_a_moving_window() {
        let mut t = Throughput::default();
        assert_eq!(t.rate(), None);
        t.push(1000.0, 100);
        assert_eq!(t.rate(), Some(100.0), "one sample: from the start");
        assert_eq!(t.eta_s(300), Some(2.0));
        // slow at first, then 1000 nodes/s for longer than the window: the window forgets the start
        for i in 1..=20 {
            t.push(1000.0 + 500.0 * i as f64, 100 + 500 * i);
        }
        assert!((t.rate().unwrap() - 1000.0).abs() < 1e-6, "{:?}", t.rate());
        assert_eq!(t.per_batch.back().copied(), Some(1000.0));
        assert_eq!(t.per_batch.front().copied(), Some(100.0));
        let p = Phases { read_ms: Some(12.0), load_ms: Some(41.0), commit_ms: Some(0.5), ..Default::default() };
        assert_eq!(p.line(true), "read 12 ms · load 41 ms · rollback 500 µs");
    }
}
