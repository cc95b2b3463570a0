//! The byte stream under the hand-written SQL protocol clients
//! (`pgwire`, `mywire`): TCP (Nagle off), a unix socket, or
//! TLS over TCP, and [`Inbox`], one reused read buffer that frames messages.
//! A client thread that owns only one connection switches its plain socket
//! to blocking reads and writes once connected ([`Stream::settle`]).
//!
//! Both protocols are request/response on one connection, so a client writes
//! one buffer per round trip and reads the reply into the inbox with as few
//! `read` calls as the kernel allows; nothing is allocated per query.

use crate::io_class::connect_io_class;
use crate::tls;
use crate::url::SqlTls;
use rustls::pki_types::ServerName;
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};
use tokio::net::{TcpStream, UnixStream};

/// An open connection to a SQL server.
pub enum Stream {
    /// Plain TCP.
    Tcp(TcpStream),
    /// A unix domain socket.
    Unix(UnixStream),
    /// TLS over TCP (rustls).
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
    /// A plain socket (TCP or unix) in blocking mode, read and written with
    /// plain `recv`/`send` that give up after [`BLOCKING_SLICE`]; see
    /// [`Stream::settle`].
    Blocking(OwnedFd),
}

impl Stream {
    /// Connects over TCP within `timeout`; the failure names the address.
    pub async fn tcp(host: &str, port: u16, timeout: Duration) -> Result<Stream, Failure> {
        let addr = format!("{host}:{port}");
        let s = match tokio::time::timeout(timeout, TcpStream::connect((host, port))).await {
            Err(_) => return Err(Failure::new(ErrorClass::ConnectTimeout, format!("connect to {addr} timed out"))),
            Ok(Err(e)) => return Err(Failure::new(connect_io_class(&e), format!("connect to {addr}: {e}"))),
            Ok(Ok(s)) => s,
        };
        let _ = s.set_nodelay(true);
        Ok(Stream::Tcp(s))
    }

    /// Connects to a unix socket within `timeout`.
    pub async fn unix(path: &str, timeout: Duration) -> Result<Stream, Failure> {
        match tokio::time::timeout(timeout, UnixStream::connect(path)).await {
            Err(_) => Err(Failure::new(ErrorClass::ConnectTimeout, format!("connect to {path} timed out"))),
            Ok(Err(e)) => Err(Failure::new(connect_io_class(&e), format!("connect to {path}: {e}"))),
            Ok(Ok(s)) => Ok(Stream::Unix(s)),
        }
    }

    /// Runs the TLS handshake on a TCP stream, as `mode` asks (the server
    /// has already agreed to it in the protocol's own way).
    pub async fn into_tls(self, mode: &SqlTls, host: &str, timeout: Duration) -> Result<Stream, Failure> {
        let tcp = match self {
            Stream::Tcp(s) => s,
            _ => return Err(Failure::new(ErrorClass::Other, "TLS is for TCP connections, not with a unix socket")),
        };
        let config = tls::client_config(mode).map_err(|m| Failure::new(ErrorClass::Other, m))?;
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| Failure::new(ErrorClass::Other, format!("TLS server name '{host}': {e}")))?;
        let connector = tokio_rustls::TlsConnector::from(config);
        match tokio::time::timeout(timeout, connector.connect(name, tcp)).await {
            Err(_) => Err(Failure::new(ErrorClass::ConnectTimeout, format!("TLS handshake with {host} timed out"))),
            Ok(Err(e)) => Err(Failure::new(ErrorClass::Other, format!("TLS with {host}: {e}"))),
            Ok(Ok(s)) => Ok(Stream::Tls(Box::new(s))),
        }
    }

    /// Once the connection is set up: on a client thread that owns only this
    /// connection (`sole`, from the engine's `ClientCtx`), a plain socket
    /// leaves the event loop and is switched to blocking mode, so that
    /// waiting for a reply is the `recv` itself; any other stream is
    /// returned as it is.
    ///
    /// Why: such a thread has nothing else to do while its request is out,
    /// and a blocking `recv` is woken with the kernel's sync hint (the client
    /// runs on the CPU the server thread is leaving) while an epoll waiter
    /// is woken on its own CPU, with an IPI and cold caches. Figures and what
    /// was tried and not kept: `bench/notes/blocking-socket.md`.
    pub fn settle(self, sole: bool) -> io::Result<Stream> {
        if !sole {
            return Ok(self);
        }
        match self {
            Stream::Tcp(s) => Stream::blocking(OwnedFd::from(s.into_std()?)),
            Stream::Unix(s) => Stream::blocking(OwnedFd::from(s.into_std()?)),
            other => Ok(other),
        }
    }

    /// A [`Stream::Blocking`] over `fd`: blocking mode, with
    /// [`BLOCKING_SLICE`] as its receive and send timeouts.
    fn blocking(fd: OwnedFd) -> io::Result<Stream> {
        let sock = socket2::SockRef::from(&fd);
        sock.set_nonblocking(false)?;
        sock.set_read_timeout(Some(BLOCKING_SLICE))?;
        sock.set_write_timeout(Some(BLOCKING_SLICE))?;
        Ok(Stream::Blocking(fd))
    }

    /// Writes the whole buffer (and flushes the TLS layer).
    pub async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(buf).await,
            Stream::Unix(s) => s.write_all(buf).await,
            Stream::Tls(s) => {
                s.write_all(buf).await?;
                s.flush().await
            }
            Stream::Blocking(fd) => {
                let mut rest = buf;
                while !rest.is_empty() {
                    match sys_send(fd.as_raw_fd(), rest, 0) {
                        Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
                        Ok(n) => rest = &rest[n..],
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => tokio::task::yield_now().await,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(())
            }
        }
    }

    /// Writes what the socket takes at once, without waiting (a goodbye
    /// message from `Drop`); TLS streams write nothing.
    pub fn try_write_now(&self, buf: &[u8]) {
        let _ = match self {
            Stream::Tcp(s) => s.try_write(buf),
            Stream::Unix(s) => s.try_write(buf),
            Stream::Tls(_) => Ok(0),
            Stream::Blocking(fd) => sys_send(fd.as_raw_fd(), buf, libc::MSG_DONTWAIT),
        };
    }

    /// Marks a plain socket as not readable without asking the kernel, when
    /// the caller knows nothing is due (the whole reply was read and nothing
    /// is left buffered). tokio (1.54) clears read readiness itself after a
    /// read that did not fill the buffer, the usual case; after a read that
    /// filled it exactly, readiness stays set and the next read would be a
    /// wasted syscall returning EAGAIN before waiting. Edge-triggered epoll
    /// reports the next reply (or a close) as a new event, so no wake-up is
    /// lost. TLS and blocking sockets: nothing (rustls may hold decrypted
    /// bytes; a blocking socket has no readiness).
    pub fn clear_read_ready(&self) {
        let nothing = || Err::<(), _>(io::Error::from(io::ErrorKind::WouldBlock));
        let _ = match self {
            Stream::Tcp(s) => s.try_io(Interest::READABLE, nothing),
            Stream::Unix(s) => s.try_io(Interest::READABLE, nothing),
            Stream::Tls(_) | Stream::Blocking(_) => Ok(()),
        };
    }

    /// The socket of a plain stream that the event loop waits on.
    fn polled_fd(&self) -> Option<RawFd> {
        match self {
            Stream::Tcp(s) => Some(s.as_raw_fd()),
            Stream::Unix(s) => Some(s.as_raw_fd()),
            Stream::Tls(_) | Stream::Blocking(_) => None,
        }
    }

    /// Reads what is available into `buf`; 0 means the server closed. A
    /// blocking socket waits in `recv` one [`BLOCKING_SLICE`] at a time and
    /// lets the event loop run its timers in between.
    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf).await,
            Stream::Unix(s) => s.read(buf).await,
            Stream::Tls(s) => s.read(buf).await,
            Stream::Blocking(fd) => loop {
                let t0 = std::time::Instant::now();
                let got = sys_recv(fd.as_raw_fd(), buf, 0);
                note_blocked(t0.elapsed());
                match got {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => tokio::task::yield_now().await,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    r => return r,
                }
            },
        }
    }
}

thread_local! {
    /// Time this thread spent waiting in a blocking socket (see
    /// [`note_blocked`]), ns: idle time, not event-loop lateness.
    static BLOCKED_NS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Records that this client thread waited `d` in a blocking `recv` (a
/// thread that owns one connection): the load engine's timer may fire that
/// much later without the thread having been busy.
fn note_blocked(d: Duration) {
    BLOCKED_NS.with(|b| b.set(b.get().saturating_add(d.as_nanos() as u64)));
}

/// Time this thread has spent blocked in sockets so far, ns (read by the
/// load engine around its timer, to tell idle waiting from a busy loop).
#[inline]
pub fn blocked_ns() -> u64 {
    BLOCKED_NS.with(|b| b.get())
}

/// How long a blocking socket's `recv` or `send` may wait before it hands
/// the thread back to the event loop, whose timers (the request timeout, the
/// window's end, the per-second hand-over) must not be held up for longer.
const BLOCKING_SLICE: Duration = Duration::from_millis(50);

/// `recv(2)` into `buf` with `flags`: Ok(0) is the peer's close,
/// `WouldBlock` that nothing came (in time, on a blocking socket).
fn sys_recv(fd: RawFd, buf: &mut [u8], flags: libc::c_int) -> io::Result<usize> {
    // SAFETY: recv writes at most buf.len() bytes into buf, which we borrow
    // mutably, from a socket the caller's stream keeps open.
    let got = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), flags) };
    usize::try_from(got).map_err(|_| io::Error::last_os_error())
}

/// `send(2)` of `buf` with `flags` (and MSG_NOSIGNAL: a closed peer is an
/// error, not a signal); returns how much the socket took.
fn sys_send(fd: RawFd, buf: &[u8], flags: libc::c_int) -> io::Result<usize> {
    // SAFETY: send reads at most buf.len() bytes from buf, on a socket the
    // caller's stream keeps open.
    let sent = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), flags | libc::MSG_NOSIGNAL) };
    usize::try_from(sent).map_err(|_| io::Error::last_os_error())
}

/// A read buffer over a [`Stream`]: bytes from `pos` to the end are read
/// and not yet consumed.
pub(crate) struct Inbox {
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    /// A request has just been written and nothing read since: the next
    /// [`Inbox::fill`] tries the socket at once (see [`Inbox::sent`]).
    eager: bool,
}

impl Inbox {
    /// An empty inbox with room for typical replies.
    pub fn new() -> Inbox {
        Inbox { buf: vec![0; 16 * 1024], pos: 0, end: 0, eager: false }
    }

    /// Marks that a request has just been written, so that the next
    /// [`Inbox::fill`] first reads the socket at once, as libpq does after
    /// each send (`PQconsumeInput`), before waiting through the event loop.
    ///
    /// Why: on a thread that serves many connections, a reply is often there
    /// already (the server process the send woke preempted the client and
    /// answered); taking it at once keeps that connection's next query on
    /// the CPU where its server process is warm. PostgreSQL gained from it,
    /// MariaDB did not, so `mywire` does not call this; a blocking socket
    /// (see [`Stream::settle`]) skips the extra read. Figures:
    /// `bench/notes/eager-read-after-send.md`.
    pub fn sent(&mut self) {
        self.eager = true;
    }

    /// The unconsumed bytes.
    pub fn data(&self) -> &[u8] {
        &self.buf[self.pos..self.end]
    }

    /// Marks `n` bytes as consumed.
    pub fn consume(&mut self, n: usize) {
        self.pos += n;
        debug_assert!(self.pos <= self.end);
        if self.pos == self.end {
            self.pos = 0;
            self.end = 0;
        }
    }

    /// Reads until at least `n` unconsumed bytes are buffered; a server that
    /// closes first is `UnexpectedEof`.
    pub async fn fill(&mut self, stream: &mut Stream, n: usize) -> io::Result<()> {
        while self.end - self.pos < n {
            if self.pos + n > self.buf.len() {
                // Move the unconsumed tail to the front, and grow if a single
                // message is larger than the buffer.
                self.buf.copy_within(self.pos..self.end, 0);
                self.end -= self.pos;
                self.pos = 0;
                if n > self.buf.len() {
                    self.buf.resize(n.next_power_of_two(), 0);
                }
            }
            if std::mem::take(&mut self.eager) {
                if let Some(fd) = stream.polled_fd() {
                    match sys_recv(fd, &mut self.buf[self.end..], libc::MSG_DONTWAIT) {
                        Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed the connection")),
                        Ok(got) => {
                            self.end += got;
                            continue;
                        }
                        // Nothing there yet: tokio may still hold a stale
                        // readiness (from a reply this path took earlier),
                        // which would cost a second recv ending in EAGAIN.
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => stream.clear_read_ready(),
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            let got = stream.read(&mut self.buf[self.end..]).await?;
            if got == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed the connection"));
            }
            self.end += got;
        }
        Ok(())
    }

    /// Discards the next `n` bytes, reading as needed, without ever holding
    /// more than one buffer of them (a large row nobody looks at).
    pub async fn skip(&mut self, stream: &mut Stream, mut n: usize) -> io::Result<()> {
        loop {
            let have = (self.end - self.pos).min(n);
            self.consume(have);
            n -= have;
            if n == 0 {
                return Ok(());
            }
            self.fill(stream, 1).await?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::time::Instant;

    #[test]
    fn a_blocking_socket_reads_writes_and_lets_timers_run_while_it_waits() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let (mut ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
            let mut stream = Stream::blocking(OwnedFd::from(theirs)).unwrap();
            let mut inbox = Inbox::new();

            // Nothing comes: the read blocks one slice at a time, and a
            // timeout around it still fires on time.
            let t0 = Instant::now();
            let waited = tokio::time::timeout(Duration::from_millis(120), inbox.fill(&mut stream, 1)).await;
            let took = t0.elapsed();
            assert!(waited.is_err(), "nothing was sent: {waited:?}");
            assert!(took >= Duration::from_millis(120) && took < Duration::from_millis(120) + 4 * BLOCKING_SLICE, "took {took:?}");

            // A reply that comes later is read.
            let writer = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                ours.write_all(b"reply").unwrap();
                ours
            });
            inbox.fill(&mut stream, 5).await.unwrap();
            assert_eq!(inbox.data(), b"reply");
            inbox.consume(5);
            let mut ours = writer.join().unwrap();

            // A write larger than the socket's buffer waits, a slice at a
            // time, until the peer has read it all.
            let big = vec![7u8; 8 << 20];
            let reader = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                let mut got = vec![0u8; 8 << 20];
                ours.read_exact(&mut got).unwrap();
                assert!(got.iter().all(|&b| b == 7));
                ours
            });
            stream.write_all(&big).await.unwrap();
            let ours = reader.join().unwrap();

            // The server closed.
            drop(ours);
            let closed = inbox.fill(&mut stream, 1).await;
            assert!(matches!(closed, Err(ref e) if e.kind() == io::ErrorKind::UnexpectedEof), "{closed:?}");
        });
    }

    /// Polls `fut` once, in the task's own context, and says whether it
    /// finished without waiting for the event loop.
    async fn ready_at_first_poll<F: std::future::Future>(fut: F) -> Option<F::Output> {
        let mut fut = std::pin::pin!(fut);
        match std::future::poll_fn(|cx| std::task::Poll::Ready(fut.as_mut().poll(cx))).await {
            std::task::Poll::Ready(out) => Some(out),
            std::task::Poll::Pending => None,
        }
    }

    #[test]
    fn after_a_send_a_reply_already_there_is_read_at_once_and_a_later_one_is_not_lost() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let (mut ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
            theirs.set_nonblocking(true).unwrap();
            let mut stream = Stream::Unix(UnixStream::from_std(theirs).unwrap());
            let mut inbox = Inbox::new();

            // The reply is in the socket before the read starts: after sent(),
            // the first poll takes it without a turn of the event loop.
            ours.write_all(b"hello").unwrap();
            inbox.sent();
            let first = ready_at_first_poll(inbox.fill(&mut stream, 5)).await;
            assert!(matches!(first, Some(Ok(()))), "the reply was there: read at the first poll");
            assert_eq!(inbox.data(), b"hello");
            inbox.consume(5);

            // Nothing there at the send: the early read finds the socket empty,
            // and a reply that comes later still wakes the read.
            inbox.sent();
            let writer = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                ours.write_all(b"later").unwrap();
                ours
            });
            tokio::time::timeout(Duration::from_secs(5), inbox.fill(&mut stream, 5)).await.expect("a later reply is not lost").unwrap();
            assert_eq!(inbox.data(), b"later");
            inbox.consume(5);

            // The server closed: the early read reports it.
            drop(writer.join().unwrap());
            inbox.sent();
            let closed = ready_at_first_poll(inbox.fill(&mut stream, 1)).await;
            assert!(matches!(closed, Some(Err(ref e)) if e.kind() == io::ErrorKind::UnexpectedEof), "{closed:?}");
        });
    }

    #[test]
    fn only_client_threads_with_one_connection_block() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let (_ours, theirs) = UnixStream::pair().unwrap();
            let stream = Stream::Unix(theirs).settle(false).unwrap();
            assert!(matches!(stream, Stream::Unix(_)), "a thread outside the engine (prepare, preflight) keeps the event loop");
        });
    }
}
