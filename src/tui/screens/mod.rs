//! The wizard's screens, one file each. A screen owns its state, its binding table (the only place
//! its keys are matched, and what the key bar and the help show), its `on_key` (pure: it changes
//! its own state and returns what else must happen as [`Out`]), its `draw` (from its state and a
//! read-only [`DrawCtx`], the same signature on every screen), and its tests. `page.rs` holds what
//! they share (the [`Page`] trait, [`Screen`], [`Out`], [`Ctx`], [`DrawCtx`]); the state that
//! several screens read (the load's progress, the followed logs) is in `tui/work.rs`; `inventory_filter`
//! is what the inventory's `/` finds.

pub mod confirm;
pub mod conflicts;
pub mod connections;
pub mod flavors;
pub mod inventory;
pub mod inventory_filter;
pub mod logs;
pub mod page;
pub mod progress;
pub mod summary;

#[cfg(test)]
pub(crate) mod fixture;

pub use page::{Ctx, DrawCtx, Out, Page, Screen};
