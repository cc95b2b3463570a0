//! Telemetry: what the machine and the server are doing while load runs.

pub mod disk;
pub mod env;
pub mod irq;
pub mod limits;
pub mod meminfo;
pub mod netdev;
pub mod power;
pub mod pressure;
pub mod read;
pub mod sockets;
pub mod stat;
pub mod system;
pub mod tcp_mib;
pub mod time;
pub mod unavailable;

pub use env::{capture_environment, Roots};
pub mod find;
pub mod process;
pub mod syscalls;
pub mod tasks;
pub mod thread_report;
pub mod threads;
