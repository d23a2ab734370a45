//! `opreg validate`'s `help:` lines on graph errors, with the real binary on the bad catalogs
//! of `tests/bad-catalogs`: each names what to change and the file to change it in (a bundle
//! directory's `metadata/annotations.yaml` for its default channel, a CSV for `replaces` and
//! `skips`), and competing heads come in version order.

use crate::common;

use common::opreg;
use std::path::Path;

/// The `help:` line following the error line with `tag`.
fn help_after(case: &str, tag: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/bad-catalogs")
        .join(case)
        .join("catalog");
    let (code, _, err) = opreg(&["validate", dir.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    let lines: Vec<&str> = err.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.starts_with(&format!("error[{tag}]")))
        .unwrap_or_else(|| panic!("no error[{tag}] in {err}"));
    let help = lines.get(i + 1).copied().unwrap_or("");
    assert!(help.starts_with("  help: "), "{err}");
    help.trim_start().to_string()
}

#[test]
fn default_channel_help_names_the_annotations_or_package_file() {
    let h = help_after("111-bundle-dirs-two-channels-no-default", "default-channel");
    assert!(
        h.starts_with("help: set operators.operatorframework.io.bundle.channel.default.v1 in "),
        "{h}"
    );
    assert!(
        h.ends_with(
            "catalog/p-2.0.0/metadata/annotations.yaml to one of its channels: fast, stable"
        ),
        "{h}"
    );
    let h = help_after(
        "114-package-manifest-two-channels-no-default",
        "default-channel",
    );
    assert!(
        h.ends_with("catalog/p/p.package.yaml to one of its channels: fast, stable"),
        "{h}"
    );
    assert!(h.starts_with("help: set defaultChannel in "), "{h}");
}

#[test]
fn heads_come_in_version_order_and_the_newest_names_its_csv() {
    let h = help_after("112-bundle-dirs-two-heads", "channel-head");
    assert!(h.starts_with("help: heads in version order: p.v1.0.0 (1.0.0), p.v2.0.0 (2.0.0); keep one head: have p.v2.0.0 (in "), "{h}");
    assert!(h.ends_with("catalog/p-2.0.0/manifests/p.v2.0.0.clusterserviceversion.yaml) replace or skip p.v1.0.0"), "{h}");
}

#[test]
fn stranded_and_cycle_help_name_the_bundle_to_edit() {
    let h = help_after("065-stranded-bundle", "stranded");
    assert!(
        h.starts_with("help: add a.v0 to the skips (or replaces) of a.v2 (in "),
        "{h}"
    );
    let h = help_after("115-package-manifest-replaces-cycle", "replaces-cycle");
    assert!(
        h.starts_with("help: remove or change the replaces of p.v1.0.0 (in "),
        "{h}"
    );
    assert!(
        h.ends_with("catalog/p/1.0.0/p.clusterserviceversion.yaml), which points back to p.v2.0.0"),
        "{h}"
    );
}
