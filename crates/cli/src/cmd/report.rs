//! `scalelab report RUN... [-o FILE] [--format html|md] [--svg DIR] [--png DIR]`: loads
//! the runs (telemetry attached, per-second system figures from the stored
//! samples), renders the report with `scalelab_report`, and writes it
//! atomically (a temp file renamed into place: never half a report).

use crate::args::{ReportArgs, ReportFormat};
use crate::error::bad;
use scalelab_core::RunKind;
use scalelab_report::model::{ImageLinks, ReportInput, ReportRun, Timeline};
use scalelab_store::RunSelector;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Runs `scalelab report`: bad input (unknown run, no store, a watch run, an
/// unwritable output) exits 2 with one line and writes no report.
pub fn run(store_path: &Path, a: &ReportArgs) -> anyhow::Result<ExitCode> {
    let out = a.output.clone().unwrap_or_else(|| PathBuf::from(if a.format == ReportFormat::Md { "report.md" } else { "report.html" }));
    refuse_link(&out)?;
    // The image folders too, before anything is written: create_dir_all
    // and the files in it went through a planted link.
    for dir in [&a.svg, &a.png].into_iter().flatten() {
        refuse_link(dir)?;
    }
    if out.is_dir() {
        return Err(bad(format!("-o {}: is a directory; give a file name", out.display())));
    }
    let store = super::show::open_existing(store_path)?;
    let mut input = ReportInput::default();
    let mut micro = Vec::new();
    for name in &a.runs {
        let id = store.resolve(&RunSelector::parse(name))?;
        if let Some(m) = super::micro::load_labelled(&store, id)? {
            input.micro_runs.push((id, m.label.clone()));
            micro.push(m);
            continue;
        }
        let run = super::show::load_run(&store, id)?;
        // A watch recording has no steps: its report is its timeline (CPU
        // split, context switches, power), with no curve and no verdicts.
        if run.kind == RunKind::Watch {
            let origin = run.samples.system.first().map_or(run.started_unix_ms, |s| s.at.unix_ms);
            let mut t = Timeline { origin_unix_ms: origin, ..Default::default() };
            t.add_system_series(&run);
            let mut r = ReportRun::new(run);
            r.timeline = Some(t);
            input.runs.push(r);
            continue;
        }
        if run.steps.is_empty() {
            return Err(bad(format!("run {id} ({}) has no finished step to report", run.plan.label)));
        }
        let mut r = ReportRun::new(run);
        if let Some(t) = r.timeline.as_mut() {
            t.add_system_series(&r.run);
        }
        input.runs.push(r);
    }
    input.dedup_names();
    if !micro.is_empty() {
        input.micro = scalelab_report::micro::summary_tables(&micro);
    }
    let base = out.parent().unwrap_or(Path::new(""));
    if let Some(dir) = &a.svg {
        input.images = Some(ImageLinks { dir: relative_to(dir, base), ext: "svg" });
        write_images(dir, &input, Image::Svg)?;
    }
    if let Some(dir) = &a.png {
        input.images = Some(ImageLinks { dir: relative_to(dir, base), ext: "png" });
        write_images(dir, &input, Image::Png)?;
    }
    let text = match a.format {
        ReportFormat::Html => scalelab_report::html::render(&input),
        ReportFormat::Md => scalelab_report::markdown::render(&input),
    };
    let replaced = out.exists();
    write_atomically(&out, text.as_bytes())?;
    let note = if replaced { ", replaced the previous file" } else { "" };
    sayln!("report written to {} ({} KiB{note})", out.display(), text.len().div_ceil(1024));
    Ok(ExitCode::SUCCESS)
}

/// `dir` as the Markdown should link it from a file in `base`.
fn relative_to(dir: &Path, base: &Path) -> String {
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let (d, b) = (abs(dir), abs(if base.as_os_str().is_empty() { Path::new(".") } else { base }));
    match d.strip_prefix(&b) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        Ok(_) => ".".into(),
        Err(_) => d.display().to_string(),
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Image {
    Svg,
    Png,
}

/// Writes every drawn chart into `dir` as `ID.svg` or `ID.png`.
fn write_images(dir: &Path, input: &ReportInput, kind: Image) -> anyhow::Result<()> {
    let flag = if kind == Image::Svg { "--svg" } else { "--png" };
    refuse_link(dir)?;
    std::fs::create_dir_all(dir).map_err(|e| bad(format!("{flag} {}: {e}", dir.display())))?;
    let mut raster = (kind == Image::Png).then(Rasterizer::new);
    for c in scalelab_report::charts::all(&input.runs) {
        let Ok(svg) = &c.svg else { continue };
        match raster.as_mut() {
            None => {
                let doc = format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{svg}\n");
                write_atomically(&dir.join(format!("{}.svg", c.id)), doc.as_bytes())?;
            }
            Some(r) => {
                let png = r.png(svg).map_err(|e| anyhow::anyhow!("chart {}: {e}", c.id))?;
                write_atomically(&dir.join(format!("{}.png", c.id)), &png)?;
            }
        }
    }
    Ok(())
}

/// SVG to PNG with resvg, at twice the SVG's size (sharp on slides).
struct Rasterizer {
    options: resvg::usvg::Options<'static>,
}

impl Rasterizer {
    fn new() -> Self {
        let mut options = resvg::usvg::Options::default();
        let db = options.fontdb_mut();
        db.load_system_fonts();
        // The charts ask for Helvetica, Arial, sans-serif; map the generic
        // family to a face this machine has, or text would be dropped.
        let families: Vec<String> = db.faces().flat_map(|f| f.families.iter().map(|(n, _)| n.clone())).collect();
        let pick = ["Helvetica", "Arial", "Liberation Sans", "DejaVu Sans", "Noto Sans"]
            .iter()
            .map(|s| s.to_string())
            .find(|want| families.contains(want))
            .or_else(|| families.first().cloned());
        if let Some(f) = pick {
            db.set_sans_serif_family(f);
        }
        Rasterizer { options }
    }

    fn png(&mut self, svg: &str) -> Result<Vec<u8>, String> {
        let tree = resvg::usvg::Tree::from_str(svg, &self.options).map_err(|e| e.to_string())?;
        let size = tree.size().to_int_size();
        let scale = 2.0;
        let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width() * 2, size.height() * 2).ok_or("chart has no size")?;
        resvg::render(&tree, resvg::tiny_skia::Transform::from_scale(scale, scale), &mut pixmap.as_mut());
        pixmap.encode_png().map_err(|e| e.to_string())
    }
}

/// Writes `bytes` to a temporary file beside `path`, then renames it into
/// place, so a failure leaves the old file (or none), never a partial one.
/// The temporary file has an unpredictable name and is created `O_EXCL`
/// (`tempfile`), so nothing planted beside the output is followed. A
/// symbolic link at `path` is refused (docs/report.md): scalelab often runs
/// as root, and writing through a link someone else placed would overwrite
/// whatever it points to; renaming over it would silently drop a link the
/// user made on purpose.
fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    refuse_link(path)?;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| bad(format!("{}: not a file name", path.display())))?;
    let result = (|| -> std::io::Result<()> {
        // 0666 less the umask, as File::create would give the report.
        let mut f = tempfile::Builder::new()
            .prefix(&format!(".{}.", name.to_string_lossy()))
            .suffix(".tmp")
            .permissions(std::fs::Permissions::from_mode(0o666))
            .tempfile_in(dir)?;
        f.write_all(bytes)?;
        f.as_file().sync_all()?;
        // rename(2) replaces the name itself, never what a link there points to.
        f.persist(path).map_err(|e| e.error)?;
        Ok(())
    })();
    result.map_err(|e| bad(format!("cannot write {}: {e}", path.display())))
}

/// Bad input when `path` is a symbolic link (checked before anything is
/// written, and again at each file).
fn refuse_link(path: &Path) -> anyhow::Result<()> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(bad(format!(
            "{} is a symbolic link: scalelab does not write through links; remove it or give the real path",
            path.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_links_are_relative_to_the_report() {
        let tmp = std::env::temp_dir();
        assert_eq!(relative_to(&tmp.join("out/charts"), &tmp.join("out")), "charts");
        assert_eq!(relative_to(Path::new("charts"), Path::new("")), "charts");
        assert_eq!(relative_to(Path::new("."), Path::new("")), ".");
        // Outside the report's folder: the absolute path.
        assert_eq!(relative_to(Path::new("/elsewhere/c"), &tmp.join("out")), "/elsewhere/c");
    }

    #[test]
    fn atomic_write_replaces_whole_or_leaves_nothing() {
        let dir = std::env::temp_dir().join(format!("scalelab-report-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("r.html");
        write_atomically(&f, b"one").unwrap();
        write_atomically(&f, b"two").unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"two");
        assert!(write_atomically(&dir.join("missing/r.html"), b"x").is_err());
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from("r.html")], "no temp file left");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
