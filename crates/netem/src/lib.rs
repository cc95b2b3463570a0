//! Client network emulation: the load clients run in a network namespace of
//! their own, linked to the host by a wire that delays, paces and drops
//! their packets as a spec says (`delay=40ms jitter=5ms rate=256kbit
//! loss=0.1%`), so a server on this machine meets slow and distant clients.
//! docs/network.md explains the design.
//!
//! - [`spec`]: the spec, parsed and validated, and its canonical text.
//! - `ns`: the namespace's name (`scalelab-<pid>`), its /30, stale removal.
//! - `lock`: the lock its owner holds while it lives, in /run/scalelab.
//! - `error`: what can go wrong, one line each.
//! - `sys`: capability check, `ip`, TUN devices, setns, device sysctls.
//! - `wire`: the two threads that carry packets between the TUN devices.
//!
//! [`ClientNet::up`] builds it all; dropping the [`ClientNet`] tears it
//! down. A process killed before that leaves at most an empty namespace,
//! which the next [`ClientNet::up`] removes: its lock is free once its
//! owner is gone, and only then.

mod error;
mod lock;
mod ns;
pub mod spec;
mod sys;
mod wire;

pub use error::Error;
pub use lock::RUN_DIR;
pub use ns::{name_of, path_of, PREFIX};
pub use spec::{NetSpec, SpecError};
pub use sys::{enter_netns, privileged};
pub use wire::Counters;

use std::net::{IpAddr, Ipv4Addr, UdpSocket};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Whether this process has a client network up (see [`ClientNet::up`]).
static IN_USE: AtomicBool = AtomicBool::new(false);

/// The clients' network, up while this value lives.
pub struct ClientNet {
    name: String,
    spec: NetSpec,
    host_addr: Ipv4Addr,
    client_addr: Ipv4Addr,
    removed_stale: Vec<String>,
    /// The flock that says this namespace's owner lives (`lock`), held
    /// from before the namespace is made until after it is removed.
    lock: Option<lock::Held>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    fds: Vec<Arc<OwnedFd>>,
    /// Client → server, then server → client.
    pub counters: [Arc<Counters>; 2],
}

impl ClientNet {
    /// Builds the namespace `scalelab-<pid>` with its wire for clients that
    /// connect to `targets` (addresses of this machine, IPv4). First takes
    /// the namespace's lock (in [`RUN_DIR`]) and removes the namespaces
    /// whose owners are gone (whose locks nobody holds).
    pub fn up(spec: &NetSpec, targets: &[IpAddr]) -> Result<ClientNet, Error> {
        if !privileged() {
            return Err(Error::NotPrivileged);
        }
        let targets = local_targets(targets)?;
        // One namespace per process (it is named after the pid): a second
        // caller waits for the first to be dropped.
        while IN_USE.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_err() {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let pid = std::process::id();
        let name = name_of(pid);
        let made = Self::own(&name).and_then(|(lock, removed_stale)| {
            let net = ns::free_net(pid)?;
            sys::ip(&["netns", "add", &name])?;
            Ok((lock, removed_stale, net))
        });
        let (lock, removed_stale, (host_addr, client_addr)) = made.inspect_err(|_| IN_USE.store(false, Ordering::Release))?;
        let mut net = ClientNet {
            name,
            spec: spec.clone(),
            host_addr,
            client_addr,
            removed_stale,
            lock: Some(lock),
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::new(),
            fds: Vec::new(),
            counters: [Arc::default(), Arc::default()],
        };
        // On any error from here, dropping `net` removes what was made.
        net.wire_up(&targets)?;
        Ok(net)
    }

    /// Takes the lock of namespace `name` (waiting a little while another
    /// run, which found it free, removes a namespace of a process that had
    /// our pid), then removes the stale namespaces.
    fn own(name: &str) -> Result<(lock::Held, Vec<String>), Error> {
        let dir = lock::RunDir::open(std::path::Path::new(RUN_DIR))?;
        let lock = dir.lock(&ns::lock_name(name), std::time::Duration::from_secs(10))?.ok_or_else(|| {
            Error::Setup(format!(
                "{}/{} stayed locked for 10 s (another scalelab removing a namespace left by this pid?): run again",
                dir.path().display(),
                ns::lock_name(name)
            ))
        })?;
        Ok((lock, ns::remove_stale(std::process::id(), &dir)))
    }

    fn wire_up(&mut self, targets: &[Ipv4Addr]) -> Result<(), Error> {
        let (host_dev, client_dev) = (format!("slnet-{}", std::process::id()), "slnet0");
        let (h, c) = (self.host_addr.to_string(), self.client_addr.to_string());
        let host_fd = Arc::new(sys::open_tun(&host_dev)?);
        self.fds.push(host_fd.clone());
        sys::device_sysctls(&host_dev)?;
        sys::ip(&["addr", "add", &h, "peer", &c, "dev", &host_dev])?;
        sys::ip(&["link", "set", &host_dev, "up"])?;
        // The clients' device is made by a thread inside the namespace.
        let path = self.netns_path();
        let client_fd = std::thread::spawn(move || -> Result<OwnedFd, Error> {
            enter_netns(&path).map_err(|e| Error::Setup(format!("entering {}: {e}", path.display())))?;
            let fd = sys::open_tun(client_dev)?;
            sys::device_sysctls(client_dev)?;
            Ok(fd)
        })
        .join()
        .map_err(|_| Error::Setup("the thread making the client device panicked".into()))??;
        let client_fd = Arc::new(client_fd);
        self.fds.push(client_fd.clone());
        let n = self.name.clone();
        sys::ip(&["-n", &n, "addr", "add", &c, "peer", &h, "dev", client_dev])?;
        sys::ip(&["-n", &n, "link", "set", client_dev, "up"])?;
        // The namespace's loopback stays down, so 127/8 is routed to the host.
        let mut routes: Vec<String> =
            targets.iter().map(|t| if t.is_loopback() { "127.0.0.0/8".into() } else { format!("{t}/32") }).collect();
        routes.dedup();
        for r in &routes {
            sys::ip(&["-n", &n, "route", "replace", r, "dev", client_dev])?;
        }
        let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64);
        for (i, (from, to)) in [(client_fd.clone(), host_fd.clone()), (host_fd, client_fd)].into_iter().enumerate() {
            let (spec, stop, counters) = (self.spec.clone(), self.stop.clone(), self.counters[i].clone());
            let thread = std::thread::Builder::new()
                .name(format!("scalelab-wire-{}", ["up", "down"][i]))
                .spawn(move || wire::run(from, to, spec, seed.wrapping_add(i as u64 * 7919), stop, counters))
                .map_err(|e| Error::Setup(format!("starting the wire: {e}")))?;
            self.threads.push(thread);
        }
        Ok(())
    }

    /// The namespace's name, `scalelab-<pid>`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file a thread opens to enter the namespace ([`enter_netns`]).
    pub fn netns_path(&self) -> PathBuf {
        path_of(&self.name)
    }

    /// The spec in force.
    pub fn spec(&self) -> &NetSpec {
        &self.spec
    }

    /// The clients' address and the host's end of the wire.
    pub fn addresses(&self) -> (Ipv4Addr, Ipv4Addr) {
        (self.client_addr, self.host_addr)
    }

    /// Namespaces of earlier, killed runs that [`ClientNet::up`] removed.
    pub fn removed_stale(&self) -> &[String] {
        &self.removed_stale
    }
}

impl Drop for ClientNet {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        // Closing the TUN descriptors removes both devices.
        self.fds.clear();
        let _ = sys::ip(&["netns", "del", &self.name]);
        // Released only once the namespace is gone: while it exists, it is ours.
        self.lock.take();
        IN_USE.store(false, Ordering::Release);
    }
}

/// The targets as IPv4 addresses of this machine: the wire delivers to the
/// host's own stack, so a remote server (or IPv6) is refused.
fn local_targets(targets: &[IpAddr]) -> Result<Vec<Ipv4Addr>, Error> {
    targets
        .iter()
        .map(|t| match t {
            IpAddr::V4(v4) if v4.is_loopback() || UdpSocket::bind((*v4, 0)).is_ok() => Ok(*v4),
            IpAddr::V4(v4) => Err(Error::Target(format!(
                "the target {v4} is not an address of this machine: the client network reaches servers on this machine only (use its address or 127.0.0.1)"
            ))),
            IpAddr::V6(v6) => Err(Error::Target(format!("the target {v6} is IPv6: the client network is IPv4 only (use 127.0.0.1 or an IPv4 address)"))),
        })
        .collect()
}
