//! A mirror to disk records its blobs in the workspace's history only once an archive holding
//! them is complete: a run whose archive could not be written (a full disk: here, the archive's
//! name taken by a directory, so the write fails for real) or that was killed while writing it
//! leaves its blobs for the next run to pack, which must not write an archive without them.

use crate::registry_support::ctx::Ctx;
use crate::registry_support::{Entry, Image, Registry};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// `n` bytes that do not compress (xorshift), so that writing the archive takes a while.
fn noise(n: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// The blobs (`blobs/sha256/…`) inside a tar file.
fn blobs_in(tar: &Path) -> Vec<String> {
    let out = Command::new("tar").arg("-tf").arg(tar).output().unwrap();
    assert!(out.status.success(), "{}", tar.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("blobs/"))
        .map(str::to_string)
        .collect()
}

/// A source holding one image with a large layer, its configuration with `archiveSize: 1`,
/// and the arguments of a mirror to `disk`.
fn setup(ctx: &Ctx, layer: usize) -> (Registry, Vec<String>) {
    let src = Registry::http();
    let img = Image::new(&[("name", "big")])
        .arch("amd64")
        .layer(&[Entry::File("big".into(), noise(layer))]);
    src.push("app/big", "v1", &img);
    let cfg = ctx.path("imageset.yaml");
    std::fs::write(
        &cfg,
        format!(
            "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\narchiveSize: 1\nmirror:\n  additionalImages:\n  - name: {}/app/big:v1\n",
            src.host()
        ),
    )
    .unwrap();
    let args = vec![
        "mirror".to_string(),
        "--use-http".into(),
        "--config".into(),
        cfg.display().to_string(),
        format!("file://{}", ctx.path("disk").display()),
    ];
    (src, args)
}

#[test]
fn a_failed_archive_write_leaves_the_blobs_to_the_next_run() {
    let ctx = Ctx::new();
    let (_src, args) = setup(&ctx, 1 << 16);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let disk = ctx.path("disk");
    // The archive's name is taken: writing it fails after the images were copied.
    std::fs::create_dir_all(disk.join("mirror_000001.tar/x")).unwrap();
    let (code, _, err) = ctx.run(&args);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("mirror_000001.tar"), "{err}");
    std::fs::remove_dir_all(disk.join("mirror_000001.tar")).unwrap();
    let (code, _, err) = ctx.run(&args);
    assert_eq!(code, 0, "{err}");
    let blobs = blobs_in(&disk.join("mirror_000001.tar"));
    assert_eq!(blobs.len(), 3, "manifest, config and layer: {blobs:?}");
}

#[test]
fn a_run_killed_while_writing_its_archive_leaves_the_blobs_to_the_next_run() {
    let ctx = Ctx::new();
    let (_src, args) = setup(&ctx, 48 << 20);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let disk = ctx.path("disk");
    let mut child = ctx
        .cmd(&args, &[])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed (SIGKILL: nothing runs after it) while the archive's temporary file grows: the
    // only file beside the layout that gets past a megabyte.
    let writing = || {
        std::fs::read_dir(&disk)
            .map(|rd| {
                rd.flatten().any(|e| {
                    e.file_name().to_string_lossy().starts_with('.')
                        && e.metadata().is_ok_and(|m| m.is_file() && m.len() > 1 << 20)
                })
            })
            .unwrap_or(false)
    };
    let start = Instant::now();
    while !writing() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before its archive was caught being written"
        );
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "no archive written"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !disk.join("mirror_000001.tar").exists(),
        "an archive is written whole or not at all"
    );
    let (code, _, err) = ctx.run(&args);
    assert_eq!(code, 0, "{err}");
    let blobs = blobs_in(&disk.join("mirror_000001.tar"));
    assert_eq!(blobs.len(), 3, "manifest, config and layer: {blobs:?}");
}
