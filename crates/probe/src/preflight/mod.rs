//! The preflight's readers: every fact that can skew a benchmark, read from
//! injectable [`Roots`] (fake `/proc` and `/sys` trees in tests), the
//! server's process and listening socket, (for a database target) its
//! settings, and the machine's noise ([`noise`]: a CPU loop timed).
//! `scalelab_analyze::preflight` judges them; docs/preflight.md.

mod files;
pub mod machine;
pub mod net;
pub mod noise;
pub mod server;

use crate::Roots;
use scalelab_core::preflight::{NoiseSample, PreflightFacts, Reading};
use scalelab_core::Target;
use scalelab_wire::SqlUrl;
use std::net::{IpAddr, ToSocketAddrs};
use std::time::Duration;

/// What the caller knows of the server before the preflight reads
/// anything: the one form both `scalelab preflight` and a sweep fill in.
#[derive(Clone, Debug)]
pub struct Known<'a> {
    pub target: &'a Target,
    /// The port the server listens on (the specimen's, once started).
    pub port: Option<u16>,
    /// The server process, or why it is not known.
    pub server_pid: Result<u32, String>,
    /// What the target said it is, or why it is not known.
    pub server_version: Reading<String>,
}

/// What the preflight needs to know of the run beyond the machine.
pub struct PreflightInput<'a> {
    pub known: Known<'a>,
    /// The database to read settings from (database targets only).
    pub db: Option<&'a SqlUrl>,
    /// The CPU loop and steal, measured by [`noise::measure`] just before
    /// (it takes ~0.2 s of this thread, so the caller decides when), or why not.
    pub noise: Reading<NoiseSample>,
}

/// The target host's address (a name is resolved once).
fn target_ip(target: &Target) -> Reading<IpAddr> {
    if target.is_loopback() {
        return Ok(target.host().parse().unwrap_or(IpAddr::from([127, 0, 0, 1])));
    }
    if let Ok(ip) = target.host().parse() {
        return Ok(ip);
    }
    (target.host(), target.port().unwrap_or(80))
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {e}", target.host()))?
        .next()
        .map(|a| a.ip())
        .ok_or_else(|| format!("{} resolves to no address", target.host()))
}

/// Reads every fact (about 1 ms on the live machine, plus a database
/// round trip for database targets).
pub fn read(roots: &Roots, input: &PreflightInput) -> PreflightFacts {
    let (steal_ticks, logical_cpus) = machine::stat(roots);
    let pid = input.known.server_pid.clone();
    let ip = target_ip(input.known.target);
    let route = ip.clone().and_then(|ip| net::route(roots, ip));
    let nic = match &route {
        Ok(r) if r.interface != "lo" => net::nic(roots, &r.interface),
        Ok(_) => Err("loopback: no NIC".into()),
        Err(e) => Err(e.clone()),
    };
    PreflightFacts {
        logical_cpus,
        governors: machine::governors(roots),
        boost: machine::boost(roots),
        smt: machine::smt(roots),
        thp: machine::thp(roots),
        swap_kib: machine::swap(roots),
        steal_ticks,
        load1: machine::load1(roots),
        cpu_pressure: machine::cpu_pressure(roots),
        server_cpus: pid.clone().and_then(|p| machine::allowed_cpus(roots, p)),
        client_nofile: machine::nofile(roots, "self"),
        server_nofile: pid.clone().and_then(|p| machine::nofile(roots, &p.to_string())),
        somaxconn: net::somaxconn(roots),
        listen_backlog: match (ip, input.known.port) {
            (Ok(ip), Some(port)) => net::listen_backlog(roots, ip, port),
            (Err(e), _) => Err(e),
            (_, None) => Err("the target's port is not known".into()),
        },
        port_range: net::port_range(roots),
        tcp_tw_reuse: net::tcp_tw_reuse(roots),
        conntrack: net::conntrack(roots),
        route,
        nic,
        workers: pid.and_then(|p| server::workers(roots, p)),
        db: match input.db {
            Some(url) => server::db_settings(url, Duration::from_secs(5)),
            None => Err("not a database target".into()),
        },
        server_version: input.known.server_version.clone(),
        noise: input.noise.clone(),
    }
}
