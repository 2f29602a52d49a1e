//! Unit tests of `update` (the routing and the messages of jobs).
use super::*;
use std::time::Duration;

use crate::core::ironic::verdict::{Counts, Ending, TakeoverEvent, TakeoverOutcome};

fn app(api: Option<&str>) -> App {
    let prefill = Prefill { ironic_url: api.map(String::from), ..Default::default() };
    App::new(Mode::Live, prefill, PlanOptions::default(), Resolutions::default())
}

#[test]
fn a_clean_verify_with_an_api_starts_the_takeover_check_and_its_events_reach_the_summary() {
    let mut a = app(Some("http://ironic:6385"));
    assert_eq!(a.update(Msg::Verified(Ok("2 nodes".into()), 1.0)), vec![Effect::CheckTakeover]);
    let c = Counts { taken_over: 2, ..Counts::default() };
    a.update(Msg::Takeover(TakeoverEvent::Progress(c)));
    assert_eq!(a.summary.takeover.as_ref().unwrap().counts, c);
    let outcome = TakeoverOutcome { nodes: vec![], ending: Ending::AllDecided, elapsed: Duration::ZERO };
    a.update(Msg::TakeoverDone(Ok(outcome)));
    assert_eq!(a.summary.takeover.as_ref().unwrap().ended, Some(Ok(Ending::AllDecided)));
    let mut no_api = app(None);
    assert!(no_api.update(Msg::Verified(Ok("2 nodes".into()), 1.0)).is_empty());
    assert!(no_api.summary.takeover.is_none());
    let diff = JobError::Differences { count: 1, run: "r".into() };
    assert!(app(Some("http://ironic:6385")).update(Msg::Verified(Err(diff), 1.0)).is_empty(), "not after differences");
}
