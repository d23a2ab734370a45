//! Every integration test, in one test binary. Each file of `tests/` is a module here; the
//! helpers every file shares (`common`, `registry_support`, `legacy_support`) are compiled once.
//! As separate binaries, each file compiled and linked the whole client stack again (tonic,
//! hyper, reqwest): most of the suite's build time. `cargo test --release NAME::` runs one
//! file's tests; a file left out of the list below fails `every_test_file_is_listed`.

#![allow(deprecated)] // GetBundleForChannel is deprecated in the proto, and still used by OLM.

mod common;
mod legacy_support;
mod mirror_support;
mod registry_support;

mod bad_catalogs;
mod call_log;
mod catalogd_blobs;
mod catalogd_headers;
mod catalogd_http;
mod catalogd_reloads;
mod catalogd_sendfile;
mod cli_advice;
mod cli_messages;
mod cli_paths_and_signals;
mod cli_usage;
mod closed_pipes;
mod code_layout;
mod completions_cli;
mod conformance;
mod corpus;
mod crash;
mod csv_golden;
mod default_provider;
mod deploy;
mod diff_cli;
mod diff_removal;
mod direct_answers;
mod exit_codes;
mod files_on_disk;
mod first_run;
mod fuzz_regressions;
mod graceful_shutdown;
mod graph_cli;
mod graph_large_packages;
mod graphql;
mod grpcurl;
mod gzip_threshold;
mod health;
mod hostile_requests;
mod idle_trim;
mod image_build;
mod image_build_cli;
mod image_checks;
mod image_checks_runs;
mod image_copy;
mod image_pulls;
mod image_push;
mod image_push_multi_arch;
mod image_sources;
mod image_sources_access;
mod ingest;
mod init_cli;
mod interrupts;
mod layers;
mod legacy;
mod list_cli;
mod load;
mod migrate_cli;
mod mirror;
mod mirror_archives;
mod mirror_disk;
mod mirror_runs;
mod registry_client;
mod registry_retry;
mod render_fidelity;
mod render_template_cli;
mod scripts;
mod serve;
mod serve_binary;
mod serve_poll;
mod serve_scale;
mod serve_tls;
mod served_objects;
mod signing;
mod signing_build_push;
mod signing_keys;
mod slow_clients;
mod store_safety;
mod stress;
mod swap;
mod template_kinds_cli;
mod template_semver;
mod template_semver_channels;
mod test_deps;
mod tidy;
mod upgrade;
mod upgrade_examples;
mod upgrade_lints;
mod upgrade_props;
mod validate_help;
mod yaml11;

/// A file of `tests/` that is not a module here would never run.
#[test]
fn every_test_file_is_listed() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let me = std::fs::read_to_string(dir.join("all.rs")).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        if let Some(stem) = name.strip_suffix(".rs") {
            if stem != "all" {
                assert!(
                    me.lines().any(|l| l == format!("mod {stem};")),
                    "tests/{name} is not listed in tests/all.rs"
                );
            }
        }
    }
}
