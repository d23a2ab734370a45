//! The repository holds sources, not the output of a run: `opreg mirror`'s default workspace
//! (`opreg-mirror/`) is ignored and nothing under it is tracked. `.ci/run` also compares
//! `git status --porcelain` before and after the whole suite.

use super::super::layers::root;
use std::process::Command;

fn git(args: &[&str]) -> (bool, String) {
    let out = Command::new("git")
        .args(args)
        .current_dir(root())
        .output()
        .expect("git runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn no_run_output_is_tracked_and_the_default_workspace_is_ignored() {
    if !root().join(".git").exists() {
        return; // a source tarball: nothing is tracked
    }
    let (ok, tracked) = git(&["ls-files", "--", "opreg-mirror"]);
    assert!(ok, "git ls-files failed");
    assert!(
        tracked.is_empty(),
        "run output is tracked (git rm -r --cached opreg-mirror): {tracked}"
    );
    let (ignored, _) = git(&["check-ignore", "-q", "opreg-mirror/mapping.txt"]);
    assert!(ignored, ".gitignore does not ignore /opreg-mirror/");
}

#[test]
fn the_ci_script_checks_the_work_tree_after_the_suite() {
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    let before = ci.find("git status --porcelain").expect("recorded before");
    let test = ci.find("cargo test --release").expect("runs the suite");
    let after = ci.rfind("git status --porcelain").unwrap();
    let last_test = ci.rfind("cargo test --release").unwrap();
    assert!(
        before < test && after > last_test,
        ".ci/run compares git status around the suite"
    );
}
