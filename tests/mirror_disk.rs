//! `opreg mirror` to disk and back: a real `docker-registry` source mirrored into `file://DIR`
//! (an OCI layout with the plan), packed into archives, carried to another directory, unpacked
//! and pushed by `--from file://DIR` into a second registry whose requests a relay counts; the
//! result checked with `skopeo` and served by `opreg serve`.

use crate::mirror::{at, put_digests, raw, snapshot, watch};
use crate::mirror_support::Source;
use crate::registry_support::ctx::Ctx;
use crate::registry_support::faults::{Action, Seen};
use crate::registry_support::{sha, Registry};
use std::collections::BTreeMap;
use std::path::Path;

/// The layout's names and their digests.
pub fn names(dir: &Path) -> BTreeMap<String, String> {
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap();
    index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["annotations"]["org.opencontainers.image.ref.name"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                m["digest"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The paths inside a tar file.
fn tar_entries(path: &Path) -> Vec<String> {
    let out = std::process::Command::new("tar")
        .arg("-tf")
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn archives(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "tar"))
        .collect();
    v.sort();
    v
}

fn copy_archives(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for a in archives(from) {
        std::fs::copy(&a, to.join(a.file_name().unwrap())).unwrap();
    }
}

/// Adds `etcd.v1.3.0` (a new bundle image) to the source catalog as its channel's head, under
/// the same tag; the bundle image's reference and digest.
fn grow(src: &Source, ctx: &Ctx) -> (String, String) {
    use crate::registry_support::{Entry, Image, CONFIGS};
    let bundle = Image::new(&[("name", "etcd-bundle-1.3.0")]).layer(&[Entry::File(
        "app/etcd-bundle-1.3.0".into(),
        b"new bundle".repeat(50),
    )]);
    let digest = src.reg.push("etcd/etcd-bundle", "v1.3.0", &bundle);
    let image = format!("{}/etcd/etcd-bundle:v1.3.0", src.host);
    let (code, out, err) = ctx.run(&["render", &src.catalog(), "--use-http", "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    let mut docs: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&out)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    for d in &mut docs {
        if d["schema"] == "olm.channel" && d["package"] == "etcd" {
            d["entries"]
                .as_array_mut()
                .unwrap()
                .push(serde_json::json!({"name": "etcd.v1.3.0", "replaces": "etcd.v1.2.0"}));
        }
    }
    docs.push(serde_json::json!({"schema": "olm.bundle", "name": "etcd.v1.3.0", "package": "etcd",
        "image": image, "properties": [
            {"type": "olm.package", "value": {"packageName": "etcd", "version": "1.3.0"}},
            {"type": "olm.package.required", "value": {"packageName": "dep", "versionRange": ">=1.0.0"}}]}));
    let text: String = docs.iter().map(|d| format!("{d}\n")).collect();
    let catalog = Image::new(&[(CONFIGS, "/configs")]).layer(&[
        Entry::Dir("configs".into()),
        Entry::File("configs/catalog.json".into(), text.into_bytes()),
    ]);
    src.reg.push("catalogs/operators", "v1", &catalog);
    (image, digest)
}

#[test]
fn a_mirror_to_disk_is_carried_in_archives_and_pushed_from_disk_incrementally() {
    let src = Source::start();
    let ctx = Ctx::new();
    let cfg = src.config(&ctx.path(""), &src.catalog(), "");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, format!("archiveSize: 1\n{text}")).unwrap();
    let disk = ctx.path("disk");
    let disk_arg = format!("file://{}", disk.display());
    let to_disk = [
        "mirror",
        "--use-http",
        "--config",
        cfg.to_str().unwrap(),
        &disk_arg,
    ];
    // A dry run writes its plan and nothing of the layout.
    let mut dry = to_disk.to_vec();
    dry.push("--dry-run");
    let (code, _, err) = ctx.run(&dry);
    assert_eq!(code, 0, "{err}");
    let made: Vec<String> = std::fs::read_dir(&disk)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(made, ["dry-run"], "{err}");
    assert!(disk.join("dry-run/plan.json").is_file());
    let (code, _, err) = ctx.run(&to_disk);
    assert_eq!(code, 0, "{err}");

    // DIR is a layout naming each image by its source, with the source's digest; the
    // signature tag and the rebuilt catalog are in it too.
    let held = names(&disk);
    for r in src.expected(true) {
        let want = match r.split_once('@') {
            Some((_, d)) => d.to_string(),
            None => src.images[&r].clone(),
        };
        assert_eq!(held.get(&r), Some(&want), "{r} in the layout: {held:?}");
    }
    let (sig_tag, sig_digest) = &src.signature;
    let sig_name = format!("{}/etcd/etcd-operator:{sig_tag}", src.host);
    assert_eq!(held.get(&sig_name), Some(sig_digest), "{held:?}");
    assert!(held.contains_key("catalogs/operators:v1"), "{held:?}");
    assert!(!held.keys().any(|k| k.contains("blocked")), "{held:?}");
    for f in [
        "imageset-config.yaml",
        "mirror.json",
        "plan.json",
        "history.json",
    ] {
        assert!(disk.join(f).is_file(), "{f}");
    }
    // One archive (archiveSize 1 GB) with every blob and the small files.
    let first = archives(&disk);
    assert_eq!(first.len(), 1, "{first:?}");
    let entries = tar_entries(&first[0]);
    let blobs_on_disk = std::fs::read_dir(disk.join("blobs/sha256"))
        .unwrap()
        .count();
    assert_eq!(
        entries.iter().filter(|e| e.starts_with("blobs/")).count(),
        blobs_on_disk
    );
    assert!(entries.contains(&"index.json".to_string()), "{entries:?}");

    // The disconnected side: only the archives, pushed from disk.
    let carried = ctx.path("carried");
    copy_archives(&disk, &carried);
    let dst = Registry::http();
    let relay = watch(&dst);
    let dest = format!("127.0.0.1:{}/mirror", relay.port);
    let ws = ctx.path("ws");
    let from_arg = format!("file://{}", carried.display());
    let dest_arg = format!("docker://{dest}");
    let from_disk = [
        "mirror",
        "--use-http",
        "--from",
        &from_arg,
        "--workspace",
        ws.to_str().unwrap(),
        &dest_arg,
    ];
    let (code, _, err) = ctx.run(&from_disk);
    assert_eq!(code, 0, "{err}");
    for r in src.expected(true) {
        let there = raw(&at(&src, &dest, &r)).unwrap_or_else(|| panic!("{r}: {err}"));
        assert_eq!(sha(&there), held[&r], "{r}");
    }
    let sig = raw(&format!("{dest}/etcd/etcd-operator:{sig_tag}")).expect("the .sig tag");
    assert_eq!(&sha(&sig), sig_digest);
    snapshot(
        &src,
        &dest,
        &format!("{dest}/catalogs/operators:v1"),
        &["dep", "etcd"],
    );
    let cs = std::fs::read_to_string(ws.join("cluster-resources/cs-operators-v1.yaml")).unwrap();
    assert!(
        cs.contains(&format!("image: {dest}/catalogs/operators:v1")),
        "{cs}"
    );
    let pushed_first = put_digests(&relay, 0);

    // The source catalog gains a bundle, the channel's new head: the second mirror to the same
    // DIR adds only its new blobs, and its archive holds only those (and the small files).
    let before: Vec<String> = std::fs::read_dir(disk.join("blobs/sha256"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let thing = grow(&src, &ctx);
    let (code, _, err) = ctx.run(&to_disk);
    assert_eq!(code, 0, "{err}");
    let second = archives(&disk);
    assert_eq!(second.len(), 1, "{second:?}");
    let new_blobs: Vec<String> = tar_entries(&second[0])
        .into_iter()
        .filter_map(|e| e.strip_prefix("blobs/sha256/").map(str::to_string))
        .collect();
    assert!(!new_blobs.is_empty(), "the new bundle brings blobs");
    for b in &new_blobs {
        assert!(!before.contains(b), "{b} was carried already");
    }
    let added = std::fs::read_dir(disk.join("blobs/sha256"))
        .unwrap()
        .count()
        - before.len();
    assert_eq!(
        new_blobs.len(),
        added,
        "the archive holds exactly what the run added"
    );
    assert_eq!(names(&disk).get(&thing.0), Some(&thing.1));

    // Unpacked over the earlier copy, it pushes the new image and uploads only new blobs.
    copy_archives(&disk, &carried);
    let mark = relay.seen.lock().unwrap().len();
    let (code, _, err) = ctx.run(&from_disk);
    assert_eq!(code, 0, "{err}");
    let there = raw(&at(&src, &dest, &thing.0)).expect("the new bundle image is pushed");
    assert_eq!(sha(&there), thing.1);
    snapshot(
        &src,
        &dest,
        &format!("{dest}/catalogs/operators:v1"),
        &["dep", "etcd"],
    );
    for d in put_digests(&relay, mark) {
        assert!(!pushed_first.contains(&d), "{d} uploaded twice");
    }

    // --since packs every run's additions since the date: both runs' blobs.
    let today = opreg::text::rfc3339(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )[..10]
        .to_string();
    let mut since = to_disk.to_vec();
    since.extend(["--since", &today]);
    let (code, _, err) = ctx.run(&since);
    assert_eq!(code, 0, "{err}");
    let all = archives(&disk);
    let packed = all
        .iter()
        .flat_map(|a| tar_entries(a))
        .filter(|e| e.starts_with("blobs/"))
        .count();
    let on_disk = std::fs::read_dir(disk.join("blobs/sha256"))
        .unwrap()
        .count();
    assert_eq!(packed, on_disk, "--since today packs every blob");
}

#[test]
fn an_image_slower_than_image_timeout_fails_and_the_others_are_copied() {
    // Every blob of one image, which shares none with the others, is slow to come.
    let src = Source::start_with(Some(Box::new(|s: &Seen, _| {
        if s.method == "GET" && s.path.contains("/slow/thing/blobs/") {
            std::thread::sleep(std::time::Duration::from_secs(12));
        }
        Action::Relay
    })));
    let slow = crate::registry_support::Image::new(&[("name", "slow")]).layer(&[
        crate::registry_support::Entry::File("slow/data".into(), b"slow".repeat(100)),
    ]);
    src.reg.push("slow/thing", "1", &slow);
    let ctx = Ctx::new();
    let cfg = src.config(&ctx.path(""), &src.catalog(), "");
    let text = std::fs::read_to_string(&cfg).unwrap().replace(
        "  additionalImages:\n",
        &format!("  additionalImages:\n  - name: {}/slow/thing:1\n", src.host),
    );
    std::fs::write(&cfg, text).unwrap();
    let dst = Registry::http();
    let dest = format!("{}/m", dst.host());
    let (code, _, err) = ctx.run(&[
        "mirror",
        "--use-http",
        "--keep-going",
        "--image-timeout",
        "4s",
        "--config",
        cfg.to_str().unwrap(),
        "--workspace",
        ctx.path("ws").to_str().unwrap(),
        &format!("docker://{dest}"),
    ]);
    assert_eq!(code, 1, "{err}");
    let failed: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    assert!(
        failed[0].contains("slow/thing:1") && failed[0].contains("--image-timeout"),
        "{err}"
    );
    let thing = format!("{}/slow/thing:1", src.host);
    assert!(raw(&at(&src, &dest, &thing)).is_none());
    for r in src.expected(true) {
        assert!(raw(&at(&src, &dest, &r)).is_some(), "{r}: {err}");
    }
    let (code, _, err) = ctx.run(&[
        "mirror",
        "--image-timeout",
        "soon",
        "--config",
        "x",
        "docker://r/x",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--image-timeout"), "{err}");
}

#[test]
fn disk_arguments_are_checked_before_anything_is_read() {
    let ctx = Ctx::new();
    let empty = ctx.path("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let from = format!("file://{}", empty.display());
    let (code, _, err) = ctx.run(&["mirror", "--from", &from, "docker://127.0.0.1:1/x"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("does not hold a mirror to disk"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let (code, _, err) = ctx.run(&["mirror", "--from", &from, "file:///tmp/x"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("docker://"), "{err}");
    let (code, _, err) = ctx.run(&["mirror", "--from", "docker://r/x", "docker://r/y"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("file://DIR"), "{err}");
    let (code, _, err) = ctx.run(&[
        "mirror",
        "--config",
        "c.yaml",
        "--since",
        "2026-13-01",
        "file:///tmp/x",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("2026-13-01"), "{err}");
}

#[test]
fn a_catalog_in_an_oci_layout_is_mirrored_as_oc_mirror_names_it() {
    let src = Source::start();
    let ctx = Ctx::new();
    // The catalog copied into a layout by skopeo, as oc-mirror's users make them.
    let layout = ctx.path("Operator-Index");
    let out = std::process::Command::new("skopeo")
        .args(["copy", "--all", "--src-tls-verify=false"])
        .arg(format!("docker://{}", src.catalog()))
        .arg(format!("oci:{}", layout.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cfg = src.config(&ctx.path(""), &format!("oci://{}", layout.display()), "");
    let dst = Registry::http();
    let dest = format!("{}/m", dst.host());
    let ws = ctx.path("ws");
    let (code, _, err) = ctx.run(&[
        "mirror",
        "--use-http",
        "--config",
        cfg.to_str().unwrap(),
        "--workspace",
        ws.to_str().unwrap(),
        &format!("docker://{dest}"),
    ]);
    assert_eq!(code, 0, "{err}");
    for r in src.expected(true) {
        assert!(raw(&at(&src, &dest, &r)).is_some(), "{r}: {err}");
    }
    // The directory's last component, lower-cased, and `latest`, as oc-mirror names it.
    let catalog = format!("{dest}/operator-index:latest");
    snapshot(&src, &dest, &catalog, &["dep", "etcd"]);
    let mapping = std::fs::read_to_string(ws.join("mapping.txt")).unwrap();
    assert!(
        mapping.contains(&format!("oci://{}=docker://{catalog}", layout.display())),
        "{mapping}"
    );
}
