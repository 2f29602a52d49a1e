//! Validating callers' tokens with Keystone without letting callers flood it:
//!
//! - what Keystone said of a valid token is cached (`cache.rs`, `--token-cache-time`);
//! - a token Keystone refused (401/404: invalid, expired, revoked) is cached as refused for a short
//!   while ([`REFUSED_TTL`], never longer than `--token-cache-time`), as keystonemiddleware's
//!   negative cache does: one bogus token repeated by 200 connections cost 7,016 validations in 5 s
//!   before, and Keystone then failed legitimate ones;
//! - concurrent requests with the same token share one validation (the first asks, the others
//!   wait for its answer), keyed by a salted hash of the token, never the token;
//! - at most `max_validations` validations are in flight towards Keystone; more wait their turn
//!   (within the request's deadline, `--ironic-timeout`) instead of failing, so a slow Keystone
//!   delays callers rather than refusing them.
//!
//! A validation runs as a task of its own: it completes, and its answer is cached, even when the
//! request that started it was cancelled (its client went away).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::{BoxFuture, FutureExt, Shared};
use sha2::{Digest, Sha256};

use super::cache::{Key, TokenCache, Validated};
use super::reply::Reply;
use crate::core::auth::Session;
use crate::core::db::secret::Secret;

/// The longest a refused token is remembered as refused. Short: a token cannot become valid
/// later, but a Keystone cluster whose nodes do not yet share a new fernet key may refuse a fresh
/// token on one node for a moment, and such a caller should not wait long.
pub const REFUSED_TTL: Duration = Duration::from_secs(30);

/// Why a validation gave no answer (Keystone unreachable, failing, or too slow): the caller gets 503.
#[derive(Debug, Clone)]
struct Unanswered(String);

type Outcome = Result<Option<Validated>, Unanswered>;

/// The caches, the validations in flight and the bound towards Keystone.
pub(super) struct Validations {
    /// what Keystone said of the valid tokens
    valid: TokenCache<Validated>,
    /// the tokens Keystone refused (no value: only that it did)
    refused: TokenCache<()>,
    /// one validation per token at a time: the others wait for its answer
    in_flight: Mutex<HashMap<Key, Shared<BoxFuture<'static, Outcome>>>>,
    salt: [u8; 16],
    /// at most `max_validations` validations towards Keystone at once
    permits: Arc<tokio::sync::Semaphore>,
    max_validations: usize,
}

impl Validations {
    pub(super) fn new(cache_time: Duration, cache_size: usize, max_validations: usize) -> Validations {
        Validations {
            valid: TokenCache::new(cache_time, cache_size),
            refused: TokenCache::new(cache_time.min(REFUSED_TTL), cache_size),
            in_flight: Mutex::new(HashMap::new()),
            salt: *uuid::Uuid::new_v4().as_bytes(),
            permits: Arc::new(tokio::sync::Semaphore::new(max_validations.max(1))),
            max_validations: max_validations.max(1),
        }
    }

    fn key(&self, token: &str) -> Key {
        let mut h = Sha256::new();
        h.update(self.salt);
        h.update(token.as_bytes());
        h.finalize().into()
    }

    #[cfg(test)]
    fn in_flight(&self) -> usize {
        self.in_flight.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

impl Validations {
    /// What Keystone (`session`) says of `token` (None: refused), from a cache, a validation
    /// already in flight for the same token, or a new one. 503 when Keystone gives no answer
    /// within `deadline` (`--ironic-timeout`).
    pub(super) async fn validate(
        self: &Arc<Self>,
        session: Option<&Arc<Session>>,
        token: &Secret,
        deadline: Duration,
    ) -> Result<Option<Validated>, Reply> {
        if let Some(known) = self.valid.get(token.expose()) {
            return Ok(Some(known));
        }
        if self.refused.get(token.expose()).is_some() {
            return Ok(None);
        }
        let Some(session) = session.cloned() else { return Ok(None) };
        let answer = {
            let key = self.key(token.expose());
            let mut in_flight = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
            match in_flight.get(&key) {
                Some(shared) => shared.clone(),
                None => {
                    let task = tokio::spawn(ask(self.clone(), session, token.clone(), key, deadline));
                    let shared = async move {
                        task.await.unwrap_or_else(|e| Err(Unanswered(format!("the validation stopped: {e}"))))
                    }
                    .boxed()
                    .shared();
                    in_flight.insert(key, shared.clone());
                    shared
                }
            }
        };
        match tokio::time::timeout(deadline, answer).await {
            Err(_) => Err(Reply::fault(503, "Keystone did not answer in time: the token cannot be validated.")),
            Ok(Err(Unanswered(why))) => Err(Reply::fault(503, format!("The token cannot be validated: {why}"))),
            Ok(Ok(known)) => Ok(known),
        }
    }
}

/// One validation: waits for a slot towards Keystone, asks, caches the answer, and leaves the
/// in-flight map (after caching: a request arriving then finds the cache).
async fn ask(v: Arc<Validations>, session: Arc<Session>, token: Secret, key: Key, within: Duration) -> Outcome {
    let deadline = tokio::time::Instant::now() + within;
    let out = async {
        let Ok(Ok(_slot)) = tokio::time::timeout_at(deadline, v.permits.clone().acquire_owned()).await else {
            return Err(Unanswered(format!(
                "all {} validations towards Keystone stayed busy for the whole --ironic-timeout",
                v.max_validations
            )));
        };
        match tokio::time::timeout_at(deadline, session.validate(&token)).await {
            Err(_) => Err(Unanswered("Keystone did not answer in time".into())),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "token validation failed");
                Err(Unanswered(e.to_string()))
            }
            Ok(Ok(None)) => {
                v.refused.put(token.expose(), (), None);
                Ok(None)
            }
            Ok(Ok(Some(t))) => {
                let known = Validated { user: t.user.clone(), scope: t.scope.clone(), roles: t.roles.clone() };
                v.valid.put(token.expose(), known.clone(), t.expires_at);
                Ok(Some(known))
            }
        }
    }
    .await;
    v.in_flight.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_tokens_are_kept_briefly_by_hash() {
        let v = Validations::new(Duration::from_secs(300), 10, 4);
        v.refused.put("bogus", (), None);
        assert!(v.refused.get("bogus").is_some() && v.refused.get("other").is_none());
        assert!(v.valid.get("bogus").is_none(), "refused is not valid");
        assert_eq!(v.in_flight(), 0);
        let k = v.key("bogus");
        assert_ne!(&k[..], &Sha256::digest(b"bogus")[..], "salted");
        // the cache time off: refused tokens are not kept either
        let off = Validations::new(Duration::ZERO, 10, 4);
        off.refused.put("bogus", (), None);
        assert!(off.refused.get("bogus").is_none());
    }
}
