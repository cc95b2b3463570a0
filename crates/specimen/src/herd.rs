//! `herd` mode: the thundering herd, on purpose. Every worker thread has
//! its own epoll instance watching the one (non-blocking) listener. Without
//! `EPOLLEXCLUSIVE` the kernel wakes every instance's waiter for each new
//! connection; one `accept` wins and the others find the queue empty
//! (`EAGAIN`) and go back to sleep: N wake-ups and context switches per
//! connection for the work of one. With `--fix` the listener is added with
//! `EPOLLEXCLUSIVE` (Linux 4.5), and the kernel wakes one waiter (or a few).

use std::io;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;

/// What a worker does after each wake-up: serve the connection it
/// accepted (to its end), or note that it found none.
pub(crate) type OnWake = Arc<dyn Fn(Option<TcpStream>) + Send + Sync>;

/// Serves `listener` with `workers` threads that each wait for connections
/// in an epoll of their own, woken all at once (`fix`: one at a time).
pub(crate) fn serve(listener: TcpListener, workers: usize, fix: bool, on_wake: OnWake) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let listener = Arc::new(listener);
    let mut threads = Vec::new();
    for i in 0..workers {
        let epoll = watch(&listener, fix)?;
        let (listener, on_wake) = (listener.clone(), on_wake.clone());
        threads.push(
            std::thread::Builder::new()
                .name(format!("herd-{i}"))
                .stack_size(256 * 1024)
                .spawn(move || worker(&epoll, &listener, &on_wake))?,
        );
    }
    for t in threads {
        let _ = t.join();
    }
    Ok(())
}

/// A new epoll instance watching `listener` for incoming connections.
fn watch(listener: &TcpListener, exclusive: bool) -> io::Result<OwnedFd> {
    // SAFETY: epoll_create1 returns a new descriptor or -1.
    let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a new, valid descriptor that nothing else owns.
    let epoll = unsafe { OwnedFd::from_raw_fd(fd) };
    let flags = libc::EPOLLIN as u32 | if exclusive { libc::EPOLLEXCLUSIVE as u32 } else { 0 };
    let mut ev = libc::epoll_event { events: flags, u64: 0 };
    // SAFETY: both descriptors are valid for the call; ev outlives it.
    if unsafe { libc::epoll_ctl(epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, listener.as_raw_fd(), &mut ev) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(epoll)
}

/// Waits in its epoll; on each wake-up accepts a connection if one is
/// left (often none: another worker was quicker) and hands it on.
fn worker(epoll: &OwnedFd, listener: &TcpListener, on_wake: &OnWake) {
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; 1];
    loop {
        // SAFETY: the buffer holds one event and lives across the call.
        let n = unsafe { libc::epoll_wait(epoll.as_raw_fd(), events.as_mut_ptr(), 1, -1) };
        if n < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        // One connection per wake-up, served to its end; the listener is
        // level-triggered, so what is left wakes the workers again. Another
        // worker may have taken it (EAGAIN), or EMFILE and friends: None.
        on_wake(listener.accept().ok().map(|(stream, _)| stream));
    }
}
