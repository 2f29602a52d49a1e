//! The takeover check: follows every migrated node until it is taken over (a power state read from
//! its BMC, a conductor, no error or fault) or failing (Ironic's fault or error, its BMC's errors in
//! the followed logs), and reports each change of status as a [`TakeoverEvent`]. The I/O loop
//! only: the verdicts and the events are `verdict.rs`, the bookkeeping `tracker.rs`.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::tracker::Tracker;
use super::verdict::{
    judge, CheckOptions, Counts, Ending, NodeTakeover, TakeoverEvent, TakeoverOutcome, TakeoverState,
};
use crate::core::ironic::api::{ApiError, IronicApi};
use crate::core::logs::watch::Watcher;

/// The API's answer about one node as a verdict: a node the API does not know (HTTP 4xx) fails; an
/// API that does not answer leaves it waiting, with why.
fn verdict(uuid: &str, answer: Result<Value, ApiError>) -> NodeTakeover {
    match answer {
        Ok(v) => judge(uuid, &v),
        Err(e) => {
            let mut n = NodeTakeover::waiting(uuid);
            if matches!(e, ApiError::Status { status: 400..=499, .. }) {
                n.state = TakeoverState::Failed;
            }
            n.problems.push(e.to_string());
            n
        }
    }
}

/// How many nodes are asked about at once.
const CONCURRENT_GETS: usize = 8;

/// How often the logs are read.
const LOG_TICK: Duration = Duration::from_millis(250);

/// Follows `uuids` until each is taken over or failing, `opts.fail_fast` and one is failing,
/// `opts.timeout` passes (a node still waiting then fails), or `cancel`. `logs` (opened at the
/// run's end) are read to their current end after the API's first answers, then followed. Events
/// go to `events` (a closed receiver is fine).
pub async fn check(
    api: &IronicApi,
    uuids: &[String],
    opts: CheckOptions,
    mut logs: Option<Watcher>,
    events: &UnboundedSender<TakeoverEvent>,
    cancel: &CancellationToken,
) -> TakeoverOutcome {
    let started = Instant::now();
    let send = |e: TakeoverEvent| {
        let _ = events.send(e);
    };
    send(TakeoverEvent::Started { nodes: uuids.len(), timeout: opts.timeout });
    let mut t = Tracker::new(uuids);
    let mut first = true;
    let mut next_poll = started;
    let mut last_progress: Option<(Instant, Counts)> = None;
    let ending = loop {
        let polled = Instant::now() >= next_poll;
        if polled {
            // owned uuids: a future borrowing the closure's argument is not Send for every lifetime
            let answers: Vec<NodeTakeover> = futures::stream::iter(uuids.iter().cloned())
                .map(|u| async move { verdict(&u, api.node(&u).await) })
                .buffered(CONCURRENT_GETS)
                .collect()
                .await;
            for a in answers {
                t.api(a);
            }
            next_poll = Instant::now() + opts.poll;
        }
        if let Some(w) = &mut logs {
            // first what the logs hold since the run (after the first answers: an error older
            // than Ironic's last change to a taken-over node is history), then what is appended
            for r in if first { w.catch_up() } else { w.poll(false) } {
                t.record(&r);
            }
        }
        first = false;
        let elapsed = started.elapsed();
        for (uuid, state, reason) in t.changes() {
            send(TakeoverEvent::Node { uuid, state, reason, elapsed });
        }
        // the counts when they change, after each poll, and every second (the elapsed time moves)
        let counts = t.counts();
        if polled || last_progress.is_none_or(|(at, c)| c != counts || at.elapsed() >= Duration::from_secs(1)) {
            send(TakeoverEvent::Progress(Counts { elapsed, timeout: opts.timeout, ..counts }));
            last_progress = Some((Instant::now(), counts));
        }
        if t.all_decided() {
            break Ending::AllDecided;
        }
        if opts.fail_fast && t.any_failing() {
            break Ending::FirstFailure;
        }
        if elapsed >= opts.timeout {
            break Ending::Deadline;
        }
        tokio::select! {
            _ = cancel.cancelled() => break Ending::Cancelled,
            _ = tokio::time::sleep(LOG_TICK) => {}
        }
    };
    if let Some(w) = &mut logs {
        for r in w.poll(true) {
            t.record(&r);
        }
    }
    t.end(ending, opts.timeout);
    let elapsed = started.elapsed();
    for (uuid, state, reason) in t.changes() {
        send(TakeoverEvent::Node { uuid, state, reason, elapsed });
    }
    send(TakeoverEvent::Progress(Counts { elapsed, timeout: opts.timeout, ..t.counts() }));
    TakeoverOutcome { nodes: t.nodes(), ending, elapsed }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn judging_nodes() {
        let ok =
            json!({"power_state": "power off", "provision_state": "active", "conductor": "c1", "maintenance": false});
        assert_eq!(judge("u", &ok).state, TakeoverState::Ok);
        let pending =
            json!({"power_state": null, "provision_state": "available", "conductor": "c1", "maintenance": false});
        assert_eq!(judge("u", &pending).state, TakeoverState::Pending);
        let fault = json!({"power_state": null, "provision_state": "available", "conductor": "c1", "maintenance": true, "fault": "power failure", "maintenance_reason": "During sync_power_state, max retries exceeded"});
        let j = judge("u", &fault);
        assert_eq!(j.state, TakeoverState::Failed);
        assert!(j.problems[0].contains("power failure"));
        let held = json!({"power_state": null, "provision_state": "active", "maintenance": true, "maintenance_reason": "bm2ironic: nova_bm task_state was 'building'"});
        assert_eq!(judge("u", &held).state, TakeoverState::HeldInMaintenance);
        let err = json!({"power_state": "power on", "provision_state": "active", "conductor": "c1", "last_error": "Failed to prepare to deploy", "maintenance": false});
        assert_eq!(judge("u", &err).state, TakeoverState::Failed);
    }

    #[test]
    fn an_api_that_does_not_answer_leaves_the_node_waiting() {
        let down = ApiError::Unreachable { url: "u".into(), reason: "refused".into() };
        assert_eq!(verdict("u", Err(down)).state, TakeoverState::Pending);
        let gone = ApiError::Status { url: "u".into(), status: 404, body: "not found".into() };
        assert_eq!(verdict("u", Err(gone)).state, TakeoverState::Failed);
    }
}
