//! Deleting, then distribution's garbage collection (no `--delete-untagged`) and a restart,
//! as docs/mirror.md says: the storage shrinks, every remaining image (the multi-arch one
//! included) still pulls whole by its digest, and mirroring a deleted image again uploads its
//! blobs (the workspace's records forgot it).

use super::delete::{delete, delete_config, mirror_all, operator};
use super::{at, raw};
use crate::mirror_support::Source;
use crate::registry_support::ctx::Ctx;
use crate::registry_support::{sha, Registry};
use std::process::Command;

/// Whether `skopeo copy --all` pulls `reference` whole (every platform, every blob).
fn pulls_whole(ctx: &Ctx, reference: &str, n: usize) -> bool {
    let dir = ctx.path(&format!("pulled-{n}"));
    Command::new("skopeo")
        .args(["copy", "--all", "--src-tls-verify=false"])
        .arg(format!("docker://{reference}"))
        .arg(format!("oci:{}:x", dir.display()))
        .output()
        .unwrap()
        .status
        .success()
}

#[test]
fn garbage_collection_after_a_delete_shrinks_the_storage_and_keeps_the_rest_whole() {
    let src = Source::start();
    let mut dst = Registry::http();
    let dest = format!("{}/m", dst.host());
    let ctx = Ctx::new();
    let ws = mirror_all(&ctx, &src, &dest);
    let target = format!("docker://{dest}");
    let h = &src.host;
    let ubi = at(&src, &dest, &format!("{h}/tools/ubi:9"));
    let del = delete_config(
        &ctx,
        &format!("  additionalImages:\n  - name: {h}/tools/ubi:9\n"),
    );
    let ws_arg = ws.to_str().unwrap();
    let (code, _, err) = delete(
        &ctx,
        &[
            "--generate",
            "--config",
            del.to_str().unwrap(),
            "--workspace",
            ws_arg,
            &target,
        ],
    );
    assert_eq!(code, 0, "{err}");
    let list = ws.join("delete/delete-images.yaml");
    let (code, _, err) = ctx.run(&[
        "mirror",
        "delete",
        "--use-http",
        "--delete-yaml-file",
        list.to_str().unwrap(),
        &target,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(raw(&ubi).is_none());

    let before = dst.storage_bytes();
    dst.collect_garbage();
    let after = dst.storage_bytes();
    assert!(after < before, "the storage shrinks: {before} -> {after}");
    // Every remaining image pulls whole by its digest, the multi-arch operator included.
    let op = operator(&src);
    let remaining = [
        at(&src, &dest, &op),
        at(&src, &dest, &src.expected(false)[0]),
        format!(
            "{dest}/dep/dep-bundle@{}",
            src.images[&format!("{h}/dep/dep-bundle:v1.1.0")]
        ),
        format!(
            "{dest}/catalogs/operators@{}",
            sha(&raw(&format!("{dest}/catalogs/operators:v1")).unwrap())
        ),
    ];
    for (n, r) in remaining.iter().enumerate() {
        assert!(
            pulls_whole(&ctx, r, n),
            "{r} pulls whole after the collection"
        );
    }
    // Mirroring again copies the deleted image, uploading its blobs.
    mirror_all(&ctx, &src, &dest);
    assert!(raw(&ubi).is_some());
    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ws.join("results.json")).unwrap()).unwrap();
    let ubi_result = results
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["destination"] == ubi.as_str())
        .unwrap_or_else(|| panic!("{results}"));
    assert!(ubi_result["uploaded"].as_u64().unwrap() > 0, "{ubi_result}");
    assert!(pulls_whole(&ctx, &ubi, 9));
}
