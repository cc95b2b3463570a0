//! HTTP/2 frames as the client writes and reads them (RFC 9113 §4, §6),
//! and the HPACK encoding of its requests (RFC 7541 §6.2.2, literals never
//! added to a table: a request's header block is encoded once and sent
//! as is on any connection). Responses are decoded by `loona-hpack`,
//! whose dynamic table follows the server's.

/// The client's connection preface (RFC 9113 §3.4).
pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// A frame header's length.
pub(crate) const HEAD: usize = 9;
/// The largest frame either side sends before SETTINGS say otherwise, and
/// the largest this client accepts (it never raises it).
pub(crate) const DEFAULT_MAX_FRAME: usize = 16_384;
/// A flow-control window's initial size before SETTINGS (RFC 9113 §6.9.2).
pub(crate) const DEFAULT_WINDOW: i64 = 65_535;
/// The largest a flow-control window may grow (2^31 - 1).
pub(crate) const MAX_WINDOW: i64 = (1 << 31) - 1;

pub(crate) const DATA: u8 = 0x0;
pub(crate) const HEADERS: u8 = 0x1;
pub(crate) const RST_STREAM: u8 = 0x3;
pub(crate) const SETTINGS: u8 = 0x4;
pub(crate) const PUSH_PROMISE: u8 = 0x5;
pub(crate) const PING: u8 = 0x6;
pub(crate) const GOAWAY: u8 = 0x7;
pub(crate) const WINDOW_UPDATE: u8 = 0x8;
pub(crate) const CONTINUATION: u8 = 0x9;

pub(crate) const END_STREAM: u8 = 0x1;
pub(crate) const ACK: u8 = 0x1;
pub(crate) const END_HEADERS: u8 = 0x4;
pub(crate) const PADDED: u8 = 0x8;
pub(crate) const PRIORITY: u8 = 0x20;

pub(crate) const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
pub(crate) const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub(crate) const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub(crate) const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub(crate) const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;

/// CANCEL: the client no longer wants the stream (a request timed out).
pub(crate) const CANCEL: u32 = 0x8;

/// A frame's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) len: usize,
    pub(crate) kind: u8,
    pub(crate) flags: u8,
    pub(crate) stream: u32,
}

impl Head {
    /// The header at the start of `b` (at least [`HEAD`] bytes).
    pub(crate) fn parse(b: &[u8]) -> Head {
        Head {
            len: (usize::from(b[0]) << 16) | (usize::from(b[1]) << 8) | usize::from(b[2]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }
}

/// Appends a frame header.
pub(crate) fn put_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
}

/// Appends a SETTINGS frame of `(id, value)` pairs.
pub(crate) fn put_settings(out: &mut Vec<u8>, settings: &[(u16, u32)]) {
    put_head(out, 6 * settings.len(), SETTINGS, 0, 0);
    for (id, value) in settings {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

/// Appends a WINDOW_UPDATE giving `n` bytes back on `stream` (0: the connection).
pub(crate) fn put_window_update(out: &mut Vec<u8>, stream: u32, n: u32) {
    put_head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&(n & 0x7fff_ffff).to_be_bytes());
}

/// Appends an RST_STREAM with error `code`.
pub(crate) fn put_rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    put_head(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

/// An error code as the RFC names it, and its number: `REFUSED_STREAM (0x7)`.
pub(crate) fn code_name(code: u32) -> String {
    const NAMES: [&str; 14] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    match NAMES.get(code as usize) {
        Some(name) => format!("{name} (0x{code:x})"),
        None => format!("unknown error code (0x{code:x})"),
    }
}

/// Appends `n` as an HPACK integer with an `prefix`-bit prefix, the
/// prefix's other bits `first` (RFC 7541 §5.1).
fn put_int(out: &mut Vec<u8>, first: u8, prefix: u8, mut n: usize) {
    let max = (1usize << prefix) - 1;
    if n < max {
        out.push(first | n as u8);
        return;
    }
    out.push(first | max as u8);
    n -= max;
    while n >= 128 {
        out.push((n % 128 + 128) as u8);
        n /= 128;
    }
    out.push(n as u8);
}

/// Appends a string literal, not Huffman-coded.
fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    put_int(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

/// Appends one header field: fully indexed when the static table holds
/// it (`:method GET`, `:path /`, `:scheme http`...), else a literal never
/// added to a table, its name indexed when the static table has it.
pub(crate) fn put_field(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    let (full, named) = super::hpack::static_index(name, value);
    if let Some(i) = full {
        put_int(out, 0x80, 7, i);
        return;
    }
    match named {
        Some(i) => put_int(out, 0x00, 4, i),
        None => {
            out.push(0x00);
            put_str(out, name.as_bytes());
        }
    }
    put_str(out, value);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the client encodes decodes, through the decoder it reads
    /// responses with, to what it meant.
    #[test]
    fn request_fields_decode_as_sent() {
        let mut block = Vec::new();
        let long = "v".repeat(300);
        let fields: [(&str, &[u8]); 7] = [
            (":method", b"GET"),
            (":scheme", b"http"),
            (":authority", b"127.0.0.1:8080"),
            (":path", b"/a?b=1"),
            ("user-agent", b"scalelab"),
            ("x-long", long.as_bytes()),
            (":method", b"DELETE"),
        ];
        for (n, v) in fields {
            put_field(&mut block, n, v);
        }
        let got = loona_hpack::Decoder::new().decode(&block).unwrap();
        let want: Vec<(Vec<u8>, Vec<u8>)> = fields.iter().map(|(n, v)| (n.as_bytes().to_vec(), v.to_vec())).collect();
        assert_eq!(got, want);
        // The first two are one byte each: indexed from the static table.
        assert_eq!(&block[..2], &[0x82, 0x86]);
    }

    #[test]
    fn frame_heads_round_trip() {
        let mut b = Vec::new();
        put_head(&mut b, 70_000, HEADERS, END_HEADERS | END_STREAM, 0x8000_0003);
        assert_eq!(b.len(), HEAD);
        assert_eq!(Head::parse(&b), Head { len: 70_000, kind: HEADERS, flags: END_HEADERS | END_STREAM, stream: 3 });
        assert_eq!(code_name(7), "REFUSED_STREAM (0x7)");
        assert_eq!(code_name(0x20), "unknown error code (0x20)");
    }
}
