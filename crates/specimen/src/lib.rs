//! The specimen: a small real HTTP/1.1 server that scalelab starts as a child
//! process and sweeps when no target is given, so a first run needs nothing
//! installed and shows a known scaling shape.
//!
//! - [`mode`]: the [`Mode`]s, each a known cause of poor scaling.
//! - [`work`]: the per-request CPU work and the locks the modes wrap it in.
//! - [`server`]: the accept loop, thread per connection (or one event loop in
//!   `single-thread` mode), the request parser and the `/__stats` endpoint.
//!
//! Every request does `work_us` of user-space CPU work (a count of integer
//! rounds calibrated once at start on the thread's CPU clock, so time spent
//! preempted is not counted as work and no clock is read per request) and
//! replies with a small body.

mod herd;
pub mod mode;
pub mod server;
pub mod work;

pub use mode::Mode;
pub use server::{serve, SpecimenConfig, Stats, DEFAULT_STALL_EVERY, DEFAULT_STALL_FOR, DEFAULT_WORKERS, MAX_WORKERS};
