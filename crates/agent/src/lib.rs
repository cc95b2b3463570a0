//! Agents: load generators on other hosts and a probe agent on the
//! server's host, driven by a coordinator into one run (docs/agents.md).
//!
//! - [`proto`]: the versioned frames (u32 length + JSON) both sides speak;
//! - [`merge`]: a step split across agents and their results merged exactly;
//! - [`auth`]: TLS and the token proof bound to the TLS session;
//! - [`serve`], [`listen`]: the agent's side (`scalelab agent`);
//! - [`records`]: the server agent's probe records on the wire;
//! - [`connect`], [`coordinator`]: the coordinator's side.
//!
//! Nothing here prints, except the agent's one-line log on stderr.

pub mod auth;
pub mod connect;
pub mod coordinator;
pub mod listen;
pub mod merge;
pub mod proto;
pub mod records;
pub mod serve;

pub use connect::{AgentAddr, Reach};

/// Where an agent's lines go (refusals, sessions, cut steps): the binary
/// prints them; the crates below it never print (docs/architecture.md).
pub type Log = std::sync::Arc<dyn Fn(&str) + Send + Sync>;
pub use coordinator::{Coordinator, Loss, Role};
pub use proto::{SqlSpec, PROTOCOL};
