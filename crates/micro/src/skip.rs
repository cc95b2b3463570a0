//! What a measurement ends in when it has no samples: skipped (with why)
//! or stopped. Shared by the method (`measure`) and the OS wrappers (`sys`).

/// Why a benchmark produced no figure.
#[derive(Debug)]
pub(crate) enum Skip {
    /// `stop` was set: abandon the suite.
    Stopped,
    /// Could not measure here; the reason goes into the result.
    Unavailable(String),
}

impl From<std::io::Error> for Skip {
    fn from(e: std::io::Error) -> Self {
        Skip::Unavailable(e.to_string())
    }
}

/// The suite was stopped; propagated up to `run_suite`.
#[derive(Debug)]
pub(crate) struct Stopped;

/// Samples of one figure, already in its unit, or why there are none.
pub(crate) type Values = Result<Vec<f64>, Skip>;
