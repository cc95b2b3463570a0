//! Micro-benchmark runs side by side: published lmbench/flops tables read
//! into [`LabelledRun`](scalelab_micro::LabelledRun)s ([`published`]) and the
//! comparison of runs against a baseline run ([`compare`]). The runs come
//! from `scalelab_micro` (the suite and its result model); the tables' text
//! is drawn by `scalelab_report::micro`.

pub mod compare;
pub mod published;

pub use compare::{compare, compare_with, delta_pct, CompareCell, CompareRow, Comparison};
pub use published::{load_published_dir, parse_published_csv};

/// What can be wrong in the inputs of a micro comparison: a published table
/// (named by file and line) or the baseline asked for.
#[derive(Debug, thiserror::Error)]
pub enum MicroInputError {
    #[error("{path}:{line}: {message}")]
    Published { path: String, line: usize, message: String },
    #[error("reading {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("baseline `{given}` is not among the runs compared (have: {have})")]
    UnknownBaseline { given: String, have: String },
    #[error("baseline `{given}`: more than one run is labelled `{given}` (have: {have}); name it by run id")]
    AmbiguousBaseline { given: String, have: String },
}
