//! The client's reading of a response's header block (RFC 7541): the
//! `:status` and `server` fields, every other field skipped unread.
//!
//! The client announces a header table of 0 bytes (SETTINGS_HEADER_TABLE_SIZE),
//! so a server keeps no dynamic table for it: every field is a static-table
//! index or a literal, and a literal's value need not be decoded to keep a
//! table in step. `loona-hpack`'s decoder decoded every Huffman-coded value
//! and built its Huffman table anew for each: against nginx that was 16.7 %
//! of the client's CPU samples, and its hashing 27 % more, at 0.1x h2load's
//! throughput (bench/notes/h2-vs-h2load.md). Huffman-coded values of the two
//! fields kept are decoded by `loona-hpack`'s decoder, built once per
//! connection when first needed.

/// The static table (RFC 7541 Appendix A): index 1 to 61.
const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// `:status` and `server` Huffman-coded (RFC 7541 Appendix B), padded
/// with the end-of-string code's first bits.
const HUFFMAN_STATUS: &[u8] = &[0xb8, 0x84, 0x8d, 0x36, 0xa3];
const HUFFMAN_SERVER: &[u8] = &[0x41, 0x6c, 0xee, 0x5b, 0x3f];

/// What the client reads of a response's header block.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Fields {
    pub(crate) status: Option<u16>,
    pub(crate) server: Option<String>,
}

/// A connection's header-block reader.
#[derive(Default)]
pub(crate) struct Reader {
    huffman: Option<loona_hpack::huffman::HuffmanDecoder>,
    /// Whether `server` is read: only the preflight shows it, and nginx
    /// Huffman-codes it (decoding it on every response was 5 % of the
    /// client's samples).
    pub(crate) want_server: bool,
}

/// The fields the client keeps.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kept {
    Status,
    Server,
    Other,
}

impl Kept {
    fn of(name: &[u8]) -> Kept {
        match name {
            b":status" => Kept::Status,
            b"server" => Kept::Server,
            _ => Kept::Other,
        }
    }
}

impl Reader {
    /// Reads `block`: its `:status` and `server`; an error names what was
    /// wrong (a dynamic-table index, which a server told of a 0-byte table
    /// never sends, included).
    pub(crate) fn read(&mut self, block: &[u8]) -> Result<Fields, String> {
        let mut out = Fields::default();
        let mut p = block;
        while let Some(&first) = p.first() {
            if first & 0x80 != 0 {
                let (i, rest) = int(p, 7)?;
                p = rest;
                let (name, value) = entry(i)?;
                self.keep(&mut out, Kept::of(name.as_bytes()), value.as_bytes(), false)?;
            } else if first & 0xe0 == 0x20 {
                // A dynamic table size update: 0 is all this client allows.
                let (size, rest) = int(p, 5)?;
                if size != 0 {
                    return Err(format!("a header table of {size} bytes, over the 0 this client announced"));
                }
                p = rest;
            } else {
                // A literal: with incremental indexing (01), without (0000)
                // or never indexed (0001); its name indexed or literal.
                let prefix = if first & 0x40 != 0 { 6 } else { 4 };
                let (i, rest) = int(p, prefix)?;
                p = rest;
                let kept = if i == 0 {
                    let (huffman, name, rest) = string(p)?;
                    p = rest;
                    if huffman {
                        // nginx sends `etag` and `last-modified` as
                        // Huffman-coded names; a string's Huffman code is
                        // unique, so the two kept names are known coded.
                        match name {
                            HUFFMAN_STATUS => Kept::Status,
                            HUFFMAN_SERVER => Kept::Server,
                            _ => Kept::Other,
                        }
                    } else {
                        Kept::of(name)
                    }
                } else {
                    Kept::of(entry(i)?.0.as_bytes())
                };
                let (huffman, value, rest) = string(p)?;
                p = rest;
                self.keep(&mut out, kept, value, huffman)?;
            }
        }
        Ok(out)
    }

    fn keep(&mut self, out: &mut Fields, kept: Kept, value: &[u8], huffman: bool) -> Result<(), String> {
        if kept == Kept::Other || (kept == Kept::Server && !self.want_server) {
            return Ok(());
        }
        let decoded;
        let value = if huffman {
            decoded = self.huffman(value)?;
            &decoded[..]
        } else {
            value
        };
        match kept {
            Kept::Status => out.status = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok()),
            Kept::Server => out.server = Some(String::from_utf8_lossy(value).into_owned()),
            Kept::Other => {}
        }
        Ok(())
    }

    fn huffman(&mut self, coded: &[u8]) -> Result<Vec<u8>, String> {
        self.huffman.get_or_insert_with(loona_hpack::huffman::HuffmanDecoder::new).decode(coded).map_err(|e| format!("{e:?}"))
    }
}

/// Where the static table holds `name: value` whole, and where it holds
/// `name` (the first such entry): the request encoder's indices, read off
/// the one table the reader uses.
pub(crate) fn static_index(name: &str, value: &[u8]) -> (Option<usize>, Option<usize>) {
    let full = STATIC.iter().position(|(n, v)| *n == name && v.as_bytes() == value).map(|i| i + 1);
    let named = STATIC.iter().position(|(n, _)| *n == name).map(|i| i + 1);
    (full, named)
}

/// The static table's entry `i`.
fn entry(i: usize) -> Result<(&'static str, &'static str), String> {
    match i {
        0 => Err("header index 0".into()),
        1..=61 => Ok(STATIC[i - 1]),
        _ => Err(format!("header index {i} is in the dynamic table, which this client keeps at 0 bytes")),
    }
}

/// An integer with a `prefix`-bit prefix (RFC 7541 §5.1), and the rest.
fn int(p: &[u8], prefix: u8) -> Result<(usize, &[u8]), String> {
    let max = (1usize << prefix) - 1;
    let mut n = usize::from(p[0]) & max;
    let mut rest = &p[1..];
    if n < max {
        return Ok((n, rest));
    }
    for shift in (0..28).step_by(7) {
        let (&b, more) = rest.split_first().ok_or("a truncated integer")?;
        rest = more;
        n += usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok((n, rest));
        }
    }
    Err("an integer past 2^28".into())
}

/// A string literal (RFC 7541 §5.2): whether Huffman-coded, its bytes as
/// sent, and the rest.
fn string(p: &[u8]) -> Result<(bool, &[u8], &[u8]), String> {
    let first = *p.first().ok_or("a missing string")?;
    let (len, rest) = int(p, 7)?;
    if len > rest.len() {
        return Err("a string past the block's end".into());
    }
    Ok((first & 0x80 != 0, &rest[..len], &rest[len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The static table as `loona-hpack` has it, entry by entry.
    #[test]
    fn the_static_table_is_the_rfcs() {
        let mut d = loona_hpack::Decoder::new();
        for i in 1..=61u8 {
            let got = d.decode(&[0x80 | i]).unwrap();
            let (n, v) = STATIC[usize::from(i) - 1];
            assert_eq!(got, vec![(n.as_bytes().to_vec(), v.as_bytes().to_vec())], "index {i}");
        }
    }

    /// Blocks as servers send them: indexed statuses, literals with and
    /// without indexing, Huffman-coded values, a size update to 0; the
    /// others' values skipped.
    #[test]
    fn status_and_server_are_read_from_every_representation() {
        let mut r = Reader { want_server: true, ..Reader::default() };
        assert_eq!(r.read(&[0x88]).unwrap(), Fields { status: Some(200), server: None });
        // Size update 0, :status 404 (static 13), server: literal with
        // incremental indexing, name static 54, value "raw".
        assert_eq!(r.read(&[0x20, 0x8d, 0x76, 3, b'r', b'a', b'w']).unwrap(), Fields { status: Some(404), server: Some("raw".into()) });
        // :status 503 without indexing (name static 8), x-a: literal name never indexed.
        let block = [0x08, 3, b'5', b'0', b'3', 0x10, 3, b'x', b'-', b'a', 1, b'b'];
        assert_eq!(r.read(&block).unwrap(), Fields { status: Some(503), server: None });
        // Huffman-coded, as nginx sends its `server` and `date`: the values
        // from an encoder that Huffman-codes (loona-hpack's decoder reads
        // them the same).
        let mut block = vec![0x88];
        block.extend([0x76, 0x80 | 4, 0xaa, 0x63, 0x55, 0xe7]); // server: "nginx" Huffman-coded
        let want = loona_hpack::Decoder::new().decode(&block).unwrap();
        let fields = r.read(&block).unwrap();
        assert_eq!(fields.server.as_deref().map(str::as_bytes), Some(&want[1].1[..]));
        assert_eq!(fields.server.as_deref(), Some("nginx"));
        // Unasked, `server` is skipped unread.
        assert_eq!(Reader::default().read(&block).unwrap(), Fields { status: Some(200), server: None });
        // Names Huffman-coded: known by their code, never decoded.
        let mut h = loona_hpack::huffman::HuffmanDecoder::new();
        assert_eq!(h.decode(HUFFMAN_STATUS).unwrap(), b":status");
        assert_eq!(h.decode(HUFFMAN_SERVER).unwrap(), b"server");
        let mut block = vec![0x00, 0x80 | 5];
        block.extend(HUFFMAN_STATUS);
        block.extend([3, b'2', b'0', b'4', 0x00, 0x80 | 5]);
        block.extend(HUFFMAN_SERVER);
        block.extend([1, b'x', 0x00, 0x80 | 3, 0x2a, 0x47, 0x37, 1, b'"']); // etag, coded
        assert_eq!(r.read(&block).unwrap(), Fields { status: Some(204), server: Some("x".into()) });
        // What a server told of a 0-byte table may not send.
        assert!(r.read(&[0xbe]).unwrap_err().contains("dynamic table"));
        assert!(r.read(&[0x3f, 0xe1, 0x1f]).unwrap_err().contains("over the 0"));
        assert!(r.read(&[0x08, 9, b'2']).unwrap_err().contains("past the block's end"));
    }
}
