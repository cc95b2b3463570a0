//! Presentation of runs; every function returns text or values, none prints.
//!
//! - [`table`]: the run table reviews publish (one row per concurrency,
//!   scaling, latency percentiles, errors, AVG and MAX rows).
//! - [`levels`]: the run table's rows by load level: repeated windows as one
//!   row with its interval, `n` and CV; AVG and MAX with intervals.
//! - [`json`]: the JSON document of a run (`docs/json.md`, `docs/run.schema.json`).
//! - [`csv`]: CSV export of steps and of the per-second series.
//! - [`fmt`]: number formatting shared by the above (missing is "-", never 0).
//! - [`compare`]: the comparison table of several runs as text, Markdown or CSV.
//! - [`diagnosis`]: a run's diagnosis (curve, USL, verdicts) as text.
//! - [`micro`]: micro-benchmark tables (lmbench layout, comparison) as text.
//! - [`preflight`]: the preflight checks as text, warning lines, JSON and a summary cell.
//! - [`watch`]: `watch`'s rows, its recorded summary page, CSV and JSON.
//! - [`kinds`]: the target kinds and their options, as docs/targets.md shows them.
//! - [`cli`]: the lines of the command-line's own listings (`runs`, `show`'s
//!   header, `--assert` results, micro progress).
//! - [`live`]: the live view's state and drawing while a sweep runs (ratatui).
//!
//! The report (`scalelab report`, `docs/report.md`):
//! - [`model`]: its input: runs with their diagnosis and per-second [`model::Timeline`], micro tables.
//! - [`svg`]: chart primitives as standalone SVG (line charts with gaps, stacked bars).
//! - [`charts`]: the report's charts built from runs; a chart without data is its reason.
//! - [`summary`]: curve and verdict words shared with `compare`, the configuration side by side.
//! - [`page`]: the comparison and per-step tables both formats show.
//! - [`html`]: the self-contained HTML document; [`markdown`]: the Markdown one.

pub mod agents;
pub mod capacity;
pub mod charts;
pub mod cli;
pub mod columns;
pub mod compare;
pub mod csv;
pub mod diagnosis;
pub mod flame;
pub mod fmt;
pub mod html;
pub mod json;
pub mod kinds;
pub mod levels;
pub mod live;
pub mod markdown;
pub mod micro;
pub mod model;
pub mod page;
pub mod preflight;
pub mod profile;
pub mod summary;
pub mod svg;
pub mod table;
pub mod watch;

pub use model::{ImageLinks, ReportInput, ReportRun, TextTable, Timeline};
