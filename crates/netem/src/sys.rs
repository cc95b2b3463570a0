//! The system calls and commands the namespace needs: the capability
//! check, `ip`, TUN devices, entering a namespace, per-device sysctls.

use crate::error::Error;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::process::Command;

const CAP_NET_ADMIN: u32 = 12;
const CAP_SYS_ADMIN: u32 = 21;

/// Whether this process may create and enter network namespaces and
/// devices (CAP_NET_ADMIN and CAP_SYS_ADMIN in its effective set).
pub fn privileged() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let eff = status.lines().find_map(|l| l.strip_prefix("CapEff:")).and_then(|v| u64::from_str_radix(v.trim(), 16).ok());
    eff.is_some_and(|caps| caps & (1 << CAP_NET_ADMIN) != 0 && caps & (1 << CAP_SYS_ADMIN) != 0)
}

/// Runs `ip ARGS`; its stderr is the error.
pub fn ip(args: &[&str]) -> Result<String, Error> {
    let out = Command::new("ip").args(args).output().map_err(|e| Error::Setup(format!("running `ip`: {e} (install iproute2)")))?;
    if !out.status.success() {
        return Err(Error::Setup(format!("`ip {}`: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim())));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Moves the calling thread into the network namespace at `path` (a file
/// under /run/netns or /proc/PID/ns/net). Other threads are not affected.
pub fn enter_netns(path: &Path) -> std::io::Result<()> {
    let f = File::open(path)?;
    // SAFETY: setns on a valid open descriptor; it changes only this thread's namespace.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Creates a TUN device `name` (raw IPv4/IPv6 packets, no header) in the
/// calling thread's namespace, non-blocking. It is not persistent: it
/// vanishes when the descriptor closes, so a killed process leaves none.
pub fn open_tun(name: &str) -> Result<OwnedFd, Error> {
    let err = |what: &str, e: std::io::Error| Error::Setup(format!("TUN device {name}: {what}: {e}"));
    // SAFETY: a NUL-terminated literal path; the result is checked.
    let fd = unsafe { libc::open(c"/dev/net/tun".as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(err("opening /dev/net/tun", std::io::Error::last_os_error()));
    }
    // SAFETY: fd was just opened and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut req = IfReq { name: [0; libc::IFNAMSIZ], flags: (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short, _pad: [0; 22] };
    req.name[..name.len().min(libc::IFNAMSIZ - 1)].copy_from_slice(&name.as_bytes()[..name.len().min(libc::IFNAMSIZ - 1)]);
    // SAFETY: TUNSETIFF reads and writes an ifreq, which IfReq lays out (name, flags, padding to 40 bytes).
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF as _, &mut req) } != 0 {
        return Err(err("TUNSETIFF", std::io::Error::last_os_error()));
    }
    Ok(fd)
}

/// Sets `net.ipv4.conf.DEV.route_localnet` (and turns IPv6 off on DEV) in
/// the calling thread's namespace: /proc/sys/net answers for the namespace
/// of the thread that opens it.
pub fn device_sysctls(dev: &str) -> Result<(), Error> {
    let path = format!("/proc/sys/net/ipv4/conf/{dev}/route_localnet");
    std::fs::write(&path, "1").map_err(|e| Error::Setup(format!("writing {path}: {e}")))?;
    // No router solicitations or neighbour discovery on the wire; harmless if IPv6 is off already.
    let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{dev}/disable_ipv6"), "1");
    Ok(())
}
