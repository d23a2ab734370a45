//! `opreg completions bash|zsh|fish` and `opreg man`, with the real binary: the scripts name
//! every subcommand, bash accepts its script, and the man page is roff naming the commands.

mod common;

use common::opreg;

const SUBCOMMANDS: [&str; 8] = [
    "ingest", "validate", "render", "serve", "upgrade", "graph", "list", "diff",
];

#[test]
fn completion_scripts_name_every_subcommand() {
    for shell in ["bash", "zsh", "fish"] {
        let (code, out, err) = opreg(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        for s in SUBCOMMANDS {
            assert!(out.contains(s), "{shell} completion lacks {s}");
        }
    }
    // bash parses its script, and the script defines the completion function.
    let (_, script, _) = opreg(&["completions", "bash"]);
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("opreg.bash");
    std::fs::write(&f, &script).unwrap();
    let st = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("source {} && complete -p opreg", f.display()))
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    assert!(String::from_utf8_lossy(&st.stdout).contains("opreg"));
    let (code, _, _) = opreg(&["completions", "tcsh"]);
    assert_eq!(code, 2);
}

#[test]
fn man_page_is_roff_listing_the_commands() {
    let (code, out, err) = opreg(&["man"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(".TH opreg 1"),
        "{}",
        &out[..200.min(out.len())]
    );
    for s in SUBCOMMANDS {
        assert!(out.contains(&format!("opreg\\-{s}")), "man page lacks {s}");
    }
}
