//! The caches of callers' tokens Keystone answered for (`--token-cache-time`, `--token-cache-size`).
//!
//! Keystone validates a caller's token once; what it said (user, scope, roles) is kept for at most
//! `ttl` (300 s by default, keystonemiddleware's `token_cache_time`) and never past the token's own
//! `expires_at`. A token revoked at Keystone is therefore still accepted for at most `ttl` seconds
//! after its validation, the same window keystonemiddleware gives. `ttl` 0 turns the cache off (every
//! request asks Keystone). The same type, with `()` for a value, keeps the tokens Keystone refused
//! (see `tokens.rs`: keystonemiddleware's negative cache), so that one bogus token repeated does not
//! cost one validation a request.
//!
//! The key is the SHA-256 of a per-process random salt and the token: a cache never holds a token,
//! and its keys cannot be matched against tokens seen elsewhere. At most `capacity` entries (10 000
//! by default, about 3 MB): when full, the expired entries go first, then the least recently used.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use crate::core::auth::Scope;

/// What Keystone said about a token, without the token.
#[derive(Debug, Clone, PartialEq)]
pub struct Validated {
    pub user: String,
    pub scope: Scope,
    pub roles: Vec<String>,
}

pub(super) type Key = [u8; 32];

struct Entry<V> {
    value: V,
    until: Instant,
    /// the last use, for the LRU order
    tick: u64,
}

struct Inner<V> {
    entries: HashMap<Key, Entry<V>>,
    /// last use -> key, oldest first
    order: BTreeMap<u64, Key>,
    tick: u64,
}

impl<V> Default for Inner<V> {
    fn default() -> Self {
        Inner { entries: HashMap::new(), order: BTreeMap::new(), tick: 0 }
    }
}

/// Tokens (by salted hash) and what Keystone said of each: `Validated` for the valid ones, `()`
/// for the refused ones.
pub struct TokenCache<V = Validated> {
    ttl: Duration,
    capacity: usize,
    salt: [u8; 16],
    inner: Mutex<Inner<V>>,
}

impl<V: Clone> TokenCache<V> {
    pub fn new(ttl: Duration, capacity: usize) -> TokenCache<V> {
        TokenCache { ttl, capacity, salt: *uuid::Uuid::new_v4().as_bytes(), inner: Mutex::new(Inner::default()) }
    }

    pub fn enabled(&self) -> bool {
        !self.ttl.is_zero() && self.capacity > 0
    }

    fn key(&self, token: &str) -> Key {
        let mut h = Sha256::new();
        h.update(self.salt);
        h.update(token.as_bytes());
        h.finalize().into()
    }

    /// What was said about `token`, if it was validated less than `ttl` ago and has not expired.
    pub fn get(&self, token: &str) -> Option<V> {
        self.get_at(token, Instant::now())
    }

    fn get_at(&self, token: &str, now: Instant) -> Option<V> {
        if !self.enabled() {
            return None;
        }
        let key = self.key(token);
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let inner = &mut *g;
        let e = inner.entries.get_mut(&key)?;
        if e.until <= now {
            let tick = e.tick;
            inner.entries.remove(&key);
            inner.order.remove(&tick);
            return None;
        }
        inner.tick += 1;
        inner.order.remove(&e.tick);
        e.tick = inner.tick;
        inner.order.insert(e.tick, key);
        Some(e.value.clone())
    }

    /// Keeps what Keystone said about `token` until `ttl` from now or the token's expiry, whichever
    /// comes first.
    pub fn put(&self, token: &str, value: V, expires_at: Option<DateTime<Utc>>) {
        self.put_at(token, value, expires_at, Instant::now(), Utc::now())
    }

    fn put_at(&self, token: &str, value: V, expires_at: Option<DateTime<Utc>>, now: Instant, wall: DateTime<Utc>) {
        if !self.enabled() {
            return;
        }
        let mut life = self.ttl;
        if let Some(t) = expires_at {
            match (t - wall).to_std() {
                Ok(left) => life = life.min(left),
                Err(_) => return, // already expired
            }
        }
        if life.is_zero() {
            return;
        }
        let key = self.key(token);
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let inner = &mut *g;
        if let Some(old) = inner.entries.remove(&key) {
            inner.order.remove(&old.tick);
        }
        if inner.entries.len() >= self.capacity {
            // the expired ones first, then the least recently used
            // (one pass over the entries, only when full: a cache filled with bogus tokens costs this
            // once per insertion at capacity, bounded by `capacity`)
            let expired: Vec<(Key, u64)> =
                inner.entries.iter().filter(|(_, e)| e.until <= now).map(|(k, e)| (*k, e.tick)).collect();
            for (k, tick) in expired {
                inner.entries.remove(&k);
                inner.order.remove(&tick);
            }
            while inner.entries.len() >= self.capacity {
                let Some((_, oldest)) = inner.order.pop_first() else { break };
                inner.entries.remove(&oldest);
            }
        }
        inner.tick += 1;
        let tick = inner.tick;
        inner.entries.insert(key, Entry { value, until: now + life, tick });
        inner.order.insert(tick, key);
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).entries.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(user: &str) -> Validated {
        Validated { user: user.into(), scope: Scope::System, roles: vec!["admin".into()] }
    }

    #[test]
    fn kept_for_the_cache_time_and_never_past_expiry() {
        let c: TokenCache = TokenCache::new(Duration::from_secs(300), 10);
        let (now, wall) = (Instant::now(), Utc::now());
        c.put_at("t1", v("a"), Some(wall + chrono::Duration::hours(1)), now, wall);
        assert_eq!(c.get_at("t1", now + Duration::from_secs(299)), Some(v("a")));
        assert_eq!(c.get_at("t1", now + Duration::from_secs(300)), None, "the cache time bounds it");
        assert!(c.is_empty(), "an expired entry is dropped when seen");
        // the token expires before the cache time: its expiry wins
        c.put_at("t2", v("b"), Some(wall + chrono::Duration::seconds(10)), now, wall);
        assert_eq!(c.get_at("t2", now + Duration::from_secs(9)), Some(v("b")));
        assert_eq!(c.get_at("t2", now + Duration::from_secs(10)), None);
        // already expired: not kept
        c.put_at("t3", v("c"), Some(wall - chrono::Duration::seconds(1)), now, wall);
        assert_eq!(c.get_at("t3", now), None);
        assert_eq!(c.get_at("other", now), None);
    }

    #[test]
    fn bounded_least_recently_used_goes_first() {
        let c: TokenCache = TokenCache::new(Duration::from_secs(300), 3);
        let now = Instant::now();
        let wall = Utc::now();
        for t in ["a", "b", "c"] {
            c.put_at(t, v(t), None, now, wall);
        }
        assert!(c.get_at("a", now).is_some(), "a used: b is now the oldest");
        c.put_at("d", v("d"), None, now, wall);
        assert_eq!(c.len(), 3);
        assert!(c.get_at("b", now).is_none());
        for t in ["a", "c", "d"] {
            assert!(c.get_at(t, now).is_some(), "{t}");
        }
        // expired entries make room before any live one is evicted
        let c: TokenCache = TokenCache::new(Duration::from_secs(10), 2);
        c.put_at("old", v("old"), None, now, wall);
        c.put_at("live", v("live"), None, now + Duration::from_secs(5), wall);
        c.put_at("new", v("new"), None, now + Duration::from_secs(11), wall);
        assert!(c.get_at("live", now + Duration::from_secs(12)).is_some());
        assert!(c.get_at("new", now + Duration::from_secs(12)).is_some());
    }

    #[test]
    fn off_at_zero_and_keys_are_not_tokens() {
        let c: TokenCache = TokenCache::new(Duration::ZERO, 10);
        c.put("t", v("a"), None);
        assert!(c.get("t").is_none() && c.is_empty());
        let c: TokenCache<()> = TokenCache::new(Duration::from_secs(1), 10);
        let k = c.key("secret-token");
        assert_ne!(&k[..], &Sha256::digest(b"secret-token")[..], "salted");
        assert!(!format!("{k:?}").contains("secret"));
    }
}
