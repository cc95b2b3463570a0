//! The byte stream under the hand-written SQL protocol clients
//! (`pgwire`, `mywire`): TCP (Nagle off), a unix socket, or
//! TLS over TCP, and [`Inbox`], one reused read buffer that frames messages.
//!
//! Both protocols are request/response on one connection, so a client writes
//! one buffer per round trip and reads the reply into the inbox with as few
//! `read` calls as the kernel allows; nothing is allocated per query.

use super::{connect_io_class, tls, SqlTls};
use rustls::pki_types::ServerName;
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use std::io;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};
use tokio::net::{TcpStream, UnixStream};

/// An open connection to a SQL server.
pub(crate) enum Stream {
    /// Plain TCP.
    Tcp(TcpStream),
    /// A unix domain socket.
    Unix(UnixStream),
    /// TLS over TCP (rustls).
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl Stream {
    /// Connects over TCP within `timeout`; the failure names the address.
    pub(crate) async fn tcp(host: &str, port: u16, timeout: Duration) -> Result<Stream, Failure> {
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
    pub(crate) async fn unix(path: &str, timeout: Duration) -> Result<Stream, Failure> {
        match tokio::time::timeout(timeout, UnixStream::connect(path)).await {
            Err(_) => Err(Failure::new(ErrorClass::ConnectTimeout, format!("connect to {path} timed out"))),
            Ok(Err(e)) => Err(Failure::new(connect_io_class(&e), format!("connect to {path}: {e}"))),
            Ok(Ok(s)) => Ok(Stream::Unix(s)),
        }
    }

    /// Runs the TLS handshake on a TCP stream, as `mode` asks (the server
    /// has already agreed to it in the protocol's own way).
    pub(crate) async fn into_tls(self, mode: &SqlTls, host: &str, timeout: Duration) -> Result<Stream, Failure> {
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

    /// Writes the whole buffer (and flushes the TLS layer).
    pub(crate) async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(buf).await,
            Stream::Unix(s) => s.write_all(buf).await,
            Stream::Tls(s) => {
                s.write_all(buf).await?;
                s.flush().await
            }
        }
    }

    /// Writes what the socket takes at once, without waiting (a goodbye
    /// message from `Drop`); TLS streams write nothing.
    pub(crate) fn try_write_now(&self, buf: &[u8]) {
        let _ = match self {
            Stream::Tcp(s) => s.try_write(buf),
            Stream::Unix(s) => s.try_write(buf),
            Stream::Tls(_) => Ok(0),
        };
    }

    /// Marks a plain socket as not readable without asking the kernel, when
    /// the caller knows nothing is due (the whole reply was read and nothing
    /// is left buffered). tokio (1.54) clears read readiness itself after a
    /// read that did not fill the buffer, the usual case; after a read that
    /// filled it exactly, readiness stays set and the next read would be a
    /// wasted syscall returning EAGAIN before waiting. Edge-triggered epoll
    /// reports the next reply (or a close) as a new event, so no wake-up is
    /// lost. TLS: nothing (rustls may hold decrypted bytes).
    pub(crate) fn clear_read_ready(&self) {
        let nothing = || Err::<(), _>(io::Error::from(io::ErrorKind::WouldBlock));
        let _ = match self {
            Stream::Tcp(s) => s.try_io(Interest::READABLE, nothing),
            Stream::Unix(s) => s.try_io(Interest::READABLE, nothing),
            Stream::Tls(_) => Ok(()),
        };
    }

    /// The socket of a plain (not TLS) stream.
    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        match self {
            Stream::Tcp(s) => Some(s.as_raw_fd()),
            Stream::Unix(s) => Some(s.as_raw_fd()),
            Stream::Tls(_) => None,
        }
    }

    /// Reads what is available into `buf`; 0 means the server closed.
    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf).await,
            Stream::Unix(s) => s.read(buf).await,
            Stream::Tls(s) => s.read(buf).await,
        }
    }
}

/// How long one blocking `poll(2)` may wait for a reply before the read goes
/// back to the event loop, whose timers (the request timeout, the window's
/// end, the per-second hand-over) must not be held up for longer.
const BLOCKING_SLICE_MS: libc::c_int = 50;

/// Waits up to [`BLOCKING_SLICE_MS`] in poll(2) for `fd` to be readable, then
/// reads into `buf` without blocking. Some(0) is the peer's close; None is
/// "nothing yet, or an error": the caller reads through the event loop,
/// which waits longer or reports the error.
fn blocking_recv(fd: std::os::fd::RawFd, buf: &mut [u8]) -> Option<usize> {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one pollfd we own, for a socket the caller's stream keeps open.
    if unsafe { libc::poll(&mut p, 1, BLOCKING_SLICE_MS) } != 1 {
        return None;
    }
    recv_now(fd, buf).ok()
}

/// Reads what `fd` holds into `buf` without blocking: Ok(0) is the peer's
/// close, `WouldBlock` that nothing is there yet.
fn recv_now(fd: std::os::fd::RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: recv writes at most buf.len() bytes into buf, which we borrow
    // mutably; MSG_DONTWAIT keeps it from blocking.
    let got = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
    usize::try_from(got).map_err(|_| io::Error::last_os_error())
}

/// A read buffer over a [`Stream`]: bytes from `pos` to the end are read
/// and not yet consumed.
pub(crate) struct Inbox {
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    /// Wait for replies in a blocking poll(2) (the thread owns only this
    /// connection); see [`Inbox::fill`].
    blocking: bool,
    /// A request has just been written and nothing read since: the next
    /// [`Inbox::fill`] tries the socket at once (see [`Inbox::sent`]).
    eager: bool,
}

impl Inbox {
    /// An empty inbox with room for typical replies; it waits in a blocking
    /// poll when the calling thread is a client thread that owns one
    /// connection.
    pub(crate) fn new() -> Inbox {
        Inbox { buf: vec![0; 16 * 1024], pos: 0, end: 0, blocking: crate::engine::owns_one_connection(), eager: false }
    }

    /// Marks that a request has just been written, so that the next
    /// [`Inbox::fill`] first reads the socket at once, as libpq does after
    /// each send (`PQconsumeInput`), before waiting through the event loop.
    ///
    /// Why: on a thread that serves many connections, a reply is often there
    /// already, because the server process the send woke preempted the
    /// client on its own CPU and answered. Taking it at once keeps that
    /// connection's next query on the CPU where its server process is warm;
    /// leaving it to the next epoll round lets the thread turn to other
    /// connections first and the server processes' wake-ups scatter over
    /// the CPUs. Measured on the 2-vCPU VM (kernel 6.18), PostgreSQL 15,
    /// pgbench-select, 8 s rounds alternated with `pgbench -S -M prepared`
    /// (medians of 4): at 50 clients 80.7k q/s with it against 69.8k
    /// without (pgbench 76.2k), the server's CPU per 100k queries 1.77 s
    /// against 2.09 s (pgbench 1.87 s), the client's 0.72 s against 0.80 s;
    /// at 10 clients 82.8k against 72.4k (pgbench 78.6k). The read found
    /// the reply 69 % of the time at 50 clients, 54 % at 10. MariaDB gained
    /// nothing from it (point-select 67.3k against 65.6k at 50 clients,
    /// 68.3k against 68.9k at 10, sysbench 73.7-75.5k) and at 10 clients its
    /// misses (69 %) raised the client's CPU per 100k queries from 0.95 s to
    /// 1.14 s, so `mywire` does not call this. A thread that owns one
    /// connection waits in poll(2), which returns at once for a reply that
    /// is there, so the extra read is skipped there.
    pub(crate) fn sent(&mut self) {
        self.eager = !self.blocking;
    }

    /// The unconsumed bytes.
    pub(crate) fn data(&self) -> &[u8] {
        &self.buf[self.pos..self.end]
    }

    /// Marks `n` bytes as consumed.
    pub(crate) fn consume(&mut self, n: usize) {
        self.pos += n;
        debug_assert!(self.pos <= self.end);
        if self.pos == self.end {
            self.pos = 0;
            self.end = 0;
        }
    }

    /// Reads until at least `n` unconsumed bytes are buffered; a server that
    /// closes first is `UnexpectedEof`.
    ///
    /// On a thread that owns only this connection, a plain socket is first
    /// waited on with a blocking `poll(2)` of at most [`BLOCKING_SLICE_MS`],
    /// then read with `recv`; a slower reply, an error or TLS go through the
    /// event loop as usual. Why: a reply wakes a poll waiter with the
    /// kernel's sync hint, so the scheduler runs the client on the CPU the
    /// server thread is leaving, while an epoll waiter (tokio) is woken
    /// without it, on its own CPU, with an IPI and cold caches, all paid in
    /// the server's send path. Measured on the 2-vCPU VM (kernel 6.18),
    /// MariaDB point-select, 10 clients, `--threads 10`, 3 rounds of 10 s
    /// (same binary, alternated): 57-62k q/s with epoll against 70-78k with
    /// poll. Under the default two event loops, MariaDB's
    /// `_raw_spin_unlock_irqrestore` (the wake-up) was 14.5 % of all CPU
    /// samples against 4 % under sysbench's blocking threads. Tried and not
    /// kept: the same poll over all of a thread's sockets just before tokio
    /// parks (runtime `on_thread_park`), for threads with several
    /// connections; 4 alternated rounds at 10 clients gave 47-66k q/s with it
    /// and 55-68k without.
    pub(crate) async fn fill(&mut self, stream: &mut Stream, n: usize) -> io::Result<()> {
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
                if let Some(fd) = stream.raw_fd() {
                    match recv_now(fd, &mut self.buf[self.end..]) {
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
            let got = match self.blocking.then(|| stream.raw_fd()).flatten().and_then(|fd| blocking_recv(fd, &mut self.buf[self.end..])) {
                Some(got) => got,
                None => stream.read(&mut self.buf[self.end..]).await?,
            };
            if got == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed the connection"));
            }
            self.end += got;
        }
        Ok(())
    }

    /// Discards the next `n` bytes, reading as needed, without ever holding
    /// more than one buffer of them (a large row nobody looks at).
    pub(crate) async fn skip(&mut self, stream: &mut Stream, mut n: usize) -> io::Result<()> {
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
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::time::Instant;

    #[test]
    fn blocking_recv_waits_one_slice_reads_and_sees_the_close() {
        let (mut ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let fd = theirs.as_raw_fd();
        let mut buf = [0u8; 8];
        let t0 = Instant::now();
        assert_eq!(blocking_recv(fd, &mut buf), None, "nothing sent: back to the event loop");
        let waited = t0.elapsed();
        assert!(waited >= Duration::from_millis(40) && waited < Duration::from_secs(2), "waited {waited:?}");

        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            ours.write_all(b"reply").unwrap();
            ours
        });
        assert_eq!(blocking_recv(fd, &mut buf), Some(5), "a reply that comes within the slice");
        assert_eq!(&buf[..5], b"reply");
        drop(writer.join().unwrap());
        assert_eq!(blocking_recv(fd, &mut buf), Some(0), "the peer's close");
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
        assert!(!Inbox::new().blocking, "a thread outside the engine (prepare, preflight) uses the event loop");
    }
}
