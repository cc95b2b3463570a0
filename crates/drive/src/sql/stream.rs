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
    // SAFETY: recv writes at most buf.len() bytes into buf, which we borrow
    // mutably; MSG_DONTWAIT keeps it from blocking.
    let got = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
    usize::try_from(got).ok()
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
}

impl Inbox {
    /// An empty inbox with room for typical replies; it waits in a blocking
    /// poll when the calling thread is a client thread that owns one
    /// connection.
    pub(crate) fn new() -> Inbox {
        Inbox { buf: vec![0; 16 * 1024], pos: 0, end: 0, blocking: crate::engine::owns_one_connection() }
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

    #[test]
    fn only_client_threads_with_one_connection_block() {
        assert!(!Inbox::new().blocking, "a thread outside the engine (prepare, preflight) uses the event loop");
    }
}
