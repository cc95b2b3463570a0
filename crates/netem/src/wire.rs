//! The wire between the clients' TUN device and the host's: one thread per
//! direction reads packets from one device and writes them to the other
//! after the spec's delay (± jitter), at its rate, dropping its loss share.
//!
//! Packets keep their order (a later packet never departs before an earlier
//! one, as netem does with a rate set); the queue of each direction holds at
//! most [`QUEUE_LIMIT`] packets (netem's default limit) and drops the rest.

use crate::spec::NetSpec;
use std::collections::VecDeque;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Packets a direction may hold before it drops (netem's default `limit`).
pub const QUEUE_LIMIT: usize = 1000;

/// What one direction counted, for tests and the curious.
#[derive(Default, Debug)]
pub struct Counters {
    pub packets: AtomicU64,
    pub bytes: AtomicU64,
    pub dropped: AtomicU64,
}

/// A small xorshift generator: loss and jitter need no more, and no crate.
struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One direction's link: when each queued packet may leave.
struct Link {
    spec: NetSpec,
    rng: Rng,
    queue: VecDeque<(Instant, Vec<u8>)>,
    /// When the last queued packet leaves (packets never overtake).
    last_departure: Instant,
}

impl Link {
    /// Queues a packet that arrived `now`, or drops it (loss, full queue).
    fn admit(&mut self, now: Instant, packet: Vec<u8>, counters: &Counters) {
        if (self.spec.loss_pct > 0.0 && self.rng.unit() * 100.0 < self.spec.loss_pct) || self.queue.len() >= QUEUE_LIMIT {
            counters.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let jitter = self.spec.jitter.as_secs_f64() * (2.0 * self.rng.unit() - 1.0);
        let delay = Duration::from_secs_f64((self.spec.delay.as_secs_f64() + jitter).max(0.0));
        let mut departure = (now + delay).max(self.last_departure);
        if let Some(bps) = self.spec.rate_bps {
            // Serialization: the packet occupies the link after the one before it.
            let on_wire = Duration::from_secs_f64(packet.len() as f64 * 8.0 / bps as f64);
            departure = (now + delay).max(self.last_departure) + on_wire;
        }
        self.last_departure = departure;
        self.queue.push_back((departure, packet));
    }
}

/// Runs one direction until `stop`: `from` → `to`.
pub fn run(from: Arc<OwnedFd>, to: Arc<OwnedFd>, spec: NetSpec, seed: u64, stop: Arc<AtomicBool>, counters: Arc<Counters>) {
    let now = Instant::now();
    let mut link = Link { spec, rng: Rng(seed | 1), queue: VecDeque::new(), last_departure: now };
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        // Wait for a packet, the next departure, or 50 ms (to see `stop`).
        let now = Instant::now();
        let wait =
            link.queue.front().map_or(Duration::from_millis(50), |(t, _)| t.saturating_duration_since(now)).min(Duration::from_millis(50));
        let ts = libc::timespec { tv_sec: 0, tv_nsec: wait.as_nanos() as libc::c_long };
        let mut pfd = libc::pollfd { fd: from.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd and a valid timespec, both alive for the call.
        unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
        if pfd.revents & libc::POLLIN != 0 {
            loop {
                // SAFETY: reading into a buffer we own, of its length, from a descriptor we hold.
                let n = unsafe { libc::read(from.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
                if n <= 0 {
                    break;
                }
                link.admit(Instant::now(), buf[..n as usize].to_vec(), &counters);
            }
        }
        let now = Instant::now();
        while link.queue.front().is_some_and(|(t, _)| *t <= now) {
            let (_, packet) = link.queue.pop_front().expect("a front packet");
            // SAFETY: writing a buffer we own, of its length, to a descriptor we hold.
            let n = unsafe { libc::write(to.as_raw_fd(), packet.as_ptr().cast(), packet.len()) };
            if n > 0 {
                counters.packets.fetch_add(1, Ordering::Relaxed);
                counters.bytes.fetch_add(n as u64, Ordering::Relaxed);
            } else {
                counters.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(spec: &str) -> Link {
        Link { spec: NetSpec::parse(spec).unwrap(), rng: Rng(42), queue: VecDeque::new(), last_departure: Instant::now() }
    }

    #[test]
    fn delay_and_rate_set_each_departure() {
        let c = Counters::default();
        let mut l = link("delay=10ms rate=8kbit");
        let t0 = Instant::now();
        l.admit(t0, vec![0; 100], &c);
        l.admit(t0, vec![0; 100], &c);
        // 100 bytes at 1000 B/s: 100 ms on the wire each, after 10 ms of delay.
        let d: Vec<Duration> = l.queue.iter().map(|(t, _)| *t - t0).collect();
        assert_eq!(d, vec![Duration::from_millis(110), Duration::from_millis(210)]);
    }

    #[test]
    fn jitter_stays_within_its_bounds_and_never_reorders() {
        let c = Counters::default();
        let mut l = link("delay=20ms jitter=5ms");
        let t0 = Instant::now();
        for _ in 0..500 {
            l.admit(t0, vec![0; 60], &c);
        }
        let d: Vec<Duration> = l.queue.iter().map(|(t, _)| *t - t0).collect();
        assert!(d.windows(2).all(|w| w[0] <= w[1]));
        assert!(d.iter().all(|x| *x >= Duration::from_millis(15) && *x <= Duration::from_millis(25)));
    }

    #[test]
    fn loss_drops_about_its_share() {
        let c = Counters::default();
        let mut l = link("loss=10%");
        let t0 = Instant::now();
        for i in 0..10_000 {
            l.admit(t0, vec![0; 60], &c);
            if l.queue.len() > 900 {
                l.queue.clear();
            }
            let _ = i;
        }
        let dropped = c.dropped.load(Ordering::Relaxed);
        assert!((800..1200).contains(&dropped), "{dropped} of 10000 dropped at loss=10%");
    }
}
