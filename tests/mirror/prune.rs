//! `opreg mirror --prune` against real `docker-registry` instances, checked with `skopeo` and
//! grpcurl: after a package and an additional image leave the configuration, a run says what it
//! left behind, `--dry-run --prune` lists it, `--prune` deletes exactly that (the catalog is
//! already rebuilt without the package), and a rerun prunes nothing.

use super::delete::{operator, served_packages};
use super::{at, mirror, raw};
use crate::mirror_support::Source;
use crate::registry_support::ctx::Ctx;
use crate::registry_support::Registry;
use std::path::Path;

/// A configuration of the source's catalog with `packages`, and `additional` images.
fn config(ctx: &Ctx, name: &str, src: &Source, packages: &[&str], additional: &[String]) -> String {
    let mut text = format!(
        "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  operators:\n  - catalog: {}\n    packages:\n",
        src.catalog()
    );
    for p in packages {
        text.push_str(&format!("    - name: {p}\n"));
    }
    if !additional.is_empty() {
        text.push_str("  additionalImages:\n");
        for a in additional {
            text.push_str(&format!("  - name: {a}\n"));
        }
    }
    let p = ctx.path(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn run(ctx: &Ctx, cfg: &str, ws: &Path, dest: &str, extra: &[&str]) -> (i32, String) {
    let mut args = vec!["--config", cfg, "--workspace", ws.to_str().unwrap()];
    args.extend_from_slice(extra);
    let target = format!("docker://{dest}");
    args.push(&target);
    let (code, _, err) = mirror(ctx, &args);
    (code, err)
}

#[test]
fn prune_deletes_what_the_configuration_dropped_and_nothing_else() {
    let src = Source::start();
    let dst = Registry::http();
    let dest = format!("{}/m", dst.host());
    let ctx = Ctx::new();
    let ws = ctx.path("ws");
    let h = src.host.clone();
    let ubi = format!("{h}/tools/ubi:9");
    let both = config(
        &ctx,
        "both.yaml",
        &src,
        &["etcd", "other"],
        std::slice::from_ref(&ubi),
    );
    let (code, err) = run(&ctx, &both, &ws, &dest, &[]);
    assert_eq!(code, 0, "{err}");
    let other = at(&src, &dest, &format!("{h}/other/other-bundle:v1"));
    let ubi_there = at(&src, &dest, &ubi);
    let catalog = format!("{dest}/catalogs/operators:v1");
    assert!(raw(&other).is_some() && raw(&ubi_there).is_some());
    assert_eq!(served_packages(&catalog), ["dep", "etcd", "other"]);

    // The package and the additional image leave the configuration: the run says so.
    let etcd = config(&ctx, "etcd.yaml", &src, &["etcd"], &[]);
    let (code, err) = run(&ctx, &etcd, &ws, &dest, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("2 images mirrored earlier by this workspace are no longer selected")
            && err.contains("--prune docker://"),
        "{err}"
    );
    assert!(raw(&other).is_some() && raw(&ubi_there).is_some());
    assert_eq!(served_packages(&catalog), ["dep", "etcd"]);

    // A dry run lists them in oc-mirror's shape and deletes nothing.
    let (code, err) = run(&ctx, &etcd, &ws, &dest, &["--dry-run", "--prune"]);
    assert_eq!(code, 0, "{err}");
    let list = ws.join("delete/delete-images-prune.yaml");
    let text = std::fs::read_to_string(&list).unwrap();
    assert_eq!(text.matches("imageReference:").count(), 2, "{text}");
    assert!(
        text.contains(&format!("imageReference: docker://{other}\n"))
            && text.contains(&format!("imageReference: docker://{ubi_there}\n"))
            && text.contains("type: generic\n")
            && text.contains("type: operatorBundle\n"),
        "{text}"
    );
    assert!(raw(&other).is_some() && raw(&ubi_there).is_some(), "{err}");

    // A run that fails anywhere (an image it cannot copy) prunes nothing.
    let missing = format!("{h}/tools/missing:1");
    let failing = config(&ctx, "failing.yaml", &src, &["etcd"], &[missing]);
    let (code, err) = run(&ctx, &failing, &ws, &dest, &["--prune"]);
    assert_eq!(code, 1, "{err}");
    assert!(!err.contains("deleted"), "{err}");
    assert!(raw(&other).is_some() && raw(&ubi_there).is_some(), "{err}");

    // --prune deletes exactly those; everything etcd needs stands.
    let (code, err) = run(&ctx, &etcd, &ws, &dest, &["--prune"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("deleted 2 images"), "{err}");
    assert!(raw(&other).is_none() && raw(&ubi_there).is_none(), "{err}");
    let head = src.expected(false)[0].clone();
    for kept in [
        at(&src, &dest, &head),
        at(&src, &dest, &operator(&src)),
        at(&src, &dest, &format!("{h}/dep/dep-bundle:v1.1.0")),
        catalog.clone(),
    ] {
        assert!(raw(&kept).is_some(), "{kept} stands: {err}");
    }
    assert_eq!(served_packages(&catalog), ["dep", "etcd"]);

    // A rerun prunes nothing and says nothing is left behind.
    let (code, err) = run(&ctx, &etcd, &ws, &dest, &["--prune"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        !err.contains("deleted") && !err.contains("no longer selected"),
        "{err}"
    );
    for kept in [at(&src, &dest, &head), catalog] {
        assert!(raw(&kept).is_some(), "{kept} stands: {err}");
    }
}
