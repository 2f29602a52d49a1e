//! Which Ironic node carries which nova_bm id, for `GET .../os-baremetal-nodes/12`.
//!
//! Ironic cannot filter nodes on `extra`, so the index is built by a scan of the whole node list
//! (`GET /v1/nodes?fields=uuid,extra`, 1000 a page) and kept: nova_bm id -> uuids. The index is
//! only a hint: the handler reads the node itself and checks its marker before answering, so a node
//! deleted, re-created or renumbered since the scan is never answered wrongly. A miss, or a hint
//! the node no longer confirms, rescans, at most once per `rescan_after` (10 s) per view: a script
//! asking for ids that do not exist costs one scan per 10 s, not one per request.
//!
//! A view is what one kind of caller sees: with the caller's own token forwarded, Ironic shows each
//! scope different nodes, so each scope (system, or one project) has its own index, built with a
//! token of that scope; with the proxy's own token there is one view. At most [`MAX_VIEWS`] views.
//!
//! The scan runs as a task of its own: it completes and fills the index even when the request that
//! started it gave up at its deadline, and concurrent lookups of one view wait for the one scan.
//! Cost at 10 000 nodes: 10 pages of about 380 bytes a node (3.8 MB of JSON; 1.6 s against Ironic
//! 39 on SQLite, `BENCH_INDEX_ONLY=1 scripts/bench-proxy.sh 10000`), and about 1 MB of memory per
//! view.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::nova;

/// The most views kept; beyond, the least recently created one is dropped.
pub const MAX_VIEWS: usize = 64;

#[derive(Default)]
struct Scan {
    ids: HashMap<i64, Vec<String>>,
    at: Option<Instant>,
}

struct View {
    created: Instant,
    scan: tokio::sync::Mutex<Scan>,
}

pub struct NovaBmIndex {
    rescan_after: Duration,
    views: Mutex<HashMap<String, Arc<View>>>,
}

/// The nova_bm id -> uuids of a node list (`uuid` and `extra` of each node).
pub fn build(nodes: &[Value]) -> HashMap<i64, Vec<String>> {
    let mut ids: HashMap<i64, Vec<String>> = HashMap::new();
    for n in nodes {
        if let (Some(u), Some(id)) = (n["uuid"].as_str(), nova::nova_bm_id(&n["extra"])) {
            ids.entry(id).or_default().push(u.to_string());
        }
    }
    ids
}

impl NovaBmIndex {
    pub fn new(rescan_after: Duration) -> NovaBmIndex {
        NovaBmIndex { rescan_after, views: Mutex::new(HashMap::new()) }
    }

    fn view(&self, key: &str) -> Arc<View> {
        let mut views = self.views.lock().unwrap_or_else(|e| e.into_inner());
        if !views.contains_key(key) && views.len() >= MAX_VIEWS {
            if let Some(oldest) = views.iter().min_by_key(|(_, v)| v.created).map(|(k, _)| k.clone()) {
                views.remove(&oldest);
            }
        }
        views
            .entry(key.to_string())
            .or_insert_with(|| Arc::new(View { created: Instant::now(), scan: Default::default() }))
            .clone()
    }

    /// The uuids the last scan of `view` found for `id` (none before the first scan).
    pub async fn known(&self, view: &str, id: i64) -> Vec<String> {
        let v = self.view(view);
        let s = v.scan.lock().await;
        s.ids.get(&id).cloned().unwrap_or_default()
    }

    /// Rescans `view` with `scan` (the node list, `uuid` and `extra`) unless it was scanned less
    /// than `rescan_after` ago, and returns the uuids found for `id`.
    pub async fn rescan<F, E>(&self, view: &str, id: i64, scan: F) -> Result<Vec<String>, E>
    where
        F: Future<Output = Result<Vec<Value>, E>> + Send + 'static,
        E: Send + 'static,
    {
        let v = self.view(view);
        let rescan_after = self.rescan_after;
        let key = view.to_string();
        let task = tokio::spawn(async move {
            let mut s = v.scan.lock().await;
            if s.at.is_some_and(|t| t.elapsed() < rescan_after) {
                return Ok(s.ids.get(&id).cloned().unwrap_or_default());
            }
            let started = Instant::now();
            let nodes = scan.await?;
            s.ids = build(&nodes);
            s.at = Some(Instant::now());
            tracing::info!(view = %key, nodes = nodes.len(), with_nova_bm_id = s.ids.len(),
                ms = started.elapsed().as_millis() as u64, "proxy: nova_bm id index rebuilt");
            Ok(s.ids.get(&id).cloned().unwrap_or_default())
        });
        match task.await {
            Ok(r) => r,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // cancelled: only when the runtime shuts down
            Err(_) => Ok(Vec::new()),
        }
    }

    /// How many views are kept.
    #[cfg(test)]
    pub fn views(&self) -> usize {
        self.views.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn nodes() -> Vec<Value> {
        vec![
            json!({"uuid": "u1", "extra": {"bm2ironic": {"nova_bm_id": 1}}}),
            json!({"uuid": "u2", "extra": {"bm2ironic_nova_bm_id": 2}}),
            json!({"uuid": "u3", "extra": {}}),
            json!({"uuid": "u4", "extra": {"bm2ironic": {"nova_bm_id": 1}}}),
        ]
    }

    #[test]
    fn both_marker_forms_and_duplicates() {
        let ids = build(&nodes());
        assert_eq!(ids[&1], vec!["u1", "u4"]);
        assert_eq!(ids[&2], vec!["u2"]);
        assert_eq!(ids.len(), 2);
    }

    #[tokio::test]
    async fn a_miss_rescans_at_most_once_per_interval_per_view() {
        let idx = NovaBmIndex::new(Duration::from_millis(300));
        let scans = Arc::new(AtomicUsize::new(0));
        let scan = |s: Arc<AtomicUsize>| async move {
            s.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ()>(nodes())
        };
        assert!(idx.known("system", 2).await.is_empty(), "nothing before the first scan");
        assert_eq!(idx.rescan("system", 2, scan(scans.clone())).await, Ok(vec!["u2".to_string()]));
        assert_eq!(idx.known("system", 2).await, vec!["u2"]);
        // a missing id within the interval: no new scan
        for _ in 0..5 {
            assert_eq!(idx.rescan("system", 99, scan(scans.clone())).await, Ok(vec![]));
        }
        assert_eq!(scans.load(Ordering::SeqCst), 1);
        // another view has its own index
        assert!(idx.known("project:p1", 2).await.is_empty());
        idx.rescan("project:p1", 2, scan(scans.clone())).await.unwrap();
        assert_eq!(scans.load(Ordering::SeqCst), 2);
        tokio::time::sleep(Duration::from_millis(350)).await;
        idx.rescan("system", 99, scan(scans.clone())).await.unwrap();
        assert_eq!(scans.load(Ordering::SeqCst), 3, "after the interval a miss rescans");
        // a failed scan keeps the old index and is retried by the next miss
        assert_eq!(idx.rescan("other", 1, async { Err::<Vec<Value>, _>("down") }).await, Err("down"));
        assert_eq!(idx.rescan("other", 1, scan(scans.clone())).await.unwrap().len(), 2);
    }

    #[tokio::test]
    async fn concurrent_misses_share_one_scan_and_views_are_bounded() {
        let idx = Arc::new(NovaBmIndex::new(Duration::from_secs(60)));
        let scans = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let (idx, scans) = (idx.clone(), scans.clone());
            tasks.push(tokio::spawn(async move {
                idx.rescan("system", 1, async move {
                    scans.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Ok::<_, ()>(nodes())
                })
                .await
            }));
        }
        for t in tasks {
            assert_eq!(t.await.unwrap().unwrap().len(), 2);
        }
        assert_eq!(scans.load(Ordering::SeqCst), 1);
        for i in 0..(MAX_VIEWS + 10) {
            idx.known(&format!("project:{i}"), 1).await;
        }
        assert_eq!(idx.views(), MAX_VIEWS);
    }
}
