//! The least a closed-loop HTTP/1.1 keep-alive client can do per request:
//! one fixed request written, the fixed-size response counted by its bytes,
//! the request written again; no parsing, no timing, no statistics. Two
//! ways to wait: `epoll` (what wrk and scalelab's tokio loop do) and
//! `uring` (io_uring, a send linked to a receive per connection, completions
//! reaped in batches, no system call per request).
//!
//! Usage: scalelab-floor epoll|uring HOST:PORT PATH CONNECTIONS SECONDS
//! Prints "requests N seconds S". Loopback only: it is a measuring
//! instrument for bench/http_floor, not a load generator.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() != 6 {
        eprintln!("usage: scalelab-floor epoll|uring HOST:PORT PATH CONNECTIONS SECONDS");
        std::process::exit(2);
    }
    let addr: SocketAddr = a[2].parse().expect("HOST:PORT");
    assert!(addr.ip().is_loopback(), "loopback only");
    let request = format!("GET {} HTTP/1.1\r\nHost: {}\r\n\r\n", a[3], a[2]).into_bytes();
    let conns: usize = a[4].parse().expect("CONNECTIONS");
    let secs: f64 = a[5].parse().expect("SECONDS");
    let mut socks: Vec<TcpStream> = (0..conns).map(|_| TcpStream::connect(addr).expect("connect")).collect();
    for s in &socks {
        s.set_nodelay(true).unwrap();
    }
    let size = response_size(&mut socks[0], &request);
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs_f64(secs);
    let n = match a[1].as_str() {
        "epoll" => epoll(&socks, &request, size, deadline),
        "uring" => uring(&socks, &request, size, deadline),
        m => panic!("unknown mode {m}"),
    };
    println!("requests {n} seconds {:.3}", t0.elapsed().as_secs_f64());
}

/// The size of the response (head and body), read once with blocking calls.
fn response_size(s: &mut TcpStream, request: &[u8]) -> usize {
    s.write_all(request).unwrap();
    let mut buf = vec![0u8; 65536];
    let mut got = 0;
    loop {
        got += s.read(&mut buf[got..]).unwrap();
        let text = String::from_utf8_lossy(&buf[..got]);
        if let Some(end) = text.find("\r\n\r\n") {
            let len = text[..end]
                .lines()
                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap()))
                .expect("Content-Length");
            let total = end + 4 + len;
            while got < total {
                got += s.read(&mut buf[got..]).unwrap();
            }
            assert_eq!(got, total);
            return total;
        }
    }
}

fn epoll(socks: &[TcpStream], request: &[u8], size: usize, deadline: Instant) -> u64 {
    // SAFETY: plain system calls on descriptors this process owns, with local buffers.
    unsafe {
        let ep = libc::epoll_create1(0);
        for (i, s) in socks.iter().enumerate() {
            s.set_nonblocking(true).unwrap();
            let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: i as u64 };
            libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, s.as_raw_fd(), &mut ev);
            libc::send(s.as_raw_fd(), request.as_ptr().cast(), request.len(), 0);
        }
        let mut left = vec![size; socks.len()];
        let mut buf = vec![0u8; 65536];
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 64];
        let mut n = 0u64;
        loop {
            let k = libc::epoll_wait(ep, events.as_mut_ptr(), 64, 100);
            for ev in &events[..k.max(0) as usize] {
                let i = ev.u64 as usize;
                let fd = socks[i].as_raw_fd();
                let r = libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0);
                if r <= 0 {
                    continue;
                }
                left[i] -= r as usize;
                if left[i] == 0 {
                    n += 1;
                    left[i] = size;
                    libc::send(fd, request.as_ptr().cast(), request.len(), 0);
                }
            }
            if n.is_multiple_of(64) && Instant::now() >= deadline {
                return n;
            }
        }
    }
}

fn uring(socks: &[TcpStream], request: &[u8], size: usize, deadline: Instant) -> u64 {
    use io_uring::{opcode, squeue, types, IoUring};
    let mut ring: IoUring =
        IoUring::builder().setup_single_issuer().setup_defer_taskrun().setup_coop_taskrun().build(256).expect("io_uring (kernel 6.1+)");
    let mut bufs: Vec<Vec<u8>> = socks.iter().map(|_| vec![0u8; 16384]).collect();
    let mut left = vec![size; socks.len()];
    // user_data: connection << 1 | (1 for a receive).
    let push_pair = |ring: &mut IoUring, i: usize, buf: &mut [u8]| {
        let fd = types::Fd(socks[i].as_raw_fd());
        let send =
            opcode::Send::new(fd, request.as_ptr(), request.len() as u32).build().flags(squeue::Flags::IO_LINK).user_data((i as u64) << 1);
        let recv = opcode::Recv::new(fd, buf.as_mut_ptr(), buf.len() as u32).build().user_data(((i as u64) << 1) | 1);
        // SAFETY: the request and the buffers outlive the ring's use of them.
        unsafe {
            ring.submission().push(&send).unwrap();
            ring.submission().push(&recv).unwrap();
        }
    };
    let push_recv = |ring: &mut IoUring, i: usize, buf: &mut [u8]| {
        let fd = types::Fd(socks[i].as_raw_fd());
        let recv = opcode::Recv::new(fd, buf.as_mut_ptr(), buf.len() as u32).build().user_data(((i as u64) << 1) | 1);
        // SAFETY: as above.
        unsafe { ring.submission().push(&recv).unwrap() };
    };
    for (i, b) in bufs.iter_mut().enumerate() {
        push_pair(&mut ring, i, b);
    }
    let mut n = 0u64;
    let mut done: Vec<(u64, i32)> = Vec::with_capacity(256);
    loop {
        ring.submit_and_wait(1).unwrap();
        done.clear();
        done.extend(ring.completion().map(|c| (c.user_data(), c.result())));
        for &(ud, res) in &done {
            let i = (ud >> 1) as usize;
            if ud & 1 == 0 {
                assert!(res >= 0, "send failed: {res}");
                continue;
            }
            assert!(res > 0, "recv failed: {res}");
            left[i] -= res as usize;
            if left[i] == 0 {
                n += 1;
                left[i] = size;
                push_pair(&mut ring, i, &mut bufs[i]);
            } else {
                push_recv(&mut ring, i, &mut bufs[i]);
            }
        }
        if Instant::now() >= deadline {
            return n;
        }
    }
}
