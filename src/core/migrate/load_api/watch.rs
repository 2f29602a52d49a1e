//! One watch for every node waiting on Ironic's conductor (docs/performance.md, "--via api at
//! 1,000 nodes"). A node used to ask Ironic for its own state until it changed: at 32 nodes in
//! flight that is 32 requests a round, and each request is Ironic CPU time taken from the
//! conductor. Here one list request per state that nodes wait in
//! (`GET /v1/nodes?provision_state=<state>&fields=uuid`) says which of them are still in it; the
//! nodes that left are woken and read their new state once.
//!
//! A node the list does not show although it is still in the state (a token that sees only some
//! nodes, a list that failed) is woken all the same: `node.rs` then finds it unchanged and polls it
//! by itself from there on. A stopped or dropped watch wakes everyone.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::core::ironic::api::IronicApi;

/// Nodes in one list page (Ironic's default `max_limit` is 1,000).
const PAGE: usize = 1000;

struct Waiter {
    uuid: String,
    /// when it started waiting: only a list asked for after that can tell it left
    seq: u64,
    tx: oneshot::Sender<()>,
}

#[derive(Default)]
struct Inner {
    seq: u64,
    stopped: bool,
    waiting: HashMap<String, Vec<Waiter>>,
}

pub struct Watch {
    inner: Mutex<Inner>,
    /// the time between two rounds of list requests
    interval: Duration,
}

impl Watch {
    pub fn new(interval: Duration) -> Watch {
        Watch { inner: Mutex::new(Inner::default()), interval }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Returns once a list asked for after this call no longer shows `uuid` in `state`, or the
    /// list could not be read, or the watch stopped. The caller reads the node's state then.
    pub async fn until_left(&self, state: &str, uuid: &str) {
        let rx = {
            let mut i = self.lock();
            if i.stopped {
                return;
            }
            i.seq += 1;
            let (tx, rx) = oneshot::channel();
            let seq = i.seq;
            i.waiting.entry(state.to_string()).or_default().push(Waiter { uuid: uuid.to_string(), seq, tx });
            rx
        };
        let _ = rx.await;
    }

    /// How many nodes wait.
    #[cfg(test)]
    fn waiting(&self) -> usize {
        self.lock().waiting.values().map(Vec::len).sum()
    }

    /// The rounds, until `stop`: each interval, one list per state that has nodes waiting.
    pub async fn run(&self, api: &IronicApi, stop: &CancellationToken) {
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tokio::time::sleep(self.interval) => {}
            }
            let (states, asked) = {
                let i = self.lock();
                let states: Vec<String> =
                    i.waiting.iter().filter(|(_, w)| !w.is_empty()).map(|(s, _)| s.clone()).collect();
                (states, i.seq)
            };
            for state in states {
                let path = format!("/v1/nodes?provision_state={}&fields=uuid", state.replace(' ', "%20"));
                let still: Option<HashSet<String>> = match api.list_all(&path, "nodes", PAGE).await {
                    Ok(nodes) => Some(nodes.iter().filter_map(|n| n["uuid"].as_str().map(String::from)).collect()),
                    Err(e) => {
                        tracing::info!(%state, error = %e.message(), "the state list failed: its nodes poll themselves");
                        None
                    }
                };
                self.settle_round(&state, asked, still.as_ref());
            }
        }
        let mut i = self.lock();
        i.stopped = true;
        for (_, ws) in i.waiting.drain() {
            for w in ws {
                let _ = w.tx.send(());
            }
        }
    }

    /// One list's answer for `state` (None: it failed): the nodes that waited before it was asked
    /// (`asked`) and are not in it are woken.
    fn settle_round(&self, state: &str, asked: u64, still: Option<&HashSet<String>>) {
        let mut i = self.lock();
        let Some(ws) = i.waiting.get_mut(state) else { return };
        let (keep, wake): (Vec<Waiter>, Vec<Waiter>) =
            std::mem::take(ws).into_iter().partition(|w| w.seq > asked || still.is_some_and(|s| s.contains(&w.uuid)));
        *ws = keep;
        for w in wake {
            let _ = w.tx.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn set(uuids: &[&str]) -> HashSet<String> {
        uuids.iter().map(|s| s.to_string()).collect()
    }

    async fn wait_for(w: &Watch, n: usize) {
        for _ in 0..200 {
            if w.waiting() == n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("{} waiting, not {n}", w.waiting());
    }

    #[tokio::test]
    async fn a_node_is_woken_when_its_state_list_no_longer_shows_it() {
        let w = Arc::new(Watch::new(Duration::from_secs(60)));
        let (a, b) = (w.clone(), w.clone());
        let ha = tokio::spawn(async move { a.until_left("verifying", "n1").await });
        let hb = tokio::spawn(async move { b.until_left("verifying", "n2").await });
        wait_for(&w, 2).await;
        let asked = w.lock().seq;
        w.settle_round("verifying", asked, Some(&set(&["n2"])));
        tokio::time::timeout(Duration::from_secs(5), ha).await.expect("n1 left: woken").unwrap();
        assert_eq!(w.waiting(), 1, "n2 is still verifying: it waits on");
        assert!(!hb.is_finished());
        // another state's list does not touch it
        w.settle_round("adopting", asked, Some(&set(&[])));
        assert_eq!(w.waiting(), 1);
        w.settle_round("verifying", asked, Some(&set(&[])));
        tokio::time::timeout(Duration::from_secs(5), hb).await.expect("n2 left: woken").unwrap();
    }

    #[tokio::test]
    async fn a_list_asked_before_the_node_waited_cannot_wake_it_and_a_failed_list_wakes_all() {
        let w = Arc::new(Watch::new(Duration::from_secs(60)));
        let asked_before = w.lock().seq;
        let a = w.clone();
        let h = tokio::spawn(async move { a.until_left("adopting", "n1").await });
        wait_for(&w, 1).await;
        // the list was asked for before n1 entered the state: its absence there says nothing
        w.settle_round("adopting", asked_before, Some(&set(&[])));
        assert_eq!(w.waiting(), 1);
        // a list that failed: the node polls by itself
        let asked = w.lock().seq;
        w.settle_round("adopting", asked, None);
        tokio::time::timeout(Duration::from_secs(5), h).await.expect("woken on a failed list").unwrap();
    }

    #[tokio::test]
    async fn stopping_the_watch_wakes_everyone_and_later_waits_return_at_once() {
        let api = IronicApi::new("http://127.0.0.1:9", None, crate::core::ironic::target::TargetKind::Modern).unwrap();
        let w = Arc::new(Watch::new(Duration::from_secs(60)));
        let a = w.clone();
        let h = tokio::spawn(async move { a.until_left("cleaning", "n1").await });
        wait_for(&w, 1).await;
        let stop = CancellationToken::new();
        stop.cancel();
        w.run(&api, &stop).await;
        tokio::time::timeout(Duration::from_secs(5), h).await.expect("woken by the stop").unwrap();
        tokio::time::timeout(Duration::from_secs(5), w.until_left("cleaning", "n2"))
            .await
            .expect("no wait after the stop");
    }
}
