//! `opreg completions bash|zsh|fish` and `opreg man`, with the real binary: the scripts name
//! every subcommand and its flags, bash accepts its script, and the man page is roff naming the
//! commands. And `--help`: subcommands are built only when used (clap's `defer`), so the list
//! and each subcommand's own help must still carry its description.

use crate::common;

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
        // Flags of subcommands, whose arguments clap adds only when it builds them.
        for flag in [
            "cache-dir",
            "semantics",
            "warnings-as-errors",
            "registry-timeout",
        ] {
            assert!(out.contains(flag), "{shell} completion lacks --{flag}");
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

#[test]
fn help_lists_every_subcommand_with_the_description_its_own_help_opens_with() {
    let (code, top, err) = opreg(&["--help"]);
    assert_eq!(code, 0, "{err}");
    let listed: Vec<(String, String)> = top
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| {
            let (name, about) = l.trim().split_once(' ')?;
            Some((name.to_string(), about.trim().to_string()))
        })
        .filter(|(name, _)| name != "help")
        .collect();
    assert!(listed.len() >= 12, "{top}");
    for s in SUBCOMMANDS {
        assert!(
            listed.iter().any(|(n, _)| n == s),
            "--help lacks {s}: {top}"
        );
    }
    for (name, about) in &listed {
        assert!(!about.is_empty(), "{name} has no description in --help");
        let (code, own, err) = opreg(&[name, "--help"]);
        assert_eq!(code, 0, "{name}: {err}");
        let first = own.lines().next().unwrap_or_default();
        assert_eq!(
            first.trim_end_matches('.'),
            about.trim_end_matches('.'),
            "{name} --help opens with another description"
        );
    }
}
