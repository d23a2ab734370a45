//! `opreg mirror delete` against real `docker-registry` instances, checked with `skopeo`: the
//! two phases delete exactly what is listed (signatures too), catalogs are rebuilt before
//! their images go, an image another catalog still names is kept with the reason, a registry
//! that refuses deletes stops the run with nothing deleted, and a list oc-mirror could have
//! written is checked against the workspace.

use super::{at, mirror, raw};
use crate::mirror_support::Source;
use crate::registry_support::ctx::Ctx;
use crate::registry_support::{sha, Registry};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Writes a DeleteImageSetConfiguration with `body` under `delete:`.
pub(super) fn delete_config(ctx: &Ctx, body: &str) -> PathBuf {
    let p = ctx.path("delete.yaml");
    std::fs::write(
        &p,
        format!("apiVersion: mirror.openshift.io/v2alpha1\nkind: DeleteImageSetConfiguration\ndelete:\n{body}"),
    )
    .unwrap();
    p
}

/// `opreg mirror delete --use-http ARGS`.
pub(super) fn delete(ctx: &Ctx, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["mirror", "delete", "--use-http"];
    all.extend_from_slice(args);
    ctx.run(&all)
}

/// `opreg mirror delete --generate --config CFG --workspace WS docker://DEST`.
pub(super) fn generate(ctx: &Ctx, cfg: &Path, ws: &Path, dest: &str) -> (i32, String, String) {
    let target = format!("docker://{dest}");
    let (cfg, ws) = (cfg.to_str().unwrap(), ws.to_str().unwrap());
    delete(
        ctx,
        &["--generate", "--config", cfg, "--workspace", ws, &target],
    )
}

/// `opreg mirror delete --delete-yaml-file LIST docker://DEST`.
pub(super) fn execute(ctx: &Ctx, list: &Path, dest: &str) -> (i32, String, String) {
    delete(
        ctx,
        &[
            "--delete-yaml-file",
            list.to_str().unwrap(),
            &format!("docker://{dest}"),
        ],
    )
}

/// The catalog at `reference`, rendered by opreg.
fn render(ctx: &Ctx, reference: &str) -> String {
    let (code, out, err) = ctx.run(&["render", "--use-http", reference]);
    assert_eq!(code, 0, "{err}");
    out
}

/// The packages `opreg serve CATALOG` lists to grpcurl (ListPackages), sorted.
pub(super) fn served_packages(catalog: &str) -> Vec<String> {
    let server = crate::common::Server::start(&[catalog, "--use-http"]);
    let (code, out, err) = crate::common::grpcurl_with(
        &[
            "-plaintext",
            "-d",
            "{}",
            &format!("127.0.0.1:{}", server.port),
            "api.Registry/ListPackages",
        ],
        "",
    );
    assert_eq!(code, 0, "grpcurl: {err}");
    let mut names: Vec<String> = serde_json::Deserializer::from_str(&out)
        .into_iter::<serde_json::Value>()
        .map(|v| v.unwrap()["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

/// Mirrors the source's standard configuration to `dest`; returns the workspace.
pub(super) fn mirror_all(ctx: &Ctx, src: &Source, dest: &str) -> PathBuf {
    let cfg = src.config(&ctx.path(""), &src.catalog(), "");
    let ws = ctx.path("ws");
    let (code, _, err) = mirror(
        ctx,
        &[
            "--config",
            cfg.to_str().unwrap(),
            "--workspace",
            ws.to_str().unwrap(),
            &format!("docker://{dest}"),
        ],
    );
    assert_eq!(code, 0, "{err}");
    ws
}

pub(super) fn operator(src: &Source) -> String {
    src.images
        .keys()
        .find(|k| k.contains("etcd-operator@"))
        .unwrap()
        .clone()
}

#[test]
fn generate_review_execute_deletes_exactly_the_listed_images_and_their_signatures() {
    let src = Source::start();
    let dst = Registry::http();
    let dest = format!("{}/m", dst.host());
    let ctx = Ctx::new();
    let ws = mirror_all(&ctx, &src, &dest);
    let h = &src.host;
    let cfg = delete_config(
        &ctx,
        &format!("  operators:\n  - catalog: {}\n    packages:\n    - name: etcd\n  additionalImages:\n  - name: {h}/tools/ubi:9\n", src.catalog()),
    );
    let catalog = format!("{dest}/catalogs/operators:v1");
    let catalog_before = sha(&raw(&catalog).unwrap());
    let (code, _, err) = delete(
        &ctx,
        &[
            "--generate",
            "--config",
            cfg.to_str().unwrap(),
            "--workspace",
            &format!("file://{}", ws.display()),
            &format!("docker://{dest}"),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let list = ws.join("delete/delete-images.yaml");
    let text = std::fs::read_to_string(&list).unwrap();
    assert!(
        text.starts_with("apiVersion: mirror.openshift.io/v2alpha1\nitems:\n"),
        "{text}"
    );
    for t in ["operatorBundle", "operatorRelatedImage", "generic"] {
        assert!(text.contains(&format!("type: {t}\n")), "{t}: {text}");
    }
    assert!(
        !text.contains("dep-bundle") && !text.contains("catalogs/"),
        "{text}"
    );
    assert!(ws.join("delete/delete-plan.json").is_file());
    assert!(
        err.contains("opreg mirror delete --delete-yaml-file"),
        "{err}"
    );
    // Phase 1 only read: everything still stands.
    let op = operator(&src);
    let (sig_tag, _) = &src.signature;
    let op_repo = format!("{dest}/etcd/etcd-operator");
    let head = src.expected(false)[0].clone();
    let gone = [
        at(&src, &dest, &head),
        at(&src, &dest, &op),
        format!("{op_repo}:{sig_tag}"),
        at(&src, &dest, &format!("{h}/tools/ubi:9")),
    ];
    for g in &gone {
        assert!(raw(g).is_some(), "{g} stands after phase 1");
    }
    let (code, _, err) = execute(&ctx, &list, &dest);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("clusters whose CatalogSource does not poll"),
        "{err}"
    );
    for g in &gone {
        assert!(raw(g).is_none(), "{g} is deleted: {err}");
    }
    // The index's platform images went with it.
    let index: serde_json::Value = serde_json::from_slice(&raw(&op).unwrap()).unwrap();
    for m in index["manifests"].as_array().unwrap() {
        let d = m["digest"].as_str().unwrap();
        assert!(raw(&format!("{op_repo}@{d}")).is_none(), "child {d}");
    }
    // What the list does not name stands: the dependency and the catalog, rebuilt first
    // without the package.
    let dep = at(&src, &dest, &format!("{h}/dep/dep-bundle:v1.1.0"));
    assert!(raw(&dep).is_some(), "{dep}");
    let catalog_after = sha(&raw(&catalog).expect("the catalog stands"));
    assert_ne!(catalog_before, catalog_after, "the catalog was rebuilt");
    assert!(
        raw(&format!("{dest}/catalogs/operators@{catalog_before}")).is_none(),
        "the superseded catalog is deleted"
    );
    let served = render(&ctx, &catalog);
    assert!(
        served.contains("dep.v1.1.0") && !served.contains("etcd.v1.2.0"),
        "{served}"
    );
    let (code, _, err) = ctx.run(&["validate", "--use-http", &catalog]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(served_packages(&catalog), ["dep"]);
    // The same command again: nothing left to do, nothing else deleted.
    let (code, _, err) = execute(&ctx, &list, &dest);
    assert_eq!(code, 0, "{err}");
    assert!(raw(&dep).is_some() && raw(&catalog).is_some(), "{err}");
    let listed = text.matches("imageReference:").count();
    assert!(
        err.contains(&format!("deleted 0 images ({listed} already gone")),
        "{err}"
    );
}

#[test]
fn an_image_another_catalog_names_is_kept_with_the_reason() {
    let src = Source::start();
    let h = src.host.clone();
    let copied = Command::new("skopeo")
        .args(["copy", "--src-tls-verify=false", "--dest-tls-verify=false"])
        .arg(format!("docker://{h}/catalogs/operators:v1"))
        .arg(format!("docker://{h}/catalogs/operators:v2"))
        .output()
        .unwrap();
    assert!(copied.status.success());
    let dst = Registry::http();
    let dest = format!("{}/m", dst.host());
    let ctx = Ctx::new();
    let cfg = ctx.path("two.yaml");
    std::fs::write(&cfg, format!(
        "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  operators:\n  - catalog: {h}/catalogs/operators:v1\n    packages:\n    - name: etcd\n  - catalog: {h}/catalogs/operators:v2\n    packages:\n    - name: etcd\n"
    )).unwrap();
    let ws = ctx.path("ws");
    let (code, _, err) = mirror(
        &ctx,
        &[
            "--config",
            cfg.to_str().unwrap(),
            "--workspace",
            ws.to_str().unwrap(),
            &format!("docker://{dest}"),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let del = delete_config(&ctx, &format!("  operators:\n  - catalog: {h}/catalogs/operators:v1\n    packages:\n    - name: etcd\n"));
    let (code, _, err) = generate(&ctx, &del, &ws, &dest);
    assert_eq!(code, 0, "{err}");
    let v2 = format!("{dest}/catalogs/operators:v2");
    assert!(err.contains(&format!("of the catalog {v2}")), "{err}");
    let plan: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ws.join("delete/delete-plan.json")).unwrap())
            .unwrap();
    assert_eq!(plan["delete"].as_array().unwrap().len(), 0, "{plan}");
    let kept = plan["kept"].as_array().unwrap();
    assert!(
        kept.iter()
            .any(|k| k["destination"].as_str().unwrap().contains("etcd-operator")),
        "{plan}"
    );
    let list = ws.join("delete/delete-images.yaml");
    let (code, _, err) = execute(&ctx, &list, &dest);
    assert_eq!(code, 0, "{err}");
    // v1 no longer names etcd; v2 does, and every etcd image stands.
    let v1 = render(&ctx, &format!("{dest}/catalogs/operators:v1"));
    assert!(!v1.contains("etcd.v1.2.0"), "{v1}");
    assert!(render(&ctx, &v2).contains("etcd.v1.2.0"));
    let head = src.expected(false)[0].clone();
    assert!(raw(&at(&src, &dest, &head)).is_some());
    assert!(raw(&at(&src, &dest, &operator(&src))).is_some());
}

#[test]
fn a_registry_that_refuses_deletes_stops_the_run_with_nothing_deleted() {
    let src = Source::start();
    let dst = Registry::without_deletes();
    let dest = format!("{}/m", dst.host());
    let ctx = Ctx::new();
    let ws = mirror_all(&ctx, &src, &dest);
    let cfg = delete_config(
        &ctx,
        &format!(
            "  operators:\n  - catalog: {}\n    packages:\n    - name: etcd\n",
            src.catalog()
        ),
    );
    let (code, _, err) = generate(&ctx, &cfg, &ws, &dest);
    assert_eq!(code, 0, "{err}");
    let catalog = format!("{dest}/catalogs/operators:v1");
    let before = sha(&raw(&catalog).unwrap());
    let list = ws.join("delete/delete-images.yaml");
    let (code, _, err) = execute(&ctx, &list, &dest);
    assert_eq!(code, 1, "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(
        errors[0].contains("refuses deletes")
            && errors[0].contains("storage.delete.enabled")
            && errors[0].contains("nothing was deleted"),
        "{err}"
    );
    assert_eq!(
        sha(&raw(&catalog).unwrap()),
        before,
        "no catalog was pushed"
    );
    let head = src.expected(false)[0].clone();
    assert!(raw(&at(&src, &dest, &head)).is_some());
}

#[test]
fn a_list_oc_mirror_could_write_is_checked_against_the_workspace() {
    let src = Source::start();
    let dst = Registry::http();
    let dest = format!("{}/m", dst.host());
    let ctx = Ctx::new();
    let ws = mirror_all(&ctx, &src, &dest);
    let h = &src.host;
    let ubi = at(&src, &dest, &format!("{h}/tools/ubi:9"));
    let head = at(&src, &dest, &src.expected(false)[0]);
    // Written as oc-mirror writes it (no opreg plan beside it): an additional image and a
    // bundle, the bundle's destination by tag.
    let list = ctx.path("elsewhere/delete-images.yaml");
    std::fs::create_dir_all(list.parent().unwrap()).unwrap();
    let item = |name: &str, r: &str, t: &str| {
        format!("  - imageName: {name}\n    imageReference: docker://{r}\n    type: {t}\n")
    };
    let head_by_tag = {
        let standing: serde_json::Value =
            serde_json::from_slice(&std::fs::read(ws.join("standing.json")).unwrap()).unwrap();
        standing["images"]
            .as_object()
            .unwrap()
            .keys()
            .find(|k| k.contains("etcd-bundle"))
            .unwrap()
            .clone()
    };
    let text = format!(
        "apiVersion: mirror.openshift.io/v2alpha1\nkind: DeleteImageList\nitems: \n{}{}",
        item(&format!("{h}/tools/ubi:9"), &ubi, "generic"),
        item("etcd-bundle", &head_by_tag, "operatorBundle"),
    );
    std::fs::write(&list, &text).unwrap();
    let target = format!("docker://{dest}");
    // Without a plan, the workspace must be named.
    let (code, _, err) = delete(
        &ctx,
        &["--delete-yaml-file", list.to_str().unwrap(), &target],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--workspace"), "{err}");
    // An item outside the destination refuses the whole list, naming it.
    let outside = text.clone() + &item("x", "other.example:5000/m/x:1", "generic");
    std::fs::write(ctx.path("outside.yaml"), outside).unwrap();
    let (code, _, err) = delete(
        &ctx,
        &[
            "--delete-yaml-file",
            ctx.path("outside.yaml").to_str().unwrap(),
            "--workspace",
            ws.to_str().unwrap(),
            &target,
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("item 3 (imageReference \"docker://other.example:5000/m/x:1\")"),
        "{err}"
    );
    assert!(raw(&ubi).is_some(), "nothing was deleted");
    // With the workspace: the additional image goes; the bundle stays, as its catalog (not
    // rebuilt by such a list) still names it.
    let (code, _, err) = delete(
        &ctx,
        &[
            "--delete-yaml-file",
            list.to_str().unwrap(),
            "--workspace",
            ws.to_str().unwrap(),
            &target,
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(raw(&ubi).is_none(), "{err}");
    assert!(raw(&head).is_some(), "{err}");
    assert!(
        err.contains("kept: ") && err.contains("catalogs/operators:v1"),
        "{err}"
    );
    // A later mirror run copies the deleted image again (the record forgot it).
    let cfg = src.config(&ctx.path(""), &src.catalog(), "");
    let (code, _, err) = mirror(
        &ctx,
        &[
            "--config",
            cfg.to_str().unwrap(),
            "--workspace",
            ws.to_str().unwrap(),
            &target,
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(raw(&ubi).is_some(), "copied again: {err}");
}
