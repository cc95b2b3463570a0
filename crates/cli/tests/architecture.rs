//! The layout docs/architecture.md describes, kept true: which crate may
//! depend on which, no import circle between the files of a crate, and no
//! source file over the size a reader can hold (tests excepted).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn crates() -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(workspace().join("crates"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.join("Cargo.toml").exists())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    out.sort();
    out
}

/// The workspace crates a crate's `[dependencies]` name (dev-dependencies
/// are for tests and may reach further).
fn scalelab_deps(manifest: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(manifest).unwrap();
    let mut section = String::new();
    let mut deps = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line.to_string();
            continue;
        }
        if section == "[dependencies]" {
            if let Some(name) = line.split(['=', '.', ' ']).next().and_then(|n| n.strip_prefix("scalelab-")) {
                deps.insert(name.to_string());
            }
        }
    }
    deps
}

/// Which crates each crate may use: the arrows of docs/architecture.md.
/// Data flows down; nothing below may reach up (probe never into drive, no
/// library into cli or report).
const ALLOWED: &[(&str, &[&str])] = &[
    ("core", &[]),
    ("wire", &["core"]),
    ("specimen", &["core"]),
    ("store", &["core"]),
    ("probe", &["core", "wire"]),
    ("drive", &["core", "wire"]),
    ("micro", &["core"]),
    ("analyze", &["core", "micro"]),
    ("report", &["core", "analyze", "micro"]),
    ("testkit", &["core"]),
    ("netem", &[]),
    ("metrics", &[]),
    ("agent", &["core", "wire", "drive", "probe"]),
    ("cli", &["core", "wire", "specimen", "store", "probe", "drive", "micro", "analyze", "report", "netem", "metrics", "agent"]),
];

#[test]
fn crates_depend_only_along_the_documented_arrows() {
    let mut wrong = Vec::new();
    for (name, dir) in crates() {
        let allowed = ALLOWED
            .iter()
            .find(|(c, _)| *c == name)
            .unwrap_or_else(|| panic!("crate {name} is not in docs/architecture.md's table (add it there and here)"))
            .1;
        for dep in scalelab_deps(&dir.join("Cargo.toml")) {
            if !allowed.contains(&dep.as_str()) {
                wrong.push(format!("{name} -> {dep}"));
            }
        }
    }
    assert!(wrong.is_empty(), "dependencies docs/architecture.md does not allow: {wrong:?}");
}

/// Every crate takes the workspace lints, so every `unsafe` block, now or
/// later, carries its `// SAFETY:` comment (clippy -D warnings enforces it).
#[test]
fn every_crate_takes_the_workspace_lints() {
    let missing: Vec<String> = crates()
        .into_iter()
        .filter(|(_, dir)| {
            let text = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
            !text.lines().collect::<Vec<_>>().windows(2).any(|w| w[0].trim() == "[lints]" && w[1].replace(' ', "") == "workspace=true")
        })
        .map(|(name, _)| name)
        .collect();
    assert!(missing.is_empty(), "crates without `[lints] workspace = true`: {missing:?}");
}

/// The module path of a source file: `a/b.rs` and `a/b/mod.rs` are `a::b`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap();
    match last.as_str() {
        "lib.rs" | "main.rs" | "mod.rs" => {}
        other => parts.push(other.trim_end_matches(".rs").to_string()),
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()) {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The code of a file without its comments and its `#[cfg(test)]` tail.
fn code(text: &str) -> String {
    let body = text.split("#[cfg(test)]").next().unwrap_or("");
    body.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// Every path the code names from `crate::`, `super::` or `self::`,
/// resolved to a module path (the identifiers after the prefix).
fn referenced_paths(code: &str, here: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for prefix in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(pos) = code[from..].find(prefix) {
            let at = from + pos;
            from = at + prefix.len();
            if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
                continue;
            }
            // The module the prefix names.
            let mut base: Vec<String> = match prefix {
                "crate::" => vec![],
                "self::" => here.to_vec(),
                _ => {
                    // `super` of a file's module is its parent (for `a/b.rs` and
                    // `a/b/mod.rs` alike); chained `super::super::` walks up.
                    let mut b = here.to_vec();
                    b.pop();
                    b
                }
            };
            let mut rest = &code[from..];
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
            }
            for seg in rest.split("::") {
                let ident: String = seg.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if ident.is_empty() || ident.len() != seg.len() {
                    // The last segment (an item, or `{...}` of several).
                    if !ident.is_empty() {
                        base.push(ident);
                    }
                    break;
                }
                base.push(ident);
            }
            out.push(base);
        }
    }
    out
}

#[test]
fn no_import_circle_between_the_files_of_a_crate() {
    let mut circles = Vec::new();
    for (name, dir) in crates() {
        let src = dir.join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let modules: BTreeMap<Vec<String>, PathBuf> = files.iter().map(|f| (module_of(&src, f), f.clone())).collect();
        let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
        for f in &files {
            let here = module_of(&src, f);
            let text = std::fs::read_to_string(f).unwrap();
            for path in referenced_paths(&code(&text), &here) {
                // The deepest module file the path lands in.
                let target = (0..=path.len()).rev().map(|n| path[..n].to_vec()).find(|p| modules.contains_key(p));
                let Some(target) = target else { continue };
                // A module using its own submodules (declaring and re-exporting
                // them) is how Rust nests code, not a circle.
                if target.starts_with(&here) {
                    continue;
                }
                edges.entry(here.clone()).or_default().insert(target);
            }
        }
        // Depth-first search for a back edge.
        fn visit(
            m: &Vec<String>,
            edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
            stack: &mut Vec<Vec<String>>,
            done: &mut BTreeSet<Vec<String>>,
            found: &mut Vec<String>,
        ) {
            if let Some(i) = stack.iter().position(|s| s == m) {
                let names: Vec<String> =
                    stack[i..].iter().chain([m]).map(|p| if p.is_empty() { "lib".into() } else { p.join("::") }).collect();
                found.push(names.join(" -> "));
                return;
            }
            if !done.insert(m.clone()) {
                return;
            }
            stack.push(m.clone());
            for n in edges.get(m).into_iter().flatten() {
                visit(n, edges, stack, done, found);
            }
            stack.pop();
        }
        let mut done = BTreeSet::new();
        let mut found = Vec::new();
        for m in modules.keys() {
            visit(m, &edges, &mut Vec::new(), &mut done, &mut found);
        }
        circles.extend(found.into_iter().map(|c| format!("{name}: {c}")));
    }
    assert!(circles.is_empty(), "import circles (move what both need into a third module):\n{}", circles.join("\n"));
}

/// Lines of a file that are code: not blank, not comments, before its tests.
fn logic_lines(text: &str) -> usize {
    code(text).lines().filter(|l| !l.trim().is_empty()).count()
}

#[test]
fn no_source_file_holds_more_than_500_lines_of_logic() {
    let mut big = Vec::new();
    for (_, dir) in crates() {
        let mut files = Vec::new();
        rust_files(&dir.join("src"), &mut files);
        // Test modules of their own (`tests.rs`) are tests.
        for f in files.into_iter().filter(|f| !f.ends_with("tests.rs")) {
            let n = logic_lines(&std::fs::read_to_string(&f).unwrap());
            if n > 500 {
                big.push(format!("{} ({n} lines)", f.strip_prefix(workspace()).unwrap().display()));
            }
        }
    }
    assert!(big.is_empty(), "files to split by concern: {big:?}");
}

/// Only the binary prints: the crates below it return what they have to
/// say (a result, an error, a line to a log callback), so a library user
/// decides where output goes and the binary escapes it on the way out.
#[test]
fn nothing_below_the_binary_prints() {
    let mut offenders = Vec::new();
    for (name, dir) in crates() {
        // The binary prints; the test kit reports on its servers to tests.
        if name == "cli" || name == "testkit" {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&dir.join("src"), &mut files);
        for f in files {
            if f.file_name().is_some_and(|n| n == "tests.rs" || n.to_string_lossy().ends_with("_tests.rs")) {
                continue;
            }
            let text = std::fs::read_to_string(&f).unwrap();
            for (i, line) in code(&text).lines().enumerate() {
                if ["println!(", "eprintln!(", "print!(", "eprint!(", "dbg!("].iter().any(|m| line.contains(m)) {
                    offenders.push(format!("{}:{}: {}", f.strip_prefix(workspace()).unwrap().display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(offenders.is_empty(), "printing below the binary (return it, or take a log callback):\n{}", offenders.join("\n"));
}
