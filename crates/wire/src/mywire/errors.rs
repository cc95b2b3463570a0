//! Failures of the MySQL protocol: an I/O error or a server's ERR packet,
//! told as a classified [`Failure`].

use crate::io_class::connect_io_class;
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use std::io;

/// Why a round trip failed, before it is told as a [`Failure`].
#[derive(Debug)]
pub(super) enum Error {
    /// The socket failed or closed.
    Io(io::Error),
    /// The server's ERR packet, or a reply that makes no sense (already classified).
    Fail(Failure),
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::Io(e)
    }
}

impl Error {
    /// As met on an open connection: an I/O error is a lost connection.
    pub(super) fn at_query(self) -> Failure {
        match self {
            Error::Io(e) => Failure::new(ErrorClass::ConnectionLost, format!("connection lost: {e}")),
            Error::Fail(f) => f,
        }
    }

    /// As met while connecting to `addr`.
    pub(super) fn at_connect(self, addr: &str) -> Failure {
        match self {
            Error::Io(e) => Failure::new(connect_io_class(&e), format!("connect to {addr}: {e}")),
            Error::Fail(f) => f,
        }
    }
}

/// A reply that breaks the protocol: the connection's state is unknown, so
/// it is dropped (classed as lost) and reopened.
pub(super) fn malformed(what: &str) -> Error {
    Error::Fail(Failure::new(ErrorClass::ConnectionLost, format!("malformed reply from the server: {what}")))
}

/// An ERR packet (0xFF, code, `#` and SQLSTATE when the protocol is 4.1 —
/// not before the handshake — then the message) as a classified failure.
pub(super) fn err_packet(p: &[u8]) -> Failure {
    let Some(&[lo, hi]) = p.get(1..3) else {
        return Failure::new(ErrorClass::ConnectionLost, "malformed reply from the server: truncated error packet");
    };
    let code = u16::from_le_bytes([lo, hi]);
    let (state, msg) = match p.get(3..9) {
        Some(s) if s[0] == b'#' => (String::from_utf8_lossy(&s[1..]).into_owned(), &p[9..]),
        _ => ("HY000".to_string(), &p[3..]),
    };
    server_failure(code, &state, &String::from_utf8_lossy(msg))
}

/// A server error (ERR packet) by class, as `ERROR code (sqlstate): message`.
pub fn server_failure(code: u16, state: &str, message: &str) -> Failure {
    let class = match code {
        1213 => ErrorClass::Deadlock,
        1205 => ErrorClass::LockWaitTimeout,
        1040 | 1203 => ErrorClass::TooManyConnections,
        2006 | 2013 | 1927 | 1053 => ErrorClass::ConnectionLost,
        _ => ErrorClass::SqlError,
    };
    Failure::new(class, format!("ERROR {code} ({state}): {message}"))
}
