//! Why the client network could not be built.

/// Why the client network could not be built; each is bad input or a
/// machine that cannot do it, reported before any load.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("--client-net needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create a network namespace: run scalelab with sudo, or drop --client-net")]
    NotPrivileged,
    #[error("--client-net: {0}")]
    Target(String),
    #[error("--client-net: setting up the client network failed: {0}")]
    Setup(String),
    /// The runtime directory that holds the namespaces' locks is unusable or unsafe.
    #[error("--client-net: {0}")]
    RunDir(String),
}
