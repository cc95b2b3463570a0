//! Analysis of scalelab runs: pure functions from runs loaded in memory to
//! figures, tables and pass/fail results. Nothing here reads the store or
//! prints; the binary loads runs and the `report` crate formats.
//!
//! - [`series`]: [`Series`] and [`Point`], the storage-independent input.
//! - [`curve`]: [`Curve`]: peak, knee, collapse, latency growth of one run.
//! - [`usl`]: [`UslFit`]: Universal Scalability Law fit (λ, σ, κ, R², N*).
//! - [`mod@compare`]: [`Comparison`]: the side-by-side table of several runs
//!   (throughput, scaling, deltas, AVG and MAX rows).
//! - [`micro`]: micro-benchmark runs: published lmbench/flops tables, and the
//!   comparison of runs against a baseline run.
//! - [`import`]: published series in the import CSV format to [`Series`].
//! - [`mod@assert`]: the CI assertion language (`peak >= 5000`, `no collapse`, ...).
//! - [`preflight`]: the preflight checks judged from the facts `probe` read.
//! - [`pct`]: percentage rounding shared by the tables.
//! - [`profile`]: a step's stacks read: hottest frames and functions, lock call sites, what grew.
//! - [`stats`]: every interval: batch means and batch quantiles of a window,
//!   repeats, paired and independent A/B deltas, and their judgement.
//!
//! - [`telemetry`]: a run's raw samples derived: rates, step-window summaries
//!   (system, server process, threads, database, specimen).
//! - [`verdict`]: bottleneck [`Verdict`]s from the steps' telemetry, and the
//!   whole [`Diagnosis`] of a run (curve, USL, verdicts) and its JSON.
//!
//! Text for people (tables, the diagnosis, micro tables) is drawn by the
//! `report` crate from these values.

pub mod assert;
pub mod capacity;
pub mod compare;
pub mod curve;
pub mod import;
pub mod micro;
pub mod pct;
pub mod preflight;
pub mod profile;
pub mod series;
pub mod stats;
pub mod telemetry;
pub mod trigger;
pub mod usl;
pub mod verdict;

pub use assert::{Assertion, Outcome};
pub use compare::{compare, CompareError, CompareOptions, Comparison};
pub use curve::{Collapse, Curve, Superlinear};
pub use import::{import_unit, parse_import_csv, ImportError};
pub use series::{Point, Series, SeriesError};
pub use usl::{UslError, UslFit};
pub use verdict::{diagnose, Confidence, Diagnosis, Evidence, Verdict, VerdictKind};
