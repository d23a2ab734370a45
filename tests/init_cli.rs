//! `opreg init` through the real binary, against the cases of upstream's `TestInit`
//! (alpha/action/init_test.go) and the bytes of upstream's `TestWriteJSON`/`TestWriteYAML`
//! package blob (alpha/declcfg/write_test.go), which is what `opm init` prints for them.

use crate::common;
use common::{fixture, opreg};
use std::fs;

const SVG_BASE64: &str =
    "PHN2ZyB2aWV3Qm94PSIwIDAgMTAwIDEwMCI+PGNpcmNsZSBjeD0iMjUiIGN5PSIyNSIgcj0iMjUiLz48L3N2Zz4=";

fn icon() -> String {
    fixture("authoring/icon.svg").to_str().unwrap().to_string()
}

/// A file holding `text`, kept alive with its directory.
fn file(text: &[u8]) -> (tempfile::TempDir, String) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("f");
    fs::write(&p, text).unwrap();
    let s = p.to_str().unwrap().to_string();
    (d, s)
}

#[test]
fn init_success_empty_package_writes_nothing() {
    // Upstream's Success/Empty: a package without a name. opm's writer skips it.
    let (code, out, err) = opreg(&["init", ""]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "");
}

#[test]
fn init_success_set_package() {
    let (code, out, err) = opreg(&["init", "foo"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "{\n    \"schema\": \"olm.package\",\n    \"name\": \"foo\",\n    \"defaultChannel\": \"\"\n}\n"
    );
}

#[test]
fn init_success_set_default_channel_and_description() {
    let (_d, desc) = file(b"foo");
    let (code, out, err) = opreg(&["init", "p", "--default-channel", "foo", "-d", &desc]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "{\n    \"schema\": \"olm.package\",\n    \"name\": \"p\",\n    \"defaultChannel\": \"foo\",\n    \"description\": \"foo\"\n}\n"
    );
}

#[test]
fn init_success_set_icon() {
    let (code, out, err) = opreg(&["init", "p", "--icon", &icon()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        format!("{{\n    \"schema\": \"olm.package\",\n    \"name\": \"p\",\n    \"defaultChannel\": \"\",\n    \"icon\": {{\n        \"base64data\": \"{SVG_BASE64}\",\n        \"mediatype\": \"image/svg+xml\"\n    }}\n}}\n")
    );
}

#[test]
fn init_success_set_all_is_upstreams_package_blob_in_json_and_yaml() {
    let (_d, desc) = file(b"anakin operator");
    let args = ["init", "anakin", "-c", "dark", "-i", &icon(), "-d", &desc];
    let (code, out, err) = opreg(&args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        format!("{{\n    \"schema\": \"olm.package\",\n    \"name\": \"anakin\",\n    \"defaultChannel\": \"dark\",\n    \"icon\": {{\n        \"base64data\": \"{SVG_BASE64}\",\n        \"mediatype\": \"image/svg+xml\"\n    }},\n    \"description\": \"anakin operator\"\n}}\n")
    );
    let (code, out, err) = opreg(&[&args[..], &["-o", "yaml"]].concat());
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        format!("---\ndefaultChannel: dark\ndescription: anakin operator\nicon:\n  base64data: {SVG_BASE64}\n  mediatype: image/svg+xml\nname: anakin\nschema: olm.package\n")
    );
}

#[test]
fn init_png_icon_is_detected_by_its_bytes() {
    let png = [
        0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D,
    ];
    let (_d, p) = file(&png);
    let (code, out, err) = opreg(&["init", "p", "-i", &p]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("\"base64data\": \"iVBORw0KGgoAAAAN\""),
        "{out}"
    );
    assert!(out.contains("\"mediatype\": \"image/png\""), "{out}");
}

#[test]
fn init_fail_icon_not_image_names_the_file() {
    let (_d, p) = file(b"foo");
    let (code, out, err) = opreg(&["init", "p", "-i", &p]);
    assert_eq!(code, 1);
    assert_eq!(out, "");
    assert!(err.contains(&p) && err.contains("not an image"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn init_fail_empty_icon() {
    let (_d, p) = file(b"");
    let (code, out, err) = opreg(&["init", "p", "-i", &p]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(err.contains("detect icon mediatype"), "{err}");
}

#[test]
fn init_fail_unreadable_icon_and_description() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("missing");
    let m = missing.to_str().unwrap();
    for flag in ["--icon", "--description"] {
        let (code, out, err) = opreg(&["init", "p", flag, m]);
        assert_eq!((code, out.as_str()), (1, ""), "{flag}");
        assert!(err.contains(m), "{flag}: {err}");
    }
}

#[test]
fn init_usage_errors_exit_2() {
    assert_eq!(opreg(&["init"]).0, 2);
    assert_eq!(opreg(&["init", "a", "b"]).0, 2);
    assert_eq!(opreg(&["init", "a", "-o", "xml"]).0, 2);
}
