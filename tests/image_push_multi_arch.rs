//! `opreg image build --push` over a pushed multi-arch base gives a pushed multi-arch catalog,
//! against Debian's `docker-registry` on loopback. Helpers are tests/image_push.rs's.

use super::image_push::{base_with, catalog, skopeo};
use crate::registry_support;
use registry_support::ctx::Ctx;
use registry_support::{sha, Registry};
use serde_json::Value;

#[test]
fn a_pushed_multi_arch_base_gives_a_pushed_multi_arch_catalog() {
    // The base is an index the test pushes, one image per platform (no foreign binary needed
    // to check the structure); skopeo reads back what opreg pushed.
    let reg = Registry::http();
    let ctx = Ctx::new();
    let cat = catalog(&ctx);
    let (amd, arm) = (
        base_with(b"amd64 opm"),
        base_with(b"arm64 opm").arch("arm64"),
    );
    reg.push_index(
        "multi",
        "v1",
        &[("linux", "amd64", &amd), ("linux", "arm64", &arm)],
    );
    let host = reg.host();
    let base_ref = format!("{host}/multi:v1");
    let build = |tag: &str, extra: &[&str]| {
        let target = format!("{host}/catalogs/multi:{tag}");
        let mut args = vec![
            "image",
            "build",
            cat.to_str().unwrap(),
            "--base",
            &base_ref,
            "-t",
            &target,
            "--push",
            "--use-http",
        ];
        args.extend_from_slice(extra);
        let (code, out, err) = ctx.run(&args);
        (
            format!("docker://{target}"),
            code,
            out.trim().to_string(),
            err,
        )
    };
    // skopeo picks the platform of an index; a single image is read whatever it is.
    let inspect = |docker: &str, arch: &str| -> Value {
        let args = [
            "inspect",
            "--tls-verify=false",
            "--override-os",
            "linux",
            "--override-arch",
            arch,
            docker,
        ];
        let (code, info, e) = skopeo(&args);
        assert_eq!(code, 0, "{e}");
        serde_json::from_str(&info).unwrap()
    };

    let (docker, code, digest, err) = build("all", &[]);
    assert_eq!(code, 0, "{err}");
    let (code, raw, e) = skopeo(&["inspect", "--tls-verify=false", "--raw", &docker]);
    assert_eq!(code, 0, "{e}");
    assert_eq!(
        sha(raw.as_bytes()),
        digest,
        "the tag names the printed digest"
    );
    let idx: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(idx["mediaType"], registry_support::OCI_INDEX, "{raw}");
    let mut archs: Vec<&str> = idx["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["platform"]["architecture"].as_str().unwrap())
        .collect();
    archs.sort_unstable();
    assert_eq!(archs, ["amd64", "arm64"]);
    let a = inspect(&docker, "amd64");
    let b = inspect(&docker, "arm64");
    let (la, lb) = (
        a["Layers"].as_array().unwrap(),
        b["Layers"].as_array().unwrap(),
    );
    assert_eq!(
        (la.len(), lb.len()),
        (3, 3),
        "the base's layer and two of the catalog"
    );
    assert_ne!(la[0], lb[0], "each platform keeps its own base layer");
    assert_eq!(
        la[1..],
        lb[1..],
        "the same catalog layers on every platform"
    );
    assert_eq!(a["Architecture"], "amd64");
    assert_eq!(b["Architecture"], "arm64");
    for i in [&a, &b] {
        assert_eq!(
            i["Labels"]["operators.operatorframework.io.index.configs.v1"],
            "/configs"
        );
    }

    // --platform narrows it to the platforms named.
    let (docker, code, _, err) = build("arm", &["--platform", "linux/arm64"]);
    assert_eq!(code, 0, "{err}");
    let (code, raw, e) = skopeo(&["inspect", "--tls-verify=false", "--raw", &docker]);
    assert_eq!(code, 0, "{e}");
    let top: Value = serde_json::from_str(&raw).unwrap();
    if top["mediaType"] == registry_support::OCI_INDEX {
        let ms = top["manifests"].as_array().unwrap();
        assert_eq!(ms.len(), 1, "{raw}");
        assert_eq!(ms[0]["platform"]["architecture"], "arm64");
    }
    let only = inspect(&docker, "arm64");
    assert_eq!(only["Architecture"], "arm64", "{only}");
    assert_eq!(only["Layers"].as_array().unwrap()[1..], lb[1..]);

    // A platform the base lacks: one line naming the base, nothing pushed.
    let (docker, code, _, err) = build("s390x", &["--platform", "linux/s390x"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no image for platform linux/s390x"), "{err}");
    let (code, _, _) = skopeo(&["inspect", "--tls-verify=false", "--raw", &docker]);
    assert_ne!(code, 0, "nothing tagged");
}
