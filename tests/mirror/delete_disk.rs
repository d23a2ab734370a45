//! `opreg mirror delete` on a mirror on disk (`file://DIR`), then `--from` that DIR into a new
//! `docker-registry`: the deleted images leave the layout with their signature, the catalog is
//! rebuilt in the layout without the package, blobs nothing reaches any more are removed and
//! leave the history, and the push from disk sends only what remains (a relay sees every
//! request; skopeo and grpcurl check the result).

use super::delete::{delete, delete_config, served_packages};
use super::{at, raw, watch};
use crate::mirror_disk::names;
use crate::mirror_support::Source;
use crate::registry_support::ctx::Ctx;
use crate::registry_support::Registry;
use std::path::Path;

fn blobs(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir.join("blobs/sha256"))
        .unwrap()
        .map(|e| format!("blobs/sha256/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    v.sort();
    v
}

#[test]
fn a_delete_on_disk_leaves_only_what_remains_for_the_push_from_disk() {
    let src = Source::start();
    let ctx = Ctx::new();
    let h = src.host.clone();
    let cfg = src.config(&ctx.path(""), &src.catalog(), "");
    let disk = ctx.path("disk");
    let disk_arg = format!("file://{}", disk.display());
    let (code, _, err) = ctx.run(&[
        "mirror",
        "--use-http",
        "--config",
        cfg.to_str().unwrap(),
        &disk_arg,
    ]);
    assert_eq!(code, 0, "{err}");
    let before = names(&disk);
    let blobs_before = blobs(&disk);
    let head = src.expected(false)[0].clone();
    let op = super::delete::operator(&src);
    let ubi = format!("{h}/tools/ubi:9");
    let (sig_tag, _) = &src.signature;
    let sig = format!("{h}/etcd/etcd-operator:{sig_tag}");
    for n in [&head, &op, &ubi, &sig] {
        assert!(before.contains_key(n), "{n} in {before:?}");
    }

    // Phase 1 names the layout's images; DIR is its own workspace.
    let del = delete_config(&ctx, &format!("  operators:\n  - catalog: {}\n    packages:\n    - name: etcd\n  additionalImages:\n  - name: {ubi}\n", src.catalog()));
    let (code, _, err) = delete(
        &ctx,
        &["--generate", "--config", del.to_str().unwrap(), &disk_arg],
    );
    assert_eq!(code, 0, "{err}");
    let list = disk.join("delete/delete-images.yaml");
    let text = std::fs::read_to_string(&list).unwrap();
    assert!(
        text.contains(&format!("imageReference: oci:{}:{head}\n", disk.display())),
        "{text}"
    );
    assert_eq!(names(&disk), before, "phase 1 changes nothing");
    let (code, _, err) = delete(
        &ctx,
        &[
            "--generate",
            "--config",
            del.to_str().unwrap(),
            "--workspace",
            "elsewhere",
            &disk_arg,
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("its own workspace"), "{err}");

    // Phase 2: the images and the signature leave the layout, the catalog is rebuilt without
    // etcd, and the blobs only they used are removed.
    let (code, _, err) = delete(
        &ctx,
        &["--delete-yaml-file", list.to_str().unwrap(), &disk_arg],
    );
    assert_eq!(code, 0, "{err}");
    let after = names(&disk);
    for n in [&head, &op, &ubi, &sig] {
        assert!(!after.contains_key(n), "{n} left the layout: {err}");
    }
    let dep = format!("{h}/dep/dep-bundle:v1.1.0");
    assert_eq!(after.get(&dep), before.get(&dep), "{err}");
    let catalog = "catalogs/operators:v1";
    assert_ne!(
        after.get(catalog),
        before.get(catalog),
        "the catalog was rebuilt"
    );
    let blobs_after = blobs(&disk);
    assert!(blobs_after.len() < blobs_before.len(), "{err}");
    assert!(err.contains("that no remaining image uses"), "{err}");
    assert!(
        err.contains("catalog rebuilt in the layout: catalogs/operators:v1")
            && !err.contains("pushed")
            && !err.contains("CatalogSource"),
        "{err}"
    );
    let history = std::fs::read_to_string(disk.join("history.json")).unwrap();
    for b in blobs_before.iter().filter(|b| !blobs_after.contains(b)) {
        assert!(!history.contains(b.as_str()), "{b} left the history");
    }
    // The same command again finds everything gone and changes nothing.
    let (code, _, err) = delete(
        &ctx,
        &["--delete-yaml-file", list.to_str().unwrap(), &disk_arg],
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("deleted 0 images"), "{err}");
    assert_eq!(names(&disk), after);

    // Pushed from disk into a new registry: only what remains goes.
    let dst = Registry::http();
    let relay = watch(&dst);
    let dest = format!("127.0.0.1:{}/m", relay.port);
    let ws = ctx.path("ws");
    let (code, _, err) = ctx.run(&[
        "mirror",
        "--use-http",
        "--from",
        &disk_arg,
        "--workspace",
        ws.to_str().unwrap(),
        &format!("docker://{dest}"),
    ]);
    assert_eq!(code, 0, "{err}");
    let manifests: Vec<String> = relay
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(s, _)| s.method == "PUT" && s.path.contains("/manifests/"))
        .map(|(s, _)| s.path.clone())
        .collect();
    assert!(!manifests.is_empty());
    for repo in ["/m/etcd/", "/m/tools/ubi/"] {
        assert!(
            !manifests.iter().any(|p| p.contains(repo)),
            "{repo}: {manifests:?}"
        );
    }
    assert!(raw(&at(&src, &dest, &dep)).is_some());
    assert!(raw(&at(&src, &dest, &ubi)).is_none());
    let served = format!("{dest}/catalogs/operators:v1");
    assert_eq!(served_packages(&served), ["dep"]);
}
