//! Every flag a message names ("pass --allow-empty", "trust its CA with --cert-dir DIR") is a
//! flag of each command that can print that message. The messages are found in the source: each
//! string literal outside comments and unit tests that names a `--flag`. The table says which
//! commands print the messages of each file; a file that names flags and is not in the table
//! fails, so a new hint is checked as soon as it is written.

use clap::CommandFactory;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Commands that read image references from registries (every pull goes through the registry
/// client, the image puller and the signature policy).
const PULLERS: &[&str] = &[
    "render",
    "ingest",
    "validate",
    "serve",
    "diff",
    "migrate",
    "upgrade",
    "graph",
    "render-template",
    "image build",
    "mirror",
];

/// Commands that talk to a registry at all: the pullers, and those that only push, sign or
/// verify.
fn registry_commands() -> Vec<&'static str> {
    let others = ["image push", "image sign", "image verify"];
    PULLERS.iter().copied().chain(others).collect()
}

/// Flags named in messages that are not opreg's (another tool's, or a Dockerfile's).
const FOREIGN: &[(&str, &str)] = &[
    // "sign with cosign's --new-bundle-format=false"
    ("src/sign/policy.rs", "new-bundle-format"),
    // `COPY --from=builder` in the Dockerfile `generate dockerfile` writes
    ("src/image/dockerfile.rs", "from"),
];

/// Which commands print the messages of a file (each flag, or `*` for every flag it names), or
/// whose command line a file writes.
fn printed_by() -> Vec<(&'static str, &'static str, Vec<&'static str>)> {
    let all = |c: &[&'static str]| c.to_vec();
    vec![
        ("src/authoring/mod.rs", "*", all(&["render-template"])),
        ("src/cache.rs", "*", all(&["serve"])),
        ("src/serve/cache.rs", "*", all(&["serve"])),
        ("src/serve/mod.rs", "*", all(&["serve"])),
        ("src/serve/reload.rs", "*", all(&["serve"])),
        ("src/metrics/mod.rs", "*", all(&["serve"])),
        ("src/conn/tls.rs", "*", all(&["serve"])),
        ("src/draw/mod.rs", "*", all(&["graph"])),
        ("src/draw/write.rs", "*", all(&["graph"])),
        ("src/graph/resolve/mod.rs", "*", all(&["upgrade", "graph"])),
        ("src/diff/removal.rs", "*", all(&["diff"])),
        ("src/image/pull.rs", "*", all(PULLERS)),
        ("src/imagebuild/base.rs", "*", all(&["image build"])),
        ("src/imagebuild/mod.rs", "*", all(&["image build"])),
        // The built image's command line and the Dockerfile `generate dockerfile` writes run
        // `opm serve` (opreg's serve under opm's name) with these.
        ("src/imagebuild/mod.rs", "cache-dir", all(&["serve"])),
        ("src/image/dockerfile.rs", "cache-dir", all(&["serve"])),
        ("src/image/dockerfile.rs", "cache-only", all(&["serve"])),
        ("src/imagebuild/run.rs", "*", all(&["image build"])),
        ("src/imagecheck/rules.rs", "*", all(&["validate"])),
        ("src/mirror/history.rs", "*", all(&["mirror"])),
        ("src/mirror/run.rs", "*", all(&["mirror"])),
        ("src/mirror/destination.rs", "*", all(&["mirror"])),
        ("src/registry/mod.rs", "*", registry_commands()),
        ("src/registry/trust.rs", "*", registry_commands()),
        ("src/registry/send.rs", "use-http", registry_commands()),
        (
            "src/registry/send.rs",
            "insecure-registry",
            registry_commands(),
        ),
        ("src/registry/send.rs", "cert-dir", registry_commands()),
        (
            "src/registry/send.rs",
            "skip-tls-verify",
            registry_commands(),
        ),
        (
            "src/registry/send.rs",
            "registry-timeout",
            registry_commands(),
        ),
        // The deadline that message reports is set only by `mirror --image-timeout`.
        ("src/registry/send.rs", "image-timeout", all(&["mirror"])),
        ("src/sign/keys.rs", "*", all(&["image generate-key-pair"])),
        (
            "src/sign/passphrase.rs",
            "*",
            all(&[
                "image generate-key-pair",
                "image sign",
                "image build",
                "image push",
                "mirror",
            ]),
        ),
        // The CLI's own files: their command.
        ("src/cli/graph.rs", "*", all(&["graph"])),
        ("src/cli/image.rs", "push", all(&["image build"])),
        (
            "src/cli/image.rs",
            "digest-file",
            all(&["image build", "image push"]),
        ),
        ("src/cli/mirror.rs", "*", all(&["mirror"])),
        ("src/cli/mirror_delete.rs", "*", all(&["mirror delete"])),
        ("src/mirror/delete/execute.rs", "*", all(&["mirror delete"])),
        (
            "src/cli/mod.rs",
            "allow-empty",
            all(&["ingest", "validate", "serve"]),
        ),
        ("src/cli/serve.rs", "*", all(&["serve"])),
        ("src/cli/validate.rs", "*", all(&["validate"])),
        ("src/cli/validate_images.rs", "*", all(&["validate"])),
        ("src/cli/completions.rs", "help", all(&["completions"])),
    ]
}

/// The `--flag`s named in string literals of each file under `src/`, outside comments and
/// unit tests.
fn named_flags(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let flag = regex::Regex::new(r"(?:^|[^\w-])--([a-z][a-z0-9-]+)").unwrap();
    let literal = regex::Regex::new(r#""((?:[^"\\]|\\.)*)""#).unwrap();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![root.join("src")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let name = p.to_string_lossy().to_string();
            if !name.ends_with(".rs") || name.ends_with("_tests.rs") {
                continue;
            }
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().to_string();
            let text = std::fs::read_to_string(&p).unwrap();
            for line in text.lines() {
                let t = line.trim_start();
                if t.starts_with("#[cfg(test)]") {
                    break;
                }
                if t.starts_with("//") || t.starts_with("#[arg") || t.starts_with("#[command") {
                    continue;
                }
                for lit in literal.captures_iter(line) {
                    for f in flag.captures_iter(&lit[1]) {
                        out.entry(rel.clone()).or_default().insert(f[1].to_string());
                    }
                }
            }
        }
    }
    out
}

/// The long flags of each command and subcommand, by its path (`image build`).
fn flags_of_commands() -> BTreeMap<String, BTreeSet<String>> {
    fn walk(c: &clap::Command, path: &str, out: &mut BTreeMap<String, BTreeSet<String>>) {
        let mut flags: BTreeSet<String> = c
            .get_arguments()
            .filter_map(|a| a.get_long().map(str::to_string))
            .collect();
        flags.insert("help".into());
        out.insert(path.to_string(), flags);
        for s in c.get_subcommands() {
            let p = match path {
                "" => s.get_name().to_string(),
                _ => format!("{path} {}", s.get_name()),
            };
            walk(s, &p, out);
        }
    }
    let mut out = BTreeMap::new();
    // Built first: clap fills in a subcommand's arguments only when the command is built.
    let mut cli = opreg::cli::Cli::command();
    cli.build();
    walk(&cli, "", &mut out);
    out
}

#[test]
fn every_flag_a_message_names_is_a_flag_of_the_commands_that_print_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let commands = flags_of_commands();
    let table = printed_by();
    let mut wrong = Vec::new();
    for (file, flags) in named_flags(root) {
        for flag in flags {
            if FOREIGN.contains(&(file.as_str(), flag.as_str())) {
                continue;
            }
            let rows: Vec<_> = table
                .iter()
                .filter(|(f, which, _)| *f == file && (*which == "*" || *which == flag))
                .collect();
            let Some((_, _, printers)) = rows.iter().find(|r| r.1 == flag).or(rows.first()) else {
                wrong.push(format!(
                    "{file} names --{flag}: say in printed_by() which commands print it"
                ));
                continue;
            };
            for cmd in printers {
                let have = commands.get(*cmd).unwrap_or_else(|| {
                    let known: Vec<&String> = commands.keys().collect();
                    panic!("printed_by() names `{cmd}`, not a command: {known:?}")
                });
                if !have.contains(&flag) {
                    wrong.push(format!(
                        "{file} names --{flag}, which `opreg {cmd}` does not have"
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_empty_catalog_hint_is_given_only_where_the_flag_exists() {
    // The library's message names no flag (the scan above checks that); each command with
    // --allow-empty adds it.
    let d = opreg::load::no_packages();
    assert!(!d.message.contains("--"), "{}", d.message);
    assert!(opreg::load::is_no_packages(&d));
}
