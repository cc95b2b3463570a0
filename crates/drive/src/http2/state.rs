//! The state of one HTTP/2 connection as its requests drive it: the
//! frames the server sends (RFC 9113 §6) read into their streams, the
//! client's own frames queued and written, the windows of both directions,
//! and the end of the connection with every open stream failed by class.

use super::frame::{self, Head};
use bytes::Bytes;
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The receive window this client gives each stream, and the connection:
/// responses are read as they come, so the server's sending is never held
/// up by the client's window.
pub(super) const STREAM_WINDOW: u32 = 1 << 20;
pub(super) const CONN_WINDOW: u32 = 1 << 24;
/// The read buffer: room for the largest frame this client accepts (16 KiB
/// and its header) twice over; a connection's only buffer of that size.
pub(super) const READ_BUFFER: usize = 32 * 1024;

/// What a connection carries: a TCP stream or TLS over one.
pub(super) trait Io: AsyncRead + AsyncWrite + Unpin {}
impl<T: AsyncRead + AsyncWrite + Unpin> Io for T {}

/// One stream: a request out, its response as it comes.
pub(super) struct Stream {
    pub(super) token: u64,
    pub(super) status: Option<u16>,
    pub(super) server: Option<String>,
    /// The response ended (END_STREAM).
    pub(super) end: bool,
    pub(super) failed: Option<Failure>,
    /// The request body still to send, as the server's windows allow.
    pub(super) body: Option<Bytes>,
    pub(super) send_window: i64,
    /// Bytes received since the stream's window was last given back.
    pub(super) unacked: u32,
    pub(super) blocked_since: Option<Instant>,
    pub(super) flow_wait: Duration,
}

pub(super) struct State {
    pub(super) io: Pin<Box<dyn Io>>,
    pub(super) rbuf: Vec<u8>,
    pub(super) rstart: usize,
    pub(super) rend: usize,
    pub(super) wbuf: Vec<u8>,
    pub(super) wpos: usize,
    pub(super) hpack: super::hpack::Reader,
    pub(super) streams: Small<u32, Stream>,
    pub(super) next_id: u32,
    /// The server's SETTINGS: its stream limit (None: none), the window a
    /// stream starts with, the largest frame it takes.
    pub(super) max_streams: Option<u32>,
    pub(super) peer_window: i64,
    pub(super) peer_max_frame: usize,
    pub(super) settings_seen: bool,
    /// The connection's send window (request bodies).
    pub(super) send_window: i64,
    /// Bytes received since the connection's window was last given back.
    pub(super) unacked: u32,
    /// Streams with body left to send.
    pub(super) bodies: usize,
    /// A header block awaiting its CONTINUATION frames: stream, bytes, END_STREAM.
    pub(super) block: Option<(u32, Vec<u8>, bool)>,
    /// The server's GOAWAY: the last stream it processes, and its code.
    pub(super) goaway: Option<(u32, u32)>,
    /// Why the connection ended, once it has.
    pub(super) dead: Option<Failure>,
    /// The wakers of the requests waiting on it, by token.
    pub(super) waiting: Small<u64, Waker>,
    /// Requests waiting for a stream under the server's limit.
    pub(super) slot_waiters: Vec<u64>,
    /// The requests whose wakers the socket holds, for reading and for writing.
    pub(super) reader: Option<u64>,
    pub(super) writer: Option<u64>,
}

/// A request that the server's GOAWAY left unprocessed.
pub(super) fn goaway(code: u32) -> Failure {
    Failure::new(ErrorClass::GoAway, format!("GOAWAY from the server ({}): the request was not processed", frame::code_name(code)))
}

impl State {
    /// Sends what can be sent and reads what has come: after it, the socket
    /// holds this request's waker for reading (and for writing when the
    /// write did not finish), unless the connection has ended.
    pub(super) fn drive(&mut self, cx: &mut Context<'_>, token: u64) {
        if self.dead.is_some() {
            return;
        }
        self.send_bodies();
        self.flush(cx, token);
        self.read(cx, token);
        if self.dead.is_none() && (self.wpos < self.wbuf.len() || self.bodies > 0) {
            self.send_bodies();
            self.flush(cx, token);
        }
    }

    pub(super) fn flush(&mut self, cx: &mut Context<'_>, token: u64) {
        while self.wpos < self.wbuf.len() {
            match self.io.as_mut().poll_write(cx, &self.wbuf[self.wpos..]) {
                Poll::Ready(Ok(0)) => return self.die(ErrorClass::Reset, "HTTP/2 connection: closed by the server".into()),
                Poll::Ready(Ok(n)) => self.wpos += n,
                Poll::Ready(Err(e)) => return self.die_io(&e),
                Poll::Pending => {
                    self.writer = Some(token);
                    return;
                }
            }
        }
        self.wbuf.clear();
        self.wpos = 0;
        // TLS: the records written above may wait in the session.
        match self.io.as_mut().poll_flush(cx) {
            Poll::Ready(Ok(())) => {}
            Poll::Ready(Err(e)) => self.die_io(&e),
            Poll::Pending => self.writer = Some(token),
        }
    }

    pub(super) fn read(&mut self, cx: &mut Context<'_>, token: u64) {
        loop {
            if self.rend == self.rbuf.len() {
                self.rbuf.copy_within(self.rstart..self.rend, 0);
                self.rend -= self.rstart;
                self.rstart = 0;
            }
            let mut rb = ReadBuf::new(&mut self.rbuf[self.rend..]);
            match self.io.as_mut().poll_read(cx, &mut rb) {
                Poll::Pending => {
                    self.reader = Some(token);
                    return;
                }
                Poll::Ready(Ok(())) => {
                    let n = rb.filled().len();
                    if n == 0 {
                        return self.die(ErrorClass::Reset, "HTTP/2 connection: closed by the server".into());
                    }
                    self.rend += n;
                    self.frames();
                    if self.dead.is_some() {
                        return;
                    }
                }
                Poll::Ready(Err(e)) => return self.die_io(&e),
            }
        }
    }

    /// Handles every whole frame in the read buffer.
    pub(super) fn frames(&mut self) {
        while self.rend - self.rstart >= frame::HEAD {
            let h = Head::parse(&self.rbuf[self.rstart..]);
            if !self.settings_seen && h.kind != frame::SETTINGS {
                return self.die(
                    ErrorClass::Other,
                    "the server did not answer in HTTP/2 (its first frame was not SETTINGS): is it an HTTP/2 server, and does it take h2c by prior knowledge?".into(),
                );
            }
            if h.len > frame::DEFAULT_MAX_FRAME {
                return self.protocol(&format!(
                    "a frame of {} bytes, over the {} this client takes (FRAME_SIZE_ERROR)",
                    h.len,
                    frame::DEFAULT_MAX_FRAME
                ));
            }
            if self.rend - self.rstart < frame::HEAD + h.len {
                break;
            }
            let start = self.rstart + frame::HEAD;
            self.rstart = start + h.len;
            let buf = std::mem::take(&mut self.rbuf);
            self.frame(h, &buf[start..start + h.len]);
            self.rbuf = buf;
            if self.dead.is_some() {
                return;
            }
        }
        if self.rstart == self.rend {
            self.rstart = 0;
            self.rend = 0;
        }
    }

    pub(super) fn frame(&mut self, h: Head, p: &[u8]) {
        if self.block.is_some() && h.kind != frame::CONTINUATION {
            return self.protocol("a frame between a header block and its CONTINUATION");
        }
        match h.kind {
            frame::DATA => self.data(h),
            frame::HEADERS => {
                let padded = h.flags & frame::PADDED != 0;
                let pad = if padded { p.first().map_or(usize::MAX, |n| usize::from(*n)) } else { 0 };
                let skip = usize::from(padded) + if h.flags & frame::PRIORITY != 0 { 5 } else { 0 };
                if skip.saturating_add(pad) > p.len() || h.stream == 0 {
                    return self.protocol("a malformed HEADERS frame");
                }
                let fragment = &p[skip..p.len() - pad];
                let end_stream = h.flags & frame::END_STREAM != 0;
                if h.flags & frame::END_HEADERS != 0 {
                    self.headers(h.stream, fragment, end_stream);
                } else {
                    self.block = Some((h.stream, fragment.to_vec(), end_stream));
                }
            }
            frame::CONTINUATION => {
                let Some((id, mut block, end_stream)) = self.block.take().filter(|b| b.0 == h.stream) else {
                    return self.protocol("a CONTINUATION frame that continues nothing");
                };
                block.extend_from_slice(p);
                if h.flags & frame::END_HEADERS != 0 {
                    self.headers(id, &block, end_stream);
                } else {
                    self.block = Some((id, block, end_stream));
                }
            }
            frame::RST_STREAM => {
                let Some(code) = word(p).filter(|_| p.len() == 4) else {
                    return self.protocol("a malformed RST_STREAM frame");
                };
                self.fail(
                    h.stream,
                    Failure::new(ErrorClass::StreamReset, format!("stream reset by the server: {}", frame::code_name(code))),
                );
            }
            frame::SETTINGS => self.settings(h, p),
            frame::PING if h.flags & frame::ACK == 0 => {
                frame::put_head(&mut self.wbuf, p.len(), frame::PING, frame::ACK, 0);
                self.wbuf.extend_from_slice(p);
            }
            frame::GOAWAY => {
                let (Some(last), Some(code)) = (word(p), p.get(4..).and_then(word)) else {
                    return self.protocol("a malformed GOAWAY frame");
                };
                let last = last & 0x7fff_ffff;
                self.goaway = Some((last, code));
                let unprocessed: Vec<u32> = self.streams.keys().copied().filter(|id| *id > last).collect();
                for id in unprocessed {
                    self.fail(id, goaway(code));
                }
                self.wake_slot_waiters();
            }
            frame::WINDOW_UPDATE => {
                let Some(n) = word(p).filter(|_| p.len() == 4) else {
                    return self.protocol("a malformed WINDOW_UPDATE frame");
                };
                let n = i64::from(n & 0x7fff_ffff);
                if h.stream == 0 {
                    self.send_window += n;
                } else if let Some(st) = self.streams.get_mut(&h.stream) {
                    st.send_window += n;
                }
            }
            frame::PUSH_PROMISE => self.protocol("a PUSH_PROMISE, though this client disabled push"),
            _ => {}
        }
    }

    /// DATA: counted against the windows, given back as read; END_STREAM
    /// ends the response.
    pub(super) fn data(&mut self, h: Head) {
        let n = h.len as u32;
        self.unacked += n;
        if self.unacked >= CONN_WINDOW / 2 {
            frame::put_window_update(&mut self.wbuf, 0, self.unacked);
            self.unacked = 0;
        }
        let Some(st) = self.streams.get_mut(&h.stream) else { return };
        if h.flags & frame::END_STREAM != 0 {
            st.end = true;
            let token = st.token;
            self.wake(token);
            return;
        }
        st.unacked += n;
        if st.unacked >= STREAM_WINDOW / 2 {
            frame::put_window_update(&mut self.wbuf, h.stream, st.unacked);
            st.unacked = 0;
        }
    }

    /// A whole header block: read (every one, streams given up included),
    /// the final status and `server` kept.
    pub(super) fn headers(&mut self, id: u32, block: &[u8], end_stream: bool) {
        let (status, server) = match self.hpack.read(block) {
            Ok(f) => (f.status, f.server),
            Err(e) => {
                return self.die(ErrorClass::Other, format!("HTTP/2: the server's header block did not decode (COMPRESSION_ERROR): {e}"))
            }
        };
        let Some(st) = self.streams.get_mut(&id) else { return };
        match status {
            // 1xx: an interim response; the final one follows.
            Some(s) if s < 200 && !end_stream => return,
            Some(s) if st.status.is_none() => {
                st.status = Some(s);
                st.server = server;
            }
            _ => {}
        }
        if end_stream {
            st.end = true;
            let token = st.token;
            self.wake(token);
        }
    }

    pub(super) fn settings(&mut self, h: Head, p: &[u8]) {
        if h.flags & frame::ACK != 0 {
            return;
        }
        if h.stream != 0 || !p.len().is_multiple_of(6) {
            return self.protocol("a malformed SETTINGS frame");
        }
        for e in p.chunks(6) {
            let value = u32::from_be_bytes([e[2], e[3], e[4], e[5]]);
            match u16::from_be_bytes([e[0], e[1]]) {
                frame::SETTINGS_MAX_CONCURRENT_STREAMS => {
                    self.max_streams = Some(value);
                    self.wake_slot_waiters();
                }
                frame::SETTINGS_INITIAL_WINDOW_SIZE => {
                    let delta = i64::from(value) - self.peer_window;
                    self.peer_window = i64::from(value);
                    for st in self.streams.values_mut() {
                        st.send_window += delta;
                    }
                }
                frame::SETTINGS_MAX_FRAME_SIZE => self.peer_max_frame = (value as usize).clamp(frame::DEFAULT_MAX_FRAME, 1 << 24),
                _ => {}
            }
        }
        self.settings_seen = true;
        frame::put_head(&mut self.wbuf, 0, frame::SETTINGS, frame::ACK, 0);
    }

    /// Queues a request's HEADERS (and CONTINUATIONs, past the server's
    /// largest frame).
    pub(super) fn put_headers(&mut self, id: u32, block: &[u8], end_stream: bool) {
        let mut chunks = block.chunks(self.peer_max_frame).peekable();
        let mut kind = frame::HEADERS;
        let mut first = true;
        loop {
            let chunk = chunks.next().unwrap_or(&[]);
            let last = chunks.peek().is_none();
            let mut flags = if last { frame::END_HEADERS } else { 0 };
            if first && end_stream {
                flags |= frame::END_STREAM;
            }
            frame::put_head(&mut self.wbuf, chunk.len(), kind, flags, id);
            self.wbuf.extend_from_slice(chunk);
            if last {
                return;
            }
            kind = frame::CONTINUATION;
            first = false;
        }
    }

    /// Queues request bodies' DATA as the windows allow; a body that finds
    /// no window starts timing its wait (HTTP/2 flow control).
    pub(super) fn send_bodies(&mut self) {
        if self.bodies == 0 {
            return;
        }
        let State { streams, wbuf, send_window, peer_max_frame, bodies, .. } = self;
        for (id, st) in streams.iter_mut() {
            let Some(body) = st.body.as_mut() else { continue };
            while !body.is_empty() {
                let room = st.send_window.min(*send_window).min(*peer_max_frame as i64);
                if room <= 0 {
                    st.blocked_since.get_or_insert_with(Instant::now);
                    break;
                }
                if let Some(t) = st.blocked_since.take() {
                    st.flow_wait += t.elapsed();
                }
                let chunk = body.split_to((room as usize).min(body.len()));
                let flags = if body.is_empty() { frame::END_STREAM } else { 0 };
                frame::put_head(wbuf, chunk.len(), frame::DATA, flags, *id);
                wbuf.extend_from_slice(&chunk);
                st.send_window -= chunk.len() as i64;
                *send_window -= chunk.len() as i64;
            }
            if body.is_empty() {
                st.body = None;
                *bodies -= 1;
            }
        }
    }

    /// Stream `id` is done on the connection: removed, and a request
    /// waiting under the server's stream limit may go.
    pub(super) fn close(&mut self, id: u32) -> Option<Stream> {
        let st = self.streams.remove(&id)?;
        if st.body.is_some() {
            self.bodies -= 1;
        }
        self.wake_slot_waiters();
        Some(st)
    }

    pub(super) fn fail(&mut self, id: u32, f: Failure) {
        if let Some(st) = self.streams.get_mut(&id).filter(|st| !st.end && st.failed.is_none()) {
            st.failed = Some(f);
            let token = st.token;
            self.wake(token);
        }
    }

    pub(super) fn wake(&self, token: u64) {
        if let Some(w) = self.waiting.get(&token) {
            w.wake_by_ref();
        }
    }

    pub(super) fn wake_slot_waiters(&self) {
        for t in &self.slot_waiters {
            self.wake(*t);
        }
    }

    pub(super) fn protocol(&mut self, what: &str) {
        self.die(ErrorClass::Other, format!("HTTP/2: {what} (PROTOCOL_ERROR)"));
    }

    pub(super) fn die_io(&mut self, e: &std::io::Error) {
        let class = match e.kind() {
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::UnexpectedEof => ErrorClass::Reset,
            _ => ErrorClass::Other,
        };
        self.die(class, format!("HTTP/2 connection: {e}"));
    }

    /// The connection has ended: every open stream fails with `why`, and
    /// every waiting request is woken to learn it.
    pub(super) fn die(&mut self, class: ErrorClass, why: String) {
        if self.dead.is_some() {
            return;
        }
        let f = Failure::new(class, why);
        for st in self.streams.values_mut().filter(|st| !st.end && st.failed.is_none()) {
            st.failed = Some(f.clone());
        }
        self.dead = Some(f);
        for w in self.waiting.values() {
            w.wake_by_ref();
        }
    }
}

/// A big-endian u32 at the start of `p`.
fn word(p: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(p.get(..4)?.try_into().ok()?))
}

/// A map of the few entries a connection has at once (its streams, the
/// requests waiting on it), searched in order: SipHash and the tombstones
/// of a `HashMap` whose keys only grow cost 5.5 % of the client's samples
/// on one connection of one stream.
pub(super) struct Small<K, V>(Vec<(K, V)>);

impl<K: PartialEq + Copy, V> Small<K, V> {
    pub(super) fn new() -> Self {
        Small(Vec::new())
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    pub(super) fn get(&self, k: &K) -> Option<&V> {
        self.0.iter().find(|e| e.0 == *k).map(|e| &e.1)
    }

    pub(super) fn get_mut(&mut self, k: &K) -> Option<&mut V> {
        self.0.iter_mut().find(|e| e.0 == *k).map(|e| &mut e.1)
    }

    /// Sets `k` to `v`, in place of what it held.
    pub(super) fn insert(&mut self, k: K, v: V) {
        match self.get_mut(&k) {
            Some(old) => *old = v,
            None => self.0.push((k, v)),
        }
    }

    pub(super) fn remove(&mut self, k: &K) -> Option<V> {
        let i = self.0.iter().position(|e| e.0 == *k)?;
        Some(self.0.swap_remove(i).1)
    }

    pub(super) fn keys(&self) -> impl Iterator<Item = &K> {
        self.0.iter().map(|e| &e.0)
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &V> {
        self.0.iter().map(|e| &e.1)
    }

    pub(super) fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.0.iter_mut().map(|e| &mut e.1)
    }

    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = (&K, &mut V)> {
        self.0.iter_mut().map(|e| (&e.0, &mut e.1))
    }
}
