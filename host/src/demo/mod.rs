//! `weir demo`: a one-minute story on the embedded API server, then a playground.
//!
//! The story's cluster logic is apart from how it is shown, so a terminal view and plain
//! lines tell the same story:
//! - [`board`]: what the view shows of the cluster (pure): per Service, the endpoints its
//!   Endpoints and its EndpointSlices list as ready, not ready and terminating.
//! - [`observe`]: keeps a [`board::Board`] up to date from watches of both outputs.
//! - [`guests`]: the guests the story swaps (embedded), and their names.
//! - [`preview`]: what a guest would change for one Service, from the live objects.
//! - [`story`]: the steps, their events and the Service they act on.
//! - [`stage`]: what each step does, and what the cluster must show before the next.
//! - [`status`]: the guest panel: active and shadow guest, the last refusal.
//! - [`plain`] and [`tui`]: the two renderings.

pub mod board;
pub mod guests;
pub mod observe;
pub mod plain;
pub mod preview;
pub mod stage;
pub mod status;
pub mod story;
pub mod tui;
