//! One open connection: sending commands, reading packets, and the
//! prepare, execute and query round trips of the load path.

use super::errors::{err_packet, malformed, Error};
use super::packets::{build_execute, frame, prepare_ok, COM_QUERY, COM_QUIT, COM_STMT_PREPARE, MAX_PAYLOAD};
use super::replies::Reply;
use crate::stream::{Inbox, Stream};
use crate::value::Value;
use scalelab_core::result::Failure;

/// A statement prepared on the server.
#[derive(Clone, Copy, Debug)]
pub struct Prepared {
    pub(super) id: u32,
    pub(super) params: u16,
}

impl Prepared {
    /// How many `?` placeholders the server counted.
    pub fn params(&self) -> usize {
        usize::from(self.params)
    }
}

/// One connection speaking the MySQL client/server protocol.
pub struct MyWire {
    pub(super) stream: Stream,
    pub(super) inbox: Inbox,
    /// The request being sent; reused, so a query allocates nothing.
    pub(super) out: Vec<u8>,
    /// CLIENT_DEPRECATE_EOF was agreed: no EOF after column definitions, and
    /// result sets end with an OK packet led by 0xFE.
    pub(super) deprecate_eof: bool,
    /// The next sequence id to send during the handshake.
    pub(super) seq: u8,
}

impl MyWire {
    pub(super) fn new(stream: Stream, deprecate_eof: bool) -> MyWire {
        MyWire { stream, inbox: Inbox::new(), out: Vec::with_capacity(256), deprecate_eof, seq: 0 }
    }

    /// Starts a request in `out`: the 4 header bytes are filled by `send`.
    pub(super) fn start(&mut self) {
        self.out.clear();
        self.out.extend_from_slice(&[0; 4]);
    }

    /// Frames `out` with the current sequence id and writes it; the next
    /// packet we send goes on with the following id (the TLS request and
    /// the handshake response are two in a row).
    pub(super) async fn send(&mut self) -> Result<(), Error> {
        frame(&mut self.out, self.seq);
        self.seq = self.seq.wrapping_add(((self.out.len() - 1) / (MAX_PAYLOAD + 4) + 1) as u8);
        self.stream.write_all(&self.out).await?;
        Ok(())
    }

    /// Sends a command (sequence id 0) of `out`.
    pub(super) async fn command(&mut self) -> Result<(), Error> {
        self.seq = 0;
        self.send().await
    }

    /// Reads a packet header; returns the payload length (the payload is
    /// next in the inbox, not necessarily buffered yet).
    pub(super) async fn head(&mut self) -> Result<usize, Error> {
        self.inbox.fill(&mut self.stream, 4).await?;
        let d = self.inbox.data();
        let len = usize::from(d[0]) | usize::from(d[1]) << 8 | usize::from(d[2]) << 16;
        self.seq = d[3].wrapping_add(1);
        self.inbox.consume(4);
        Ok(len)
    }

    /// Reads a whole packet that fits in one (OK, ERR, EOF, counts) and
    /// buffers its payload: `inbox.data()[..len]`, for the caller to consume.
    pub(super) async fn packet(&mut self) -> Result<usize, Error> {
        let len = self.head().await?;
        if len == MAX_PAYLOAD {
            return Err(malformed("a 16 MB packet where a short one was expected"));
        }
        self.inbox.fill(&mut self.stream, len).await?;
        Ok(len)
    }

    /// Skips one packet of `len` bytes and its continuations.
    pub(super) async fn skip_payload(&mut self, mut len: usize) -> Result<(), Error> {
        loop {
            self.inbox.skip(&mut self.stream, len).await?;
            if len < MAX_PAYLOAD {
                return Ok(());
            }
            len = self.head().await?;
        }
    }

    /// Skips one whole packet.
    pub(super) async fn skip_packet(&mut self) -> Result<(), Error> {
        let len = self.head().await?;
        self.skip_payload(len).await
    }

    /// Says goodbye (COM_QUIT) if the socket takes it at once, without
    /// waiting for anything (for `Drop`): the server then does not count and
    /// log an aborted connection.
    pub fn quit_now(&self) {
        self.stream.try_write_now(&[1, 0, 0, 0, COM_QUIT]);
    }

    /// Prepares a statement (COM_STMT_PREPARE) and skips its parameter and
    /// column definitions.
    pub async fn prepare(&mut self, sql: &str) -> Result<Prepared, Failure> {
        self.prepare_inner(sql).await.map_err(Error::at_query)
    }

    pub(super) async fn prepare_inner(&mut self, sql: &str) -> Result<Prepared, Error> {
        self.start();
        self.out.push(COM_STMT_PREPARE);
        self.out.extend_from_slice(sql.as_bytes());
        self.command().await?;
        let len = self.packet().await?;
        let p = &self.inbox.data()[..len];
        let r = if p.first() == Some(&0xFF) {
            Err(Error::Fail(err_packet(p)))
        } else {
            prepare_ok(p).ok_or_else(|| malformed("bad COM_STMT_PREPARE response"))
        };
        self.inbox.consume(len);
        let (id, columns, params) = r?;
        for n in [params, columns] {
            for _ in 0..n {
                self.skip_packet().await?;
            }
            if n > 0 && !self.deprecate_eof {
                self.skip_packet().await?;
            }
        }
        Ok(Prepared { id, params })
    }

    /// Executes a prepared statement with the values at `order` (ints as
    /// LONGLONG, texts as VAR_STRING) and skips its result.
    pub async fn execute(&mut self, stmt: &Prepared, order: &[usize], values: &[Value]) -> Result<(), Failure> {
        build_execute(&mut self.out, stmt.id, order, values);
        self.round_trip().await.map_err(Error::at_query)
    }

    /// Runs a text query (COM_QUERY) and skips its result(s).
    pub async fn query(&mut self, sql: &str) -> Result<(), Failure> {
        self.start();
        self.out.push(COM_QUERY);
        self.out.extend_from_slice(sql.as_bytes());
        self.round_trip().await.map_err(Error::at_query)
    }

    pub(super) async fn round_trip(&mut self) -> Result<(), Error> {
        self.command().await?;
        self.read_result().await
    }

    /// Reads one reply to a command: OK, ERR, or result sets (column count,
    /// definitions, rows, terminator) as long as the server says more follow.
    /// The packets are walked synchronously in what the inbox holds
    /// ([`Reply::scan`]); the socket is read only when a packet is incomplete,
    /// so a small reply costs one read.
    pub(super) async fn read_result(&mut self) -> Result<(), Error> {
        let mut reply = Reply::new(self.deprecate_eof);
        while let Some(need) = reply.scan(&mut self.inbox)? {
            self.inbox.fill(&mut self.stream, need).await?;
        }
        if self.inbox.data().is_empty() {
            // Nothing more is due until the next request: should the last
            // read have filled the buffer exactly, the next read would only
            // find the socket empty (see `clear_read_ready`).
            self.stream.clear_read_ready();
        }
        Ok(())
    }
}
