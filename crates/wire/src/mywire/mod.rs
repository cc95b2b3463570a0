//! A hand-written MySQL/MariaDB client for the load path: connect,
//! authenticate, prepare, then COM_STMT_EXECUTE / COM_QUERY with the reply
//! read and dropped, never decoded.
//!
//! Why by hand: the load tool's client shares the machine with the server
//! under test, so every instruction it spends per query is taken from the
//! server; mysql_async cost 3.6 times this client's instructions per query
//! (figures: `bench/notes/mywire-cost.md`). [`Reply::scan`] walks the
//! buffered reply synchronously rather than awaiting each packet.
//!
//! A query is one COM_STMT_EXECUTE serialized into one reused buffer, one
//! write, and the reply framed in the [`Inbox`]: OK, or column count,
//! column definitions and rows skipped by their packet lengths (3-byte LE
//! length + sequence id; a payload of 0xFFFFFF continues in the next
//! packet), up to the EOF/OK terminator, following
//! SERVER_MORE_RESULTS_EXISTS. Nothing is allocated per query.
//!
//! Connect time is not hot: `mysql_common` parses the greeting, builds the
//! handshake response and the TLS request, and computes the scrambles
//! (mysql_native_password, caching_sha2_password, with RSA-OAEP for the
//! full caching_sha2 authentication over plain TCP). MariaDB's
//! client_ed25519 is not in mysql_common: such a user gets a clear error.
//!
//! The parts: `packets` (framing, integers, fixed replies and requests),
//! `errors`, `replies` (reading a command's reply), `conn` (an open
//! connection's round trips), `handshake` (opening one). Each uses only
//! parts listed before it.

mod conn;
mod errors;
mod handshake;
mod packets;
mod replies;
#[cfg(test)]
mod tests;

pub use conn::{MyWire, Prepared};
pub use errors::server_failure;
pub use handshake::connect;
