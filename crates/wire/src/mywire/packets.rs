//! The MySQL protocol's packets: framing (3-byte length, sequence id,
//! continuation of 16 MB payloads), length-encoded integers, the OK, EOF and
//! COM_STMT_PREPARE replies, and the COM_STMT_EXECUTE request.

use crate::value::Value;

/// The largest payload of one packet; a payload of exactly this length
/// continues in the next packet.
pub(super) const MAX_PAYLOAD: usize = 0xFF_FFFF;
/// Status flag: another result set follows this one.
pub(super) const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;
/// The largest packet we tell the server we accept (it may still send more
/// in several packets).
pub(super) const MAX_PACKET: u32 = 1 << 30;
/// utf8mb4_general_ci.
pub(super) const COLLATION: u8 = 45;
/// MySQL's limit on the columns of a table (and so of a result set).
pub(super) const MAX_COLUMNS: u64 = 4096;

pub(super) const COM_QUIT: u8 = 0x01;
pub(super) const COM_QUERY: u8 = 0x03;
pub(super) const COM_STMT_PREPARE: u8 = 0x16;
pub(super) const COM_STMT_EXECUTE: u8 = 0x17;
pub(super) const TYPE_LONGLONG: u8 = 0x08;
pub(super) const TYPE_VAR_STRING: u8 = 0xFD;

/// A length-encoded integer at the start of `b`: its value and its size.
pub(super) fn lenenc(b: &[u8]) -> Option<(u64, usize)> {
    let le = |n: usize| b.get(1..1 + n).map(|s| s.iter().rev().fold(0u64, |a, &x| a << 8 | u64::from(x)));
    match *b.first()? {
        x @ 0..=0xFA => Some((u64::from(x), 1)),
        0xFC => Some((le(2)?, 3)),
        0xFD => Some((le(3)?, 4)),
        0xFE => Some((le(8)?, 9)),
        _ => None, // 0xFB is NULL, 0xFF an error header: not a length
    }
}

/// Appends a length-encoded integer.
pub(super) fn put_lenenc(out: &mut Vec<u8>, n: u64) {
    match n {
        0..=0xFA => out.push(n as u8),
        0xFB..=0xFFFF => {
            out.push(0xFC);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xFF_FFFF => {
            out.push(0xFD);
            out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xFE);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
}

/// The status flags of an OK packet (0x00, or 0xFE as a result set's
/// terminator with CLIENT_DEPRECATE_EOF): header, affected rows, last
/// insert id, status.
pub(super) fn ok_status(p: &[u8]) -> Option<u16> {
    let mut at = 1;
    at += lenenc(p.get(at..)?)?.1;
    at += lenenc(p.get(at..)?)?.1;
    let s = p.get(at..at + 2)?;
    Some(u16::from_le_bytes([s[0], s[1]]))
}

/// The status flags of a result set's terminator: an OK packet with
/// CLIENT_DEPRECATE_EOF, else an EOF packet (0xFE, warnings, status).
pub(super) fn terminator_status(p: &[u8], deprecate_eof: bool) -> Option<u16> {
    if deprecate_eof {
        ok_status(p)
    } else {
        p.get(3..5).map(|s| u16::from_le_bytes([s[0], s[1]]))
    }
}

/// COM_STMT_PREPARE's OK: statement id, columns, parameters.
pub(super) fn prepare_ok(p: &[u8]) -> Option<(u32, u16, u16)> {
    let b = p.get(..9)?;
    (b[0] == 0).then(|| (u32::from_le_bytes([b[1], b[2], b[3], b[4]]), u16::from_le_bytes([b[5], b[6]]), u16::from_le_bytes([b[7], b[8]])))
}

/// Writes the packet headers of `out`, whose first 4 bytes were reserved:
/// one header when the payload fits one packet, else the payload is split
/// into packets of 0xFFFFFF bytes (and an empty one if it divides exactly).
pub(super) fn frame(out: &mut Vec<u8>, seq: u8) {
    let len = out.len() - 4;
    if len < MAX_PAYLOAD {
        out[..3].copy_from_slice(&(len as u32).to_le_bytes()[..3]);
        out[3] = seq;
        return;
    }
    let payload = out.split_off(4);
    out.clear();
    let mut seq = seq;
    let mut chunks = payload.chunks(MAX_PAYLOAD).peekable();
    while let Some(c) = chunks.next() {
        out.extend_from_slice(&(c.len() as u32).to_le_bytes()[..3]);
        out.push(seq);
        out.extend_from_slice(c);
        seq = seq.wrapping_add(1);
        if chunks.peek().is_none() && c.len() == MAX_PAYLOAD {
            out.extend_from_slice(&[0, 0, 0, seq]);
        }
    }
}

/// Serializes COM_STMT_EXECUTE (no cursor, one iteration, no NULLs, types
/// sent) into `out`, framed with sequence id 0.
pub(super) fn build_execute(out: &mut Vec<u8>, id: u32, order: &[usize], values: &[Value]) {
    out.clear();
    out.extend_from_slice(&[0, 0, 0, 0, COM_STMT_EXECUTE]);
    out.extend_from_slice(&id.to_le_bytes());
    out.push(0); // CURSOR_TYPE_NO_CURSOR
    out.extend_from_slice(&1u32.to_le_bytes());
    if !order.is_empty() {
        out.resize(out.len() + order.len().div_ceil(8), 0); // NULL bitmap
        out.push(1); // new-params-bound: the types follow
        for &i in order {
            out.push(match values[i] {
                Value::Int(_) => TYPE_LONGLONG,
                Value::Text(_) => TYPE_VAR_STRING,
            });
            out.push(0); // signed
        }
        for &i in order {
            match &values[i] {
                Value::Int(v) => out.extend_from_slice(&v.to_le_bytes()),
                Value::Text(s) => {
                    put_lenenc(out, s.len() as u64);
                    out.extend_from_slice(s.as_bytes());
                }
            }
        }
    }
    frame(out, 0);
}
