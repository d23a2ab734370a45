//! `opreg render -o yaml` gives back, byte for byte, the catalogs Red Hat's pipeline rendered
//! with `opm render -o yaml` (the shared corpus's `rendered/` tree; its one hand-written file
//! is left out).

mod common;

use common::{opreg, shared};

#[test]
fn opm_rendered_catalogs_render_back_byte_for_byte() {
    let files = corpus_files(false);
    assert_eq!(files.len(), 76);
    let mut differ = Vec::new();
    for f in &files {
        let want = std::fs::read_to_string(f).unwrap();
        let (code, got, err) = opreg(&["render", f.to_str().unwrap(), "-o", "yaml"]);
        assert_eq!(code, 0, "{}: {err}", f.display());
        if let Some(d) = first_difference(&want, &got) {
            differ.push(format!("{}: {d}", f.display()));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of 76 differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
}

/// Every corpus package (the hand-written one too), against what opm writes for `-o json` as
/// built by an independent script (`tests/render_support/opm_json.py`: PyYAML and Python's
/// json module, with opm's struct field orders), not by opreg's writer.
#[test]
fn render_json_is_what_opm_writes() {
    let files = corpus_files(true);
    assert_eq!(files.len(), 77);
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/render_support/opm_json.py");
    let mut differ = Vec::new();
    for f in &files {
        let py = std::process::Command::new("python3")
            .arg(&script)
            .arg(f)
            .output()
            .expect("python3");
        assert!(
            py.status.success(),
            "{}",
            String::from_utf8_lossy(&py.stderr)
        );
        let want = String::from_utf8(py.stdout).unwrap();
        let (code, got, err) = opreg(&["render", f.to_str().unwrap(), "-o", "json"]);
        assert_eq!(code, 0, "{}: {err}", f.display());
        if let Some(d) = first_difference(&want, &got) {
            differ.push(format!("{}: {d}", f.display()));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of 77 differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
}

fn corpus_files(with_hand_written: bool) -> Vec<std::path::PathBuf> {
    let root = shared("corpus/rendered");
    let mut files = Vec::new();
    for repo in std::fs::read_dir(&root).unwrap() {
        for pkg in std::fs::read_dir(repo.unwrap().path()).unwrap() {
            let p = pkg.unwrap().path();
            // Written by hand, not by opm (see the corpus README).
            if !with_hand_written && p.ends_with("certified-operators-v4.22/linstor-operator") {
                continue;
            }
            files.push(p.join("catalog.yaml"));
        }
    }
    files.sort();
    files
}

fn first_difference(want: &str, got: &str) -> Option<String> {
    if want == got {
        return None;
    }
    let line = want
        .lines()
        .zip(got.lines())
        .position(|(w, g)| w != g)
        .unwrap_or_else(|| want.lines().count().min(got.lines().count()));
    Some(format!(
        "line {}:\n  opm:   {:?}\n  opreg: {:?}",
        line + 1,
        want.lines().nth(line),
        got.lines().nth(line)
    ))
}
