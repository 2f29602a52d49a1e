//! Where the time of an API load goes: every request to Ironic counted by kind (the method and the
//! path with ids and the query left out: `GET /v1/nodes/{id}?…`), and every wait for the conductor
//! by the state it ended in (`wait → manageable`). A request's time is what the client saw: Ironic's
//! work plus its queue. A wait is the conductor's work plus the polling's lag. The load writes the
//! table to the audit log at its end and, with `--json`, as a `timings` event; docs/performance.md
//! splits a 1,000-node load with it.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;

/// One kind of request or wait.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timing {
    pub kind: String,
    pub count: u64,
    pub total_ms: f64,
    pub max_ms: f64,
}

#[derive(Debug, Default)]
pub struct Timings {
    by_kind: Mutex<BTreeMap<String, (u64, Duration, Duration)>>,
}

impl Timings {
    pub fn add(&self, kind: String, took: Duration) {
        let mut m = self.by_kind.lock().unwrap_or_else(|e| e.into_inner());
        let e = m.entry(kind).or_default();
        e.0 += 1;
        e.1 += took;
        e.2 = e.2.max(took);
    }

    /// Every kind seen, by name.
    pub fn list(&self) -> Vec<Timing> {
        let m = self.by_kind.lock().unwrap_or_else(|e| e.into_inner());
        m.iter()
            .map(|(k, (n, total, max))| Timing {
                kind: k.clone(),
                count: *n,
                total_ms: total.as_secs_f64() * 1000.0,
                max_ms: max.as_secs_f64() * 1000.0,
            })
            .collect()
    }
}

/// `GET /v1/nodes/{id}?…` for `GET /v1/nodes/1be0c0de-…?fields=uuid,…`: a segment holding a digit
/// and only hex digits, dashes and colons is an id (a uuid, a MAC); the query is only marked.
pub fn request_kind(method: &str, path: &str) -> String {
    let (p, query) = match path.split_once('?') {
        Some((p, _)) => (p, "?…"),
        None => (path, ""),
    };
    let segs: Vec<&str> = p
        .split('/')
        .map(|s| {
            let id = s.len() >= 8
                && s.chars().any(|c| c.is_ascii_digit())
                && s.chars().all(|c| c.is_ascii_hexdigit() || c == '-' || c == ':');
            if id {
                "{id}"
            } else {
                s
            }
        })
        .collect();
    format!("{method} {}{query}", segs.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_leave_ids_and_queries_out() {
        assert_eq!(
            request_kind("GET", "/v1/nodes/1be0c0de-0024-4000-8000-000000000001?fields=uuid,provision_state"),
            "GET /v1/nodes/{id}?…"
        );
        assert_eq!(
            request_kind("PUT", "/v1/nodes/1be0c0de-0024-4000-8000-000000000001/states/provision"),
            "PUT /v1/nodes/{id}/states/provision"
        );
        assert_eq!(request_kind("POST", "/v1/ports"), "POST /v1/ports");
        // a word is not an id, even when it is hex ("deadbeef" has no digit)
        assert_eq!(request_kind("GET", "/v1/nodes/deadbeef"), "GET /v1/nodes/deadbeef");
    }

    #[test]
    fn timings_add_up_per_kind() {
        let t = Timings::default();
        t.add("a".into(), Duration::from_millis(10));
        t.add("a".into(), Duration::from_millis(30));
        t.add("b".into(), Duration::from_millis(5));
        let l = t.list();
        assert_eq!(l.len(), 2);
        assert_eq!((l[0].count, l[0].total_ms.round(), l[0].max_ms.round()), (2, 40.0, 30.0));
        assert_eq!((l[1].kind.as_str(), l[1].count), ("b", 1));
    }
}
