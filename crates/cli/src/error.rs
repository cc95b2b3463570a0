//! Bad input vs failure: bad input exits 2 before any load.

/// An error in what the user gave (flag value, URL, unreachable target,
/// unusable store): exit 2, nothing run, nothing stored.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// Shorthand to build a [`BadInput`] as an `anyhow::Error`.
pub fn bad(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(msg.into()))
}

/// The process exit code for an error.
pub fn exit_code(e: &anyhow::Error) -> u8 {
    if e.downcast_ref::<BadInput>().is_some() || e.downcast_ref::<scalelab_store::StoreError>().is_some() {
        2
    } else {
        1
    }
}
