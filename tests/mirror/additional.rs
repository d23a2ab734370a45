//! `additionalImages` as a user writes them: one source listed twice under different targets is
//! copied to each, and a rerun tells images it found at the destination apart from those it took
//! from the workspace's record without asking.

use super::{mirror, raw};
use crate::registry_support::ctx::Ctx;
use crate::registry_support::{sha, Entry, Image, Registry};

fn hello() -> Image {
    Image::new(&[("name", "hello")])
        .arch("amd64")
        .layer(&[Entry::File("hello".into(), b"hello, world\n".to_vec())])
}

fn config(ctx: &Ctx, body: &str) -> String {
    let p = ctx.path("imageset.yaml");
    let text = format!(
        "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n{body}"
    );
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().to_string()
}

#[test]
fn one_source_under_two_targets_is_copied_to_both() {
    let (src, dst) = (Registry::http(), Registry::http());
    let digest = src.push("app/hello", "v1", &hello());
    let (h, dest) = (src.host(), format!("{}/m", dst.host()));
    let ctx = Ctx::new();
    let cfg = config(
        &ctx,
        &format!(
            "  - name: {h}/app/hello:v1\n  - name: {h}/app/hello:v1\n    targetRepo: renamed/hello\n    targetTag: v9\n"
        ),
    );
    let ws = ctx.path("ws");
    let (code, _, err) = mirror(
        &ctx,
        &[
            "--config",
            &cfg,
            "--workspace",
            ws.to_str().unwrap(),
            &format!("docker://{dest}"),
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("mirrored 2 images"), "{err}");
    for there in [
        format!("{dest}/app/hello:v1"),
        format!("{dest}/renamed/hello:v9"),
    ] {
        let bytes = raw(&there).unwrap_or_else(|| panic!("{there} is not there: {err}"));
        assert_eq!(sha(&bytes), digest, "{there}");
    }
    let mapping = std::fs::read_to_string(ws.join("mapping.txt")).unwrap();
    for line in [
        format!("docker://{h}/app/hello:v1=docker://{dest}/app/hello:v1"),
        format!("docker://{h}/app/hello:v1=docker://{dest}/renamed/hello:v9"),
    ] {
        assert!(mapping.lines().any(|l| l == line), "{line} in {mapping}");
    }
}

#[test]
fn a_rerun_says_which_images_it_took_from_the_record_without_asking() {
    let (src, dst) = (Registry::http(), Registry::http());
    src.push("app/hello", "v1", &hello());
    let (h, dest) = (src.host(), format!("{}/m", dst.host()));
    let ctx = Ctx::new();
    let cfg = config(&ctx, &format!("  - name: {h}/app/hello:v1\n"));
    let ws = ctx.path("ws");
    let args = [
        "--config",
        cfg.as_str(),
        "--workspace",
        ws.to_str().unwrap(),
        &format!("docker://{dest}"),
    ];
    let (code, _, err) = mirror(&ctx, &args);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("(0 already there,"), "{err}");

    // Deleted at the destination: the rerun does not look, and must not claim it did.
    let there = raw(&format!("{dest}/app/hello:v1")).expect("mirrored");
    dst.delete_manifest("m/app/hello", &sha(&there));
    let (code, _, err) = mirror(&ctx, &args);
    assert_eq!(code, 0, "{err}");
    let record = ws.join("completed.tsv");
    assert!(
        err.contains(&format!(
            "(0 already there, 1 recorded as done in {},",
            record.display()
        )),
        "{err}"
    );
    assert!(raw(&format!("{dest}/app/hello:v1")).is_none());

    // Found at the destination: "already there".
    std::fs::remove_file(&record).unwrap();
    let (code, _, err) = mirror(&ctx, &args);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = mirror(&ctx, &args);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("1 recorded as done"), "{err}");
    std::fs::remove_file(&record).unwrap();
    let (code, _, err) = mirror(&ctx, &args);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("(1 already there,"), "{err}");
}

#[test]
fn a_failed_image_without_catalogs_says_nothing_of_catalogs() {
    let (src, dst) = (Registry::http(), Registry::http());
    src.push("app/hello", "v1", &hello());
    let h = src.host();
    let ctx = Ctx::new();
    let cfg = config(
        &ctx,
        &format!("  - name: {h}/app/hello:v1\n  - name: {h}/app/gone:v1\n"),
    );
    let (code, _, err) = mirror(
        &ctx,
        &[
            "--keep-going",
            "--config",
            &cfg,
            "--workspace",
            ctx.path("ws").to_str().unwrap(),
            &format!("docker://{}/m", dst.host()),
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("app/gone:v1"), "{err}");
    assert!(!err.contains("catalog"), "no catalog is involved: {err}");
}

#[test]
fn a_workspace_reused_for_another_destination_says_its_cluster_resources_are_replaced() {
    let (src, dst) = (Registry::http(), Registry::http());
    src.push("app/hello", "v1", &hello());
    let ctx = Ctx::new();
    let cfg = config(&ctx, &format!("  - name: {}/app/hello:v1\n", src.host()));
    let ws = ctx.path("ws");
    let run = |prefix: &str| {
        mirror(
            &ctx,
            &[
                "--config",
                &cfg,
                "--workspace",
                ws.to_str().unwrap(),
                &format!("docker://{}/{prefix}", dst.host()),
            ],
        )
    };
    let (code, _, err) = run("first");
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run("first");
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("replaced"), "same destination: {err}");
    let (code, _, err) = run("second");
    assert_eq!(code, 0, "{err}");
    assert!(
        err.lines().any(|l| l.starts_with("warning:")
            && l.contains(&format!("earlier run to {}/first", dst.host()))
            && l.contains(&format!("for {}/second", dst.host()))),
        "{err}"
    );
}
