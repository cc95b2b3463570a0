//! `sweep --client-net SPEC`: the load clients in a network namespace of
//! their own behind a slow, distant link (docs/network.md). The spec and
//! the privileges are checked before anything starts; the namespace is made
//! just before the store opens and lives until the load is over.

use crate::args::SweepArgs;
use crate::error::bad;
use scalelab_core::Target;
use scalelab_netem::{ClientNet, NetSpec};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

/// The spec of `--client-net`, parsed, with the privileges it needs
/// (bad input, exit 2, before anything is started).
pub fn check(a: &SweepArgs) -> anyhow::Result<Option<NetSpec>> {
    let Some(text) = &a.client_net else { return Ok(None) };
    let spec = NetSpec::parse(text).map_err(|e| bad(format!("--client-net: {e}")))?;
    if !a.source_address.is_empty() {
        return Err(bad("--source-address does not apply with --client-net (the clients' address is the namespace's): drop one"));
    }
    if !scalelab_netem::privileged() {
        return Err(bad(scalelab_netem::Error::NotPrivileged.to_string()));
    }
    Ok(Some(spec))
}

/// Brings the clients' network up for a target (the specimen's address when
/// there is one), noting any namespace of a killed run it removed.
pub fn up(spec: Option<&NetSpec>, target: &Target, specimen: Option<SocketAddr>) -> anyhow::Result<Option<ClientNet>> {
    let Some(spec) = spec else { return Ok(None) };
    let addrs: Vec<IpAddr> = match specimen {
        Some(s) => vec![s.ip()],
        None => {
            let port = target.port().unwrap_or(80);
            let host = target.host().trim_start_matches('[').trim_end_matches(']');
            let mut v: Vec<IpAddr> = (host, port)
                .to_socket_addrs()
                .map_err(|e| bad(format!("--client-net: cannot resolve {host}: {e}")))?
                .map(|s| s.ip())
                .filter(|ip| ip.is_ipv4())
                .collect();
            v.dedup();
            if v.is_empty() {
                return Err(bad(format!("--client-net: {host} has no IPv4 address: the client network is IPv4 only")));
            }
            v
        }
    };
    let net = ClientNet::up(spec, &addrs).map_err(|e| bad(e.to_string()))?;
    for name in net.removed_stale() {
        esayln!("note: removed network namespace {name} left by a scalelab that is gone");
    }
    if target.kind().capabilities().admits_by_address {
        // A database admits clients by address: 127.0.0.1 rules do not match the namespace's.
        let (client, _) = net.addresses();
        esayln!(
            "note: the clients connect from {client} (the client network), not 127.0.0.1: a server that admits by address must allow 10.253.0.0/16 (pg_hba.conf `host … 10.253.0.0/16 …`, MySQL `'user'@'10.253.%'`)"
        );
    }
    Ok(Some(net))
}
