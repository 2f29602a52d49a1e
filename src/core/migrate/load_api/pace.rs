//! How long a node waits before asking Ironic again. The load learns how long each transitional
//! state lasts on this Ironic (`verifying`: the BMC's credentials checked, each IPMI command spaced
//! by Ironic's `[ipmi] min_command_interval`, 5 s by default; `adopting`; `cleaning`) and sleeps most
//! of it before its second poll, then polls closely again. At 1,000 nodes that is about 4 polls a
//! wait instead of 12, each one Ironic's CPU time (docs/performance.md has the figures).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// The shortest wait between two polls.
pub const MIN_WAIT: Duration = Duration::from_millis(100);

#[derive(Debug, Default)]
pub struct Pace {
    /// the typical time from the first poll in a state to the node settled, per state
    learned: Mutex<HashMap<String, Duration>>,
}

impl Pace {
    /// A node seen in `state` for the first time, `elapsed` after its action: the long sleep before
    /// its next poll (four fifths of what the state usually takes, less what already passed, at
    /// most `cap`), and the short wait it polls with after that (a tenth of it). None: nothing
    /// learned yet, or too little left to wait for.
    pub fn first_wait(&self, state: &str, elapsed: Duration, cap: Duration) -> Option<(Duration, Duration)> {
        let typical = *self.learned.lock().unwrap_or_else(|e| e.into_inner()).get(state)?;
        let long = (typical * 4 / 5).saturating_sub(elapsed).min(cap);
        (long > MIN_WAIT * 2).then(|| (long, (typical / 10).max(MIN_WAIT)))
    }

    /// A node that was first seen in `state` settled `took` after its action.
    pub fn learn(&self, state: &str, took: Duration) {
        let mut m = self.learned.lock().unwrap_or_else(|e| e.into_inner());
        let t = m.entry(state.to_string()).or_insert(took);
        // a moving average that follows a slower or faster conductor within a few nodes
        *t = (*t * 3 + took) / 4;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn nothing_learned_polls_as_before() {
        assert_eq!(Pace::default().first_wait("verifying", S(0), S(90_000)), None);
    }

    #[test]
    fn a_learned_state_sleeps_most_of_it_then_polls_closely() {
        let p = Pace::default();
        p.learn("verifying", S(6000));
        assert_eq!(p.first_wait("verifying", S(100), S(90_000)), Some((S(4700), S(600))));
        // capped by the step's time-out
        assert_eq!(p.first_wait("verifying", S(0), S(1000)), Some((S(1000), S(600))));
        // another state has its own time; a short one is not worth a long sleep
        p.learn("cleaning", S(150));
        assert_eq!(p.first_wait("cleaning", S(0), S(90_000)), None);
        assert_eq!(p.first_wait("adopting", S(0), S(90_000)), None);
    }

    #[test]
    fn it_follows_the_conductor() {
        let p = Pace::default();
        p.learn("verifying", S(8000));
        for _ in 0..12 {
            p.learn("verifying", S(2000));
        }
        let (long, _) = p.first_wait("verifying", S(0), S(90_000)).unwrap();
        assert!(long < S(1800), "{long:?}");
    }
}
