//! The SQL connections that both the load (`scalelab-drive`) and the
//! telemetry probe (`scalelab-probe`) use, so neither reaches into the other.
//! Nothing here knows about workloads, steps or samples.
//!
//! - [`url`]: a `postgres://` / `mysql://` URL parsed ([`SqlUrl`]), its TLS mode.
//! - [`value`]: a parameter value bound to a placeholder ([`Value`]).
//! - [`stream`]: the byte stream under the hand-written clients (TCP, unix,
//!   TLS, blocking) and its read buffer.
//! - [`tls`]: rustls client configurations (shared with the HTTPS driver).
//! - [`pgwire`], [`mywire`]: the hand-written PostgreSQL and MySQL clients
//!   of the load path.
//! - [`pg`], [`mysql`]: tokio-postgres and mysql_async connections for
//!   everything off the hot path, and their error classes.
//! - [`monitor`]: the telemetry probe's own connection (text rows).
//! - [`io_class`]: the error class of an I/O error met while connecting.
//!
//! Each module uses only modules listed before it.

pub mod io_class;
pub mod monitor;
pub mod mysql;
pub mod mywire;
pub mod pg;
pub mod pgwire;
pub mod resp;
pub mod stream;
pub mod tls;
pub mod url;
pub mod value;

pub use io_class::{connect_io_class, is_fd_limit};
pub use url::{Engine, SqlTls, SqlUrl};
pub use value::Value;

/// A single-threaded tokio runtime for a connection used from plain threads
/// (prepare, the preflight, the probe).
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime")
}
