//! Reading one HTTP/1.1 response off a stream: status line and headers with
//! `httparse`, then the body by Content-Length, chunked framing, or to EOF.
//!
//! The body is counted and discarded as it arrives: a load generator has no
//! use for it, and keeping it would cost memory per client.

use std::io;
use tokio::io::{AsyncRead, AsyncReadExt};

/// What the engine needs to know about a response.
#[derive(Debug, PartialEq, Eq)]
pub struct ResponseHead {
    pub status: u16,
    /// The server closes the connection after this response.
    pub close: bool,
    /// The `Server` header, kept only when asked for (the preflight request).
    pub server: Option<String>,
}

/// Why a response could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// The connection ended before any byte of the response (a reused
    /// keep-alive connection the server had closed).
    ClosedBeforeResponse,
    Io(io::Error),
    Protocol(String),
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        ReadError::Io(e)
    }
}

const MAX_HEAD: usize = 64 * 1024;

/// A connection's buffer to start with: 8 KiB (wrk's size) holds the head
/// and small bodies. Every client keeps its buffer, so the size is memory
/// per connection: at 16 KiB, 50,000 connections held 800 MB of buffers
/// (bench/soak measured 18 KB per connection in all; now about 10 KB).
const START_BUF: usize = 8 * 1024;

/// A body larger than the buffer grows it up to this, so big responses
/// still arrive in few reads (only the clients that fetch them pay).
const BIG_BODY_BUF: usize = 64 * 1024;

/// Reads one response into `buf` (reused across requests) and returns its head.
/// `head_only`: the request was HEAD, so no body follows whatever the headers say.
pub async fn read_response<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut Vec<u8>,
    head_only: bool,
    want_server: bool,
) -> Result<ResponseHead, ReadError> {
    // The buffer keeps its length between requests: no re-zeroing per request.
    if buf.len() < START_BUF {
        buf.resize(START_BUF, 0);
    }
    let mut filled = 0usize;
    // After an interim response, what is left in the buffer is parsed before reading more.
    let mut read_first = true;
    // Status line and headers.
    let (head, head_len, body) = loop {
        if buf.len() < filled + 2048 {
            buf.resize(filled + START_BUF, 0);
        }
        if read_first {
            let n = stream.read(&mut buf[filled..]).await?;
            if n == 0 {
                return Err(if filled == 0 {
                    ReadError::ClosedBeforeResponse
                } else {
                    ReadError::Io(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed mid-headers"))
                });
            }
            filled += n;
        }
        read_first = true;
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut resp = httparse::Response::new(&mut headers);
        match resp.parse(&buf[..filled]) {
            Ok(httparse::Status::Complete(len)) => {
                let status = resp.code.unwrap_or(0);
                if (100..200).contains(&status) && status != 101 {
                    // An interim response (100 Continue): drop it and read on.
                    buf.copy_within(len..filled, 0);
                    filled -= len;
                    read_first = filled == 0;
                    continue;
                }
                let mut close = resp.version == Some(0);
                let mut length = None;
                let mut chunked = false;
                let mut server = None;
                for h in resp.headers.iter() {
                    if h.name.eq_ignore_ascii_case("content-length") {
                        length = std::str::from_utf8(h.value).ok().and_then(|v| v.trim().parse::<u64>().ok());
                        if length.is_none() {
                            return Err(ReadError::Protocol("invalid Content-Length".into()));
                        }
                    } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                        chunked = h.value.windows(7).any(|w| w.eq_ignore_ascii_case(b"chunked"));
                    } else if h.name.eq_ignore_ascii_case("connection") {
                        if h.value.windows(5).any(|w| w.eq_ignore_ascii_case(b"close")) {
                            close = true;
                        } else if h.value.windows(10).any(|w| w.eq_ignore_ascii_case(b"keep-alive")) {
                            close = false;
                        }
                    } else if want_server && h.name.eq_ignore_ascii_case("server") {
                        server = Some(String::from_utf8_lossy(h.value).into_owned());
                    }
                }
                let no_body = head_only || status == 204 || status == 304;
                let body = if no_body {
                    Body::None
                } else if chunked {
                    Body::Chunked
                } else if let Some(n) = length {
                    Body::Length(n)
                } else {
                    close = true;
                    Body::ToEof
                };
                break (ResponseHead { status, close, server }, len, body);
            }
            Ok(httparse::Status::Partial) => {
                if filled >= MAX_HEAD {
                    return Err(ReadError::Protocol("response headers larger than 64 KiB".into()));
                }
            }
            Err(e) => return Err(ReadError::Protocol(format!("malformed response: {e}"))),
        }
    };
    // Body bytes already read sit in buf[head_len..filled]. A response
    // answers one request, so bytes past its end are not the next
    // response's start: they are the server's (or a proxy's) framing
    // error, and a connection left that way would misread what follows.
    let after = |extra: u64, what: &str| ReadError::Protocol(format!("malformed response: {} after {what}", bytes(extra)));
    match body {
        Body::None => {
            if filled > head_len {
                return Err(after((filled - head_len) as u64, "a response that has no body"));
            }
        }
        Body::Length(n) => {
            let mut have = (filled - head_len) as u64;
            if have > n {
                return Err(after(have - n, &format!("its {n}-byte Content-Length body")));
            }
            if n - have > buf.len() as u64 && buf.len() < BIG_BODY_BUF {
                buf.resize(BIG_BODY_BUF, 0);
            }
            while have < n {
                let want = ((n - have) as usize).min(buf.len());
                let got = stream.read(&mut buf[..want]).await?;
                if got == 0 {
                    return Err(ReadError::Io(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed mid-body")));
                }
                have += got as u64;
            }
        }
        Body::ToEof => loop {
            if stream.read(&mut buf[..]).await? == 0 {
                break;
            }
        },
        Body::Chunked => {
            buf.copy_within(head_len..filled, 0);
            read_chunked(stream, buf, filled - head_len).await?;
        }
    }
    Ok(head)
}

/// `1 byte`, `5 bytes`.
fn bytes(n: u64) -> String {
    format!("{n} byte{}", if n == 1 { "" } else { "s" })
}

enum Body {
    None,
    Length(u64),
    Chunked,
    ToEof,
}

/// Consumes a chunked body whose first `filled` bytes are already in `buf`.
async fn read_chunked<S: AsyncRead + Unpin>(stream: &mut S, buf: &mut [u8], mut filled: usize) -> Result<(), ReadError> {
    let mut pos = 0usize; // parse position in buf[..filled]
    let eof = || ReadError::Io(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed mid-chunk"));
    loop {
        // Find the chunk-size line.
        let line_end = loop {
            if let Some(i) = buf[pos..filled].windows(2).position(|w| w == b"\r\n") {
                break pos + i;
            }
            if pos > 0 {
                buf.copy_within(pos..filled, 0);
                filled -= pos;
                pos = 0;
            }
            if filled == buf.len() {
                return Err(ReadError::Protocol("chunk-size line too long".into()));
            }
            let n = stream.read(&mut buf[filled..]).await?;
            if n == 0 {
                return Err(eof());
            }
            filled += n;
        };
        let line = std::str::from_utf8(&buf[pos..line_end]).map_err(|_| ReadError::Protocol("bad chunk size".into()))?;
        let size_hex = line.split(';').next().unwrap_or("").trim();
        let size = u64::from_str_radix(size_hex, 16).map_err(|_| ReadError::Protocol(format!("bad chunk size '{size_hex}'")))?;
        pos = line_end + 2;
        if size == 0 {
            // Trailers end with an empty line.
            loop {
                if let Some(i) = buf[pos..filled].windows(2).position(|w| w == b"\r\n") {
                    if i == 0 {
                        let extra = filled - (pos + 2);
                        if extra > 0 {
                            return Err(ReadError::Protocol(format!("malformed response: {} after its chunked body", bytes(extra as u64))));
                        }
                        return Ok(());
                    }
                    pos += i + 2;
                    continue;
                }
                buf.copy_within(pos..filled, 0);
                filled -= pos;
                pos = 0;
                let n = stream.read(&mut buf[filled..]).await?;
                if n == 0 {
                    return Err(eof());
                }
                filled += n;
            }
        }
        // Skip the chunk data and its CRLF.
        let mut skip = size + 2;
        let avail = (filled - pos) as u64;
        if avail >= skip {
            pos += skip as usize;
            continue;
        }
        skip -= avail;
        filled = 0;
        pos = 0;
        while skip > 0 {
            let n = stream.read(&mut buf[..]).await?;
            if n == 0 {
                return Err(eof());
            }
            if n as u64 > skip {
                buf.copy_within(skip as usize..n, 0);
                filled = n - skip as usize;
                skip = 0;
            } else {
                skip -= n as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read(bytes: &[u8]) -> Result<ResponseHead, ReadError> {
        let mut s = bytes;
        let mut buf = Vec::new();
        read_response(&mut s, &mut buf, false, true).await
    }

    fn run<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
    }

    #[test]
    fn content_length_and_server() {
        let h = run(read(b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nContent-Length: 5\r\n\r\nhello")).unwrap();
        assert_eq!(h, ResponseHead { status: 200, close: false, server: Some("nginx/1.22.1".into()) });
    }

    #[test]
    fn chunked_with_trailer() {
        let r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3;x=y\r\nabc\r\n0\r\nX-T: 1\r\n\r\n";
        assert_eq!(run(read(r)).unwrap().status, 200);
        // truncated chunked body is an error, not a success
        assert!(run(read(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel")).is_err());
    }

    #[test]
    fn close_and_eof_bodies() {
        let h = run(read(b"HTTP/1.0 404 Not Found\r\n\r\nnot here")).unwrap();
        assert_eq!((h.status, h.close), (404, true));
        let h = run(read(b"HTTP/1.1 503 x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")).unwrap();
        assert_eq!((h.status, h.close), (503, true));
        assert!(matches!(run(read(b"")), Err(ReadError::ClosedBeforeResponse)));
        assert!(matches!(run(read(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")), Err(ReadError::Io(_))));
        assert!(matches!(run(read(b"garbage\r\n\r\n")), Err(ReadError::Protocol(_))));
    }

    #[test]
    fn bytes_after_the_body_are_a_malformed_response() {
        let malformed = |r: &[u8]| match run(read(r)) {
            Err(ReadError::Protocol(m)) => m,
            other => panic!("{other:?}"),
        };
        assert!(malformed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA").contains("5 bytes after its 2-byte Content-Length body"));
        assert!(malformed(b"HTTP/1.1 204 No Content\r\n\r\nx").contains("1 byte after a response that has no body"));
        assert!(malformed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\nHTTP/1.1").contains("8 bytes after"));
    }

    #[test]
    fn interim_100_continue_is_skipped() {
        let h = run(read(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")).unwrap();
        assert_eq!(h.status, 201);
    }
}
