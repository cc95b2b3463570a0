//! The specimen's HTTP/1.1 server.
//!
//! Thread per connection (like classic MySQL) in the lock and disk modes,
//! so that a lock shows as threads blocked on a futex and the scheduler's
//! behaviour is what gets measured; `thread-per-connection` likewise, up to
//! [`THREAD_CAP`] threads. `scales` runs one event loop per CPU, connections
//! handed to them in turn; `single-thread` runs one event loop on one thread
//! that does all the work itself.
//!
//! Paths: `/__stats` answers the counters as JSON (how a test checks what the
//! load generator really sent); `/status/NNN` answers with status NNN after
//! the work; anything else does the mode's work and answers 200.

use crate::mode::Mode;
use crate::work::{burn, SpinLock};
use serde::Serialize;
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, TryLockError};
use std::time::{Duration, Instant};

/// How to run the specimen.
#[derive(Clone, Debug)]
pub struct SpecimenConfig {
    /// Where to listen; port 0 picks a free port.
    pub addr: SocketAddr,
    pub mode: Mode,
    /// CPU work per request, microseconds of the serving thread's CPU time.
    pub work_us: u64,
    /// Folder for the `disk` mode's nameless file (a fresh private temp dir when None).
    pub data_dir: Option<PathBuf>,
    /// `stall` mode: how long each stall lasts ([`DEFAULT_STALL_FOR`]).
    pub stall_for: Duration,
    /// `stall` mode: a stall begins this often ([`DEFAULT_STALL_EVERY`]).
    pub stall_every: Duration,
    /// `pool` and `herd` modes: the serving threads ([`DEFAULT_WORKERS`]).
    pub workers: usize,
    /// `herd` mode: wake one waiter per connection (`EPOLLEXCLUSIVE`)
    /// instead of all of them.
    pub fix: bool,
}

/// `pool` and `herd` modes: serving threads when `--workers` is not given.
pub const DEFAULT_WORKERS: usize = 4;
/// `pool` and `herd` modes: the most serving threads `--workers` takes.
pub const MAX_WORKERS: usize = 4096;

/// `stall` mode: the server stops answering for 200 ms ...
pub const DEFAULT_STALL_FOR: Duration = Duration::from_millis(200);
/// ... every 2 s.
pub const DEFAULT_STALL_EVERY: Duration = Duration::from_secs(2);

/// Counters served at `/__stats`.
#[derive(Debug, Default, Serialize)]
pub struct Stats {
    pub mode: String,
    pub work_us: u64,
    /// Requests answered (the stats requests themselves excluded).
    pub requests: u64,
    /// Requests that found the global lock (or spin lock) held and had to wait.
    pub lock_waits: u64,
    /// Spin rounds spent waiting (`spin` mode).
    pub spin_rounds: u64,
    /// fdatasync calls (`disk` mode).
    pub fsyncs: u64,
    /// Connections accepted.
    pub connections: u64,
    /// Integer rounds per microsecond of CPU, measured once at start: the
    /// work per request is `work_us` times this many rounds.
    pub rounds_per_us: f64,
    /// `herd` mode: times a worker woke from epoll, and of those the ones
    /// that found no connection to accept (another worker took it).
    pub wakeups: u64,
    pub empty_wakeups: u64,
}

struct State {
    mode: Mode,
    work_us: u64,
    requests: AtomicU64,
    lock_waits: AtomicU64,
    fsyncs: AtomicU64,
    connections: AtomicU64,
    global: Mutex<u64>,
    spin: SpinLock,
    disk: Option<(File, AtomicU64)>,
    /// `stall` mode: (stall length, period, when the server started). The
    /// last `stall_for` of every period is a stall.
    stall: (Duration, Duration, Instant),
    wakeups: AtomicU64,
    empty_wakeups: AtomicU64,
}

/// The `disk` mode's file: a file with no name (`O_TMPFILE`, or on file
/// systems without it a random name created `O_EXCL` and unlinked at once),
/// so no path exists that another local user could plant a symlink at, and
/// nothing is left behind however the specimen ends (it is usually killed).
/// Without `--data-dir` it is made in a fresh 0700 folder with an
/// unpredictable name under `$TMPDIR`, removed as soon as the file is open:
/// the file lives on in the same file system until the process exits.
fn open_disk_file(data_dir: Option<&Path>) -> io::Result<File> {
    match data_dir {
        Some(d) => tempfile::tempfile_in(d),
        None => {
            let dir = tempfile::Builder::new().prefix("scalelab-specimen-").tempdir()?;
            let file = tempfile::tempfile_in(dir.path())?;
            dir.close()?;
            Ok(file)
        }
    }
}

impl State {
    fn stats(&self) -> Stats {
        Stats {
            mode: self.mode.to_string(),
            work_us: self.work_us,
            requests: self.requests.load(Ordering::Relaxed),
            lock_waits: self.lock_waits.load(Ordering::Relaxed),
            spin_rounds: self.spin.spin_rounds.load(Ordering::Relaxed),
            fsyncs: self.fsyncs.load(Ordering::Relaxed),
            connections: self.connections.load(Ordering::Relaxed),
            rounds_per_us: crate::work::calibrate(),
            wakeups: self.wakeups.load(Ordering::Relaxed),
            empty_wakeups: self.empty_wakeups.load(Ordering::Relaxed),
        }
    }

    /// Does one request's work as the mode prescribes; returns the status to send.
    /// Never inlined: `--profile` names it as the function that takes the global lock.
    #[inline(never)]
    fn work(&self, path: &str) -> (u16, Vec<u8>) {
        if path == "/__stats" {
            let body = serde_json::to_vec(&self.stats()).unwrap_or_default();
            return (200, body);
        }
        match self.mode {
            Mode::Scales | Mode::SingleThread | Mode::ThreadPerConnection | Mode::Pool | Mode::Herd => {
                burn(self.work_us);
            }
            Mode::Stall => {
                burn(self.work_us);
                // A request that finds the server stalled waits for the stall's end.
                let (stall_for, every, started) = self.stall;
                let into = Duration::from_nanos((started.elapsed().as_nanos() % every.as_nanos().max(1)) as u64);
                if into + stall_for >= every {
                    std::thread::sleep(every - into);
                }
            }
            Mode::GlobalLock => {
                let guard = match self.global.try_lock() {
                    Ok(g) => g,
                    Err(TryLockError::WouldBlock) => {
                        self.lock_waits.fetch_add(1, Ordering::Relaxed);
                        self.global.lock().unwrap_or_else(|p| p.into_inner())
                    }
                    Err(TryLockError::Poisoned(p)) => p.into_inner(),
                };
                let mut g = guard;
                *g += 1;
                burn(self.work_us);
            }
            Mode::Spin => {
                let ((), waited) = self.spin.with(|| {
                    burn(self.work_us);
                });
                if waited {
                    self.lock_waits.fetch_add(1, Ordering::Relaxed);
                }
            }
            Mode::Disk => {
                burn(self.work_us);
                if let Some((file, offset)) = &self.disk {
                    let line = b"scalelab specimen disk mode: one appended record per request....\n";
                    let at = offset.fetch_add(line.len() as u64, Ordering::Relaxed);
                    if file.write_all_at(line, at).is_ok() && file.sync_data().is_ok() {
                        self.fsyncs.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
        self.requests.fetch_add(1, Ordering::Relaxed);
        let status = path.strip_prefix("/status/").and_then(|s| s.parse::<u16>().ok()).filter(|s| (200..=599).contains(s)).unwrap_or(200);
        (status, format!("specimen {} {}\n", self.mode, status).into_bytes())
    }
}

/// Binds, calls `on_bound` with the address, then serves until the process ends.
pub fn serve(config: SpecimenConfig, on_bound: impl FnOnce(SocketAddr)) -> io::Result<()> {
    let listener =
        TcpListener::bind(config.addr).map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {}: {e}", config.addr)))?;
    let disk = if config.mode == Mode::Disk {
        let dir = config.data_dir.clone().unwrap_or_else(std::env::temp_dir);
        let file = open_disk_file(config.data_dir.as_deref())
            .map_err(|e| io::Error::new(e.kind(), format!("cannot create the disk mode's file in {}: {e}", dir.display())))?;
        Some((file, AtomicU64::new(0)))
    } else {
        None
    };
    let state = Arc::new(State {
        mode: config.mode,
        work_us: config.work_us,
        requests: AtomicU64::new(0),
        lock_waits: AtomicU64::new(0),
        fsyncs: AtomicU64::new(0),
        connections: AtomicU64::new(0),
        global: Mutex::new(0),
        spin: SpinLock::new(),
        disk,
        stall: (config.stall_for.min(config.stall_every), config.stall_every, Instant::now()),
        wakeups: AtomicU64::new(0),
        empty_wakeups: AtomicU64::new(0),
    });
    // Measured before the first request is accepted, so no request pays for it.
    crate::work::calibrate();
    on_bound(listener.local_addr()?);
    match config.mode {
        Mode::SingleThread => return serve_single_thread(listener, state),
        Mode::Scales => return serve_event_loops(listener, state),
        Mode::Pool => return serve_pool(listener, state, config.workers.max(1)),
        Mode::Herd => {
            let on_wake: crate::herd::OnWake = Arc::new(move |stream| {
                state.wakeups.fetch_add(1, Ordering::Relaxed);
                match stream {
                    Some(stream) => serve_accepted(stream, &state),
                    None => {
                        state.empty_wakeups.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
            return crate::herd::serve(listener, config.workers.max(1), config.fix, on_wake);
        }
        _ => {}
    }
    // Thread-per-connection modes; `thread-per-connection` waits for a free
    // thread before it accepts, so excess connections queue in the backlog.
    let cap = (config.mode == Mode::ThreadPerConnection).then(|| Arc::new((Mutex::new(0usize), Condvar::new())));
    for stream in listener.incoming() {
        if let Some(cap) = &cap {
            let (n, freed) = &**cap;
            let mut n = n.lock().unwrap_or_else(|p| p.into_inner());
            while *n >= THREAD_CAP {
                n = freed.wait(n).unwrap_or_else(|p| p.into_inner());
            }
            *n += 1;
        }
        let stream = match stream {
            Ok(s) => s,
            // EMFILE and friends: keep serving the connections we have.
            Err(_) => {
                std::thread::sleep(std::time::Duration::from_millis(10));
                continue;
            }
        };
        state.connections.fetch_add(1, Ordering::Relaxed);
        let (state, slot) = (state.clone(), cap.clone());
        let spawned = std::thread::Builder::new().stack_size(256 * 1024).spawn(move || {
            let _ = serve_connection(stream, &state);
            release(slot.as_deref());
        });
        if spawned.is_err() {
            release(cap.as_deref());
        }
    }
    Ok(())
}

/// `pool`: `workers` threads, each blocking in `accept` on the shared
/// listener (the kernel wakes one per connection) and serving the
/// connection it got until the client closes it, as a prefork server's
/// children do. The rest of the clients wait in the listen queue.
fn serve_pool(listener: TcpListener, state: Arc<State>, workers: usize) -> io::Result<()> {
    let listener = Arc::new(listener);
    let threads: Vec<_> = (0..workers)
        .map(|i| {
            let (listener, state) = (listener.clone(), state.clone());
            std::thread::Builder::new().name(format!("pool-{i}")).stack_size(256 * 1024).spawn(move || loop {
                match listener.accept() {
                    Ok((stream, _)) => {
                        state.connections.fetch_add(1, Ordering::Relaxed);
                        let _ = serve_connection(stream, &state);
                    }
                    // EMFILE and friends: keep serving.
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            })
        })
        .collect::<io::Result<_>>()?;
    for t in threads {
        let _ = t.join();
    }
    Ok(())
}

/// One connection served to its end on the calling thread (`herd`'s workers).
fn serve_accepted(stream: TcpStream, state: &State) {
    state.connections.fetch_add(1, Ordering::Relaxed);
    let _ = stream.set_nonblocking(false);
    let _ = serve_connection(stream, state);
}

/// The most connection threads `thread-per-connection` runs at once (as
/// Apache's MaxRequestWorkers caps its workers).
pub const THREAD_CAP: usize = 1024;

/// Gives a connection thread's slot back under the cap.
fn release(cap: Option<&(Mutex<usize>, Condvar)>) {
    if let Some((n, freed)) = cap {
        *n.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
        freed.notify_one();
    }
}

/// `scales`: one event loop per CPU this process may use; the accepting
/// thread hands each connection to the next loop in turn, so the loops
/// share the clients evenly whatever their number.
fn serve_event_loops(listener: TcpListener, state: Arc<State>) -> io::Result<()> {
    let loops = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut senders = Vec::new();
    for i in 0..loops {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<TcpStream>();
        senders.push(tx);
        let state = state.clone();
        let rt = tokio::runtime::Builder::new_current_thread().enable_io().build()?;
        std::thread::Builder::new().name(format!("specimen-loop-{i}")).spawn(move || {
            let local = tokio::task::LocalSet::new();
            local.block_on(&rt, async move {
                while let Some(s) = rx.recv().await {
                    if let Ok(s) = tokio::net::TcpStream::from_std(s) {
                        tokio::task::spawn_local(serve_async(s, state.clone()));
                    }
                }
            })
        })?;
    }
    for (n, stream) in listener.incoming().enumerate() {
        let Ok(stream) = stream else {
            std::thread::sleep(std::time::Duration::from_millis(10));
            continue;
        };
        state.connections.fetch_add(1, Ordering::Relaxed);
        if stream.set_nonblocking(true).is_ok() {
            let _ = senders[n % loops].send(stream);
        }
    }
    Ok(())
}

/// Outcome of parsing the bytes received so far.
enum Parsed {
    Partial,
    Request { consumed: usize, path: String, close: bool },
    Bad,
}

fn parse(buf: &[u8]) -> Parsed {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => {
            let mut close = req.version == Some(0);
            let mut body = 0usize;
            for h in req.headers.iter() {
                if h.name.eq_ignore_ascii_case("connection") {
                    let v = String::from_utf8_lossy(h.value).to_ascii_lowercase();
                    if v.contains("close") {
                        close = true;
                    } else if v.contains("keep-alive") {
                        close = false;
                    }
                } else if h.name.eq_ignore_ascii_case("content-length") {
                    body = std::str::from_utf8(h.value).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(0);
                }
            }
            if buf.len() < len + body {
                return Parsed::Partial;
            }
            Parsed::Request { consumed: len + body, path: req.path.unwrap_or("/").to_string(), close }
        }
        Ok(httparse::Status::Partial) => Parsed::Partial,
        Err(_) => Parsed::Bad,
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn response(status: u16, body: &[u8], close: bool, mode: Mode) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} {}\r\nServer: scalelab-specimen/{} ({mode})\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n{}\r\n",
        reason(status),
        scalelab_core::VERSION,
        body.len(),
        if close { "Connection: close\r\n" } else { "" }
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// What a connection does next, as its [`Requests`] buffer decides.
enum Next {
    /// Send these bytes; close afterwards when `close`.
    Reply { bytes: Vec<u8>, close: bool },
    /// Read more bytes into [`Requests::space`].
    Read,
    /// Close now (a request head over 1 MiB).
    Close,
}

/// One connection's unparsed bytes: the request loop of both the
/// thread-per-connection servers and the single-thread event loop, without
/// the I/O (each feeds it reads and writes its replies its own way).
struct Requests {
    buf: Vec<u8>,
    filled: usize,
}

impl Requests {
    fn new() -> Requests {
        Requests { buf: vec![0u8; 8192], filled: 0 }
    }

    /// Serves the next buffered request (running its work on the caller's
    /// thread), or says to read more.
    fn next(&mut self, state: &State) -> Next {
        match parse(&self.buf[..self.filled]) {
            Parsed::Request { consumed, path, close } => {
                let (status, body) = state.work(&path);
                self.buf.copy_within(consumed..self.filled, 0);
                self.filled -= consumed;
                Next::Reply { bytes: response(status, &body, close, state.mode), close }
            }
            Parsed::Bad => Next::Reply { bytes: response(400, b"bad request\n", true, state.mode), close: true },
            Parsed::Partial if self.filled < self.buf.len() => Next::Read,
            Parsed::Partial if self.buf.len() >= 1 << 20 => Next::Close,
            Parsed::Partial => {
                self.buf.resize(self.buf.len() * 2, 0);
                Next::Read
            }
        }
    }

    /// Where the next read goes.
    fn space(&mut self) -> &mut [u8] {
        &mut self.buf[self.filled..]
    }

    /// Records `n` bytes read into [`Requests::space`].
    fn advance(&mut self, n: usize) {
        self.filled += n;
    }
}

fn serve_connection(mut stream: TcpStream, state: &State) -> io::Result<()> {
    let _ = stream.set_nodelay(true);
    let mut requests = Requests::new();
    loop {
        match requests.next(state) {
            Next::Reply { bytes, close } => {
                stream.write_all(&bytes)?;
                if close {
                    return Ok(());
                }
            }
            Next::Close => return Ok(()),
            Next::Read => match stream.read(requests.space())? {
                0 => return Ok(()),
                n => requests.advance(n),
            },
        }
    }
}

fn serve_single_thread(listener: TcpListener, state: Arc<State>) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_io().build()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        loop {
            let (stream, _) = match listener.accept().await {
                Ok(s) => s,
                Err(_) => continue,
            };
            state.connections.fetch_add(1, Ordering::Relaxed);
            let state = state.clone();
            tokio::task::spawn_local(serve_async(stream, state));
        }
    })
}

/// One connection on an event loop: the work runs on the loop itself, so
/// the loop's other connections wait for it (the point of `single-thread`).
async fn serve_async(mut stream: tokio::net::TcpStream, state: Arc<State>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _ = stream.set_nodelay(true);
    let mut requests = Requests::new();
    loop {
        match requests.next(&state) {
            Next::Reply { bytes, close } => {
                if stream.write_all(&bytes).await.is_err() || close {
                    return;
                }
            }
            Next::Close => return,
            Next::Read => match stream.read(requests.space()).await {
                Ok(0) | Err(_) => return,
                Ok(n) => requests.advance(n),
            },
        }
    }
}
