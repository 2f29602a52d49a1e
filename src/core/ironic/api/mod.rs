//! The client of Ironic's REST API: authentication (none, a fixed token, or a Keystone session
//! renewed once on 401), version negotiation from the root document, Ironic's error bodies turned
//! into operator messages, timeouts, bounded retries with backoff on 409 (node locked) and 503, and
//! pagination. `http.rs` holds the client (`IronicApi`), `open.rs` how it is reached (`ApiTarget`,
//! `open`, `client`), `error.rs` what a call fails with, and `nodes.rs` the calls the adopt loader,
//! verify and rollback make, `timings.rs` where a load's time goes (docs/performance.md).

mod error;
mod http;
pub mod nodes;
mod open;
pub mod timings;

pub use error::{fault, ApiError};
pub use http::{parse_version, scope_warning, ApiAuth, IronicApi, Retry, NEWEST_KNOWN, VERSION_HEADER};
pub use open::{client, open, ApiTarget};
