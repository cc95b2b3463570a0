//! Reading a reply to a command without awaiting each packet: OK, ERR, or
//! result sets (column count, definitions, rows, terminator), walked in
//! what the inbox holds.

use super::errors::{err_packet, malformed, Error};
use super::packets::{lenenc, ok_status, terminator_status, MAX_COLUMNS, MAX_PAYLOAD, SERVER_MORE_RESULTS_EXISTS};
use crate::stream::Inbox;

/// Where [`Reply::scan`] is in a reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// The first packet of a result: OK, ERR, or a column count.
    Start,
    /// This many column definitions left to skip.
    Columns(u64),
    /// The EOF packet after the column definitions (without DEPRECATE_EOF).
    ColumnsEof,
    /// Rows, up to the terminator.
    Rows,
}

/// The reader of one reply, walking packets in the inbox without waiting.
pub(super) struct Reply {
    phase: Phase,
    deprecate_eof: bool,
    /// Bytes of the current packet still to discard (it was not all buffered).
    skip: usize,
    /// The packet being skipped was 0xFFFFFF long: the next one continues it.
    cont: bool,
}

impl Reply {
    pub(super) fn new(deprecate_eof: bool) -> Reply {
        Reply { phase: Phase::Start, deprecate_eof, skip: 0, cont: false }
    }

    /// Starts skipping a packet whose header is at the front of the inbox.
    pub(super) fn skip_packet(&mut self, inbox: &mut Inbox, len: usize) {
        inbox.consume(4);
        self.skip = len;
        self.cont = len == MAX_PAYLOAD;
    }

    /// Consumes the complete packets of the reply that the inbox holds.
    /// Returns None when the reply is over, or how many bytes the inbox must
    /// hold for the next step.
    pub(super) fn scan(&mut self, inbox: &mut Inbox) -> Result<Option<usize>, Error> {
        loop {
            if self.skip > 0 {
                let n = self.skip.min(inbox.data().len());
                inbox.consume(n);
                self.skip -= n;
                if self.skip > 0 {
                    return Ok(Some(1));
                }
            }
            let d = inbox.data();
            if d.len() < 4 {
                return Ok(Some(4));
            }
            let len = usize::from(d[0]) | usize::from(d[1]) << 8 | usize::from(d[2]) << 16;
            if self.cont {
                self.skip_packet(inbox, len);
                continue;
            }
            match self.phase {
                Phase::Columns(n) => {
                    self.skip_packet(inbox, len);
                    self.phase = match n {
                        2.. => Phase::Columns(n - 1),
                        _ if self.deprecate_eof => Phase::Rows,
                        _ => Phase::ColumnsEof,
                    };
                    continue;
                }
                Phase::ColumnsEof => {
                    self.skip_packet(inbox, len);
                    self.phase = Phase::Rows;
                    continue;
                }
                Phase::Rows if len == 0 => return Err(malformed("empty row packet")),
                Phase::Rows if d.len() < 5 => return Ok(Some(5)),
                // A row: skipped. A row led by 0xFE is a length of 16 MB or
                // more, so the terminator is 0xFE in a shorter packet.
                Phase::Rows if len == MAX_PAYLOAD || (d[4] != 0xFE && d[4] != 0xFF) => {
                    self.skip_packet(inbox, len);
                    continue;
                }
                Phase::Start | Phase::Rows => {}
            }
            // A packet to read whole: OK, ERR, column count, terminator.
            if len == MAX_PAYLOAD {
                return Err(malformed("a 16 MB packet where a short one was expected"));
            }
            if d.len() < 4 + len {
                return Ok(Some(4 + len));
            }
            let p = &d[4..4 + len];
            let status = match (self.phase, p.first()) {
                (_, Some(0xFF)) => {
                    let f = err_packet(p);
                    inbox.consume(4 + len);
                    return Err(Error::Fail(f));
                }
                (Phase::Rows, _) => terminator_status(p, self.deprecate_eof).ok_or_else(|| malformed("truncated end of result set"))?,
                (_, Some(0x00)) => ok_status(p).ok_or_else(|| malformed("truncated OK packet"))?,
                (_, Some(0xFB)) => return Err(malformed("LOCAL INFILE request, not supported")),
                (_, Some(_)) => match lenenc(p) {
                    Some((n, _)) if n > 0 && n <= MAX_COLUMNS => {
                        inbox.consume(4 + len);
                        self.phase = Phase::Columns(n);
                        continue;
                    }
                    _ => return Err(malformed("bad column count")),
                },
                (_, None) => return Err(malformed("empty packet")),
            };
            inbox.consume(4 + len);
            if status & SERVER_MORE_RESULTS_EXISTS == 0 {
                return Ok(None);
            }
            self.phase = Phase::Start;
        }
    }
}
