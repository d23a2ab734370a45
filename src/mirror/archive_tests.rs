use super::*;

fn sha256(data: &[u8]) -> String {
    crate::digest::hex(&crate::digest::sha256(data)).to_string()
}

/// A small workspace: an OCI layout with two blobs, and a plan file.
fn workspace() -> (tempfile::TempDir, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    let mut put = |rel: &str, data: &[u8]| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, data).unwrap();
        files.push(PathBuf::from(rel));
    };
    let layer = vec![7u8; 3000];
    put(&format!("blobs/sha256/{}", sha256(&layer)), &layer);
    put(&format!("blobs/sha256/{}", sha256(b"{}")), b"{}");
    put("index.json", br#"{"schemaVersion":2,"manifests":[]}"#);
    put("oci-layout", br#"{"imageLayoutVersion":"1.0.0"}"#);
    put("plan/mapping.txt", b"docker://a=docker://b\n");
    (dir, files)
}

fn read(dir: &Path, rel: &Path) -> Vec<u8> {
    std::fs::read(dir.join(rel)).unwrap()
}

#[test]
fn round_trip() {
    let (ws, files) = workspace();
    let out = tempfile::tempdir().unwrap();
    let archives = pack(ws.path(), &files, out.path(), 1 << 30).unwrap();
    assert_eq!(archives, [out.path().join("mirror_000001.tar")]);
    let back = tempfile::tempdir().unwrap();
    let stats = unpack(&archives, back.path()).unwrap();
    assert_eq!(stats.blobs, 2);
    assert_eq!(stats.files, 3);
    assert_eq!(stats.blobs_skipped, 0);
    for f in &files {
        assert_eq!(read(back.path(), f), read(ws.path(), f), "{}", f.display());
    }
    // Again: the blobs are there already, the other files are written again.
    let again = unpack(&archives, back.path()).unwrap();
    assert_eq!((again.blobs, again.blobs_skipped, again.files), (0, 2, 3));
    // A blob cut short (a power loss after its rename) is written again.
    let layer = back.path().join(&files[0]);
    std::fs::write(&layer, b"").unwrap();
    let mended = unpack(&archives, back.path()).unwrap();
    assert_eq!((mended.blobs, mended.blobs_skipped), (1, 1));
    assert_eq!(read(back.path(), &files[0]), read(ws.path(), &files[0]));
}

#[test]
fn packing_is_deterministic() {
    use std::os::unix::fs::PermissionsExt;
    let (ws, mut files) = workspace();
    let one = tempfile::tempdir().unwrap();
    let two = tempfile::tempdir().unwrap();
    let a = pack(ws.path(), &files, one.path(), 1 << 30).unwrap();
    std::fs::set_permissions(
        ws.path().join("index.json"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    files.reverse();
    let b = pack(ws.path(), &files, two.path(), 1 << 30).unwrap();
    let bytes = std::fs::read(&a[0]).unwrap();
    assert_eq!(bytes, std::fs::read(&b[0]).unwrap());
    let mut ar = tar::Archive::new(&bytes[..]);
    let mut names = Vec::new();
    for e in ar.entries().unwrap() {
        let e = e.unwrap();
        let h = e.header();
        assert_eq!(h.mtime().unwrap(), 0);
        assert_eq!(h.mode().unwrap(), 0o644);
        assert_eq!((h.uid().unwrap(), h.gid().unwrap()), (0, 0));
        names.push(e.path().unwrap().display().to_string());
    }
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    let mode = std::fs::metadata(&a[0]).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o644);
}

#[test]
fn archives_are_cut_at_max_bytes() {
    let ws = tempfile::tempdir().unwrap();
    for (name, len) in [("a", 1000), ("b", 1000), ("c", 3000), ("d", 10)] {
        std::fs::write(ws.path().join(name), vec![1u8; len]).unwrap();
    }
    let files: Vec<PathBuf> = ["d", "c", "b", "a"].iter().map(PathBuf::from).collect();
    let out = tempfile::tempdir().unwrap();
    // a and b fill 4096 bytes exactly (two 1536-byte entries and the trailer); c alone is
    // larger than the limit and gets its own archive; d follows.
    let archives = pack(ws.path(), &files, out.path(), 4096).unwrap();
    let names: Vec<String> = archives
        .iter()
        .map(|a| a.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "mirror_000001.tar",
            "mirror_000002.tar",
            "mirror_000003.tar"
        ]
    );
    let len = |i: usize| std::fs::metadata(&archives[i]).unwrap().len();
    assert_eq!(len(0), 4096);
    assert!(len(1) > 4096);
    assert!(len(2) <= 4096);
    let entries = |i: usize| -> Vec<String> {
        let mut ar = tar::Archive::new(File::open(&archives[i]).unwrap());
        ar.entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect()
    };
    assert_eq!(entries(0), ["a", "b"]);
    assert_eq!(entries(1), ["c"]);
    assert_eq!(entries(2), ["d"]);
    // A later pack with fewer archives leaves none of the old ones behind.
    std::fs::write(out.path().join("notes.txt"), "mine").unwrap();
    let fewer = pack(ws.path(), &files, out.path(), 1 << 20).unwrap();
    assert_eq!(fewer.len(), 1);
    let mut left: Vec<String> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["mirror_000001.tar", "notes.txt"]);
    let back = tempfile::tempdir().unwrap();
    unpack(&archives[..1], back.path()).unwrap();
    assert_eq!(read(back.path(), Path::new("b")), vec![1u8; 1000]);
}

#[test]
fn long_paths_round_trip_and_count() {
    let ws = tempfile::tempdir().unwrap();
    let rel = PathBuf::from(format!("{}/{}", "d".repeat(90), "f".repeat(90)));
    std::fs::create_dir_all(ws.path().join(rel.parent().unwrap())).unwrap();
    std::fs::write(ws.path().join(&rel), b"x").unwrap();
    let out = tempfile::tempdir().unwrap();
    let archives = pack(ws.path(), std::slice::from_ref(&rel), out.path(), 1 << 20).unwrap();
    let len = std::fs::metadata(&archives[0]).unwrap().len();
    assert!(len <= entry_size(&rel, 1) + TRAILER, "{len}");
    let back = tempfile::tempdir().unwrap();
    unpack(&archives, back.path()).unwrap();
    assert_eq!(read(back.path(), &rel), b"x");
}

#[test]
fn pack_refuses_paths_outside_and_links() {
    let (ws, _) = workspace();
    std::os::unix::fs::symlink("/etc/passwd", ws.path().join("link")).unwrap();
    let out = tempfile::tempdir().unwrap();
    for (f, want) in [
        ("../x", "not a plain relative path"),
        ("/etc/passwd", "not a plain relative path"),
        ("link", "not a regular file"),
        ("plan", "not a regular file"),
        ("missing", "No such file"),
    ] {
        let err = pack(ws.path(), &[PathBuf::from(f)], out.path(), 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{f}: {err}");
    }
}

/// A tar file of raw entries, names written as given (the builder refuses unsafe ones).
fn raw_tar(entries: &[(&str, tar::EntryType, &[u8])]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, kind, data) in entries {
        let mut h = tar::Header::new_gnu();
        h.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name.as_bytes());
        h.set_entry_type(*kind);
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        if matches!(kind, tar::EntryType::Symlink | tar::EntryType::Link) {
            h.set_link_name("index.json").unwrap();
        }
        h.set_cksum();
        b.append(&h, *data).unwrap();
    }
    b.into_inner().unwrap()
}

fn unpack_bytes(bytes: &[u8], dir: &Path) -> Result<UnpackStats, MirrorError> {
    let scratch = tempfile::tempdir().unwrap();
    let archive = scratch.path().join("mirror_000001.tar");
    std::fs::write(&archive, bytes).unwrap();
    unpack(&[archive], dir)
}

/// Every file under `dir`, relative.
fn listing(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| !e.file_type().is_dir())
        .map(|e| e.path().strip_prefix(dir).unwrap().display().to_string())
        .collect();
    out.sort();
    out
}

#[test]
fn a_tampered_blob_is_refused_and_nothing_else_lands() {
    let good = sha256(b"layer");
    let name = format!("blobs/sha256/{good}");
    let bytes = raw_tar(&[
        ("index.json", tar::EntryType::Regular, b"{}"),
        (&name, tar::EntryType::Regular, b"layeR"),
    ]);
    let root = tempfile::tempdir().unwrap();
    let err = unpack_bytes(&bytes, root.path()).unwrap_err().to_string();
    assert!(
        err.contains(&name) && err.contains("does not match its digest"),
        "{err}"
    );
    assert!(
        listing(root.path()).is_empty(),
        "{:?}",
        listing(root.path())
    );
}

#[test]
fn unsafe_entries_are_refused() {
    let hex = sha256(b"x");
    let cases: Vec<(String, tar::EntryType, &str)> = vec![
        (
            "../evil".into(),
            tar::EntryType::Regular,
            "not a plain relative path",
        ),
        (
            "a/../../evil".into(),
            tar::EntryType::Regular,
            "not a plain relative path",
        ),
        (
            "/tmp/evil".into(),
            tar::EntryType::Regular,
            "not a plain relative path",
        ),
        (
            "link".into(),
            tar::EntryType::Symlink,
            "links and special files are refused",
        ),
        (
            "hard".into(),
            tar::EntryType::Link,
            "links and special files are refused",
        ),
        (
            "fifo".into(),
            tar::EntryType::Fifo,
            "links and special files are refused",
        ),
        (
            "blobs/sha256/abc".into(),
            tar::EntryType::Regular,
            "not a blob",
        ),
        (
            format!("blobs/md5/{hex}"),
            tar::EntryType::Regular,
            "not a blob",
        ),
        (
            format!("blobs/sha256/{}", hex.to_uppercase()),
            tar::EntryType::Regular,
            "not a blob",
        ),
        (
            format!("blobs/sha256/{hex}/x"),
            tar::EntryType::Regular,
            "not a blob",
        ),
        (
            format!("blobs/sha256/{hex}"),
            tar::EntryType::Directory,
            "a directory where a blob goes",
        ),
    ];
    for (name, kind, want) in cases {
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("root");
        let bytes = raw_tar(&[(&name, kind, b"x")]);
        let err = unpack_bytes(&bytes, &root).unwrap_err().to_string();
        assert!(err.contains(want), "{name}: {err}");
        assert!(
            listing(outer.path()).is_empty(),
            "{name}: {:?}",
            listing(outer.path())
        );
    }
}

#[test]
fn garbage_is_not_an_archive() {
    let root = tempfile::tempdir().unwrap();
    let err = unpack_bytes(&[b'x'; 1024], root.path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("mirror_000001.tar"), "{err}");
    let err = unpack(&[root.path().join("none.tar")], root.path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("none.tar"), "{err}");
}

#[test]
fn a_truncated_archive_leaves_no_blob() {
    let (ws, files) = workspace();
    let out = tempfile::tempdir().unwrap();
    let archives = pack(ws.path(), &files, out.path(), 1 << 30).unwrap();
    let bytes = std::fs::read(&archives[0]).unwrap();
    // Cut inside the 3000-byte blob's data: the blob before it lands, verified; that one
    // and the files after it do not.
    let root = tempfile::tempdir().unwrap();
    let layer = format!("blobs/sha256/{}", sha256(&[7u8; 3000]));
    let header = (0..bytes.len())
        .step_by(512)
        .find(|i| bytes[*i..].starts_with(layer.as_bytes()))
        .unwrap();
    assert!(unpack_bytes(&bytes[..header + 2048], root.path()).is_err());
    let left = listing(root.path());
    assert!(!left.contains(&layer), "{left:?}");
    assert!(!left.contains(&"index.json".to_string()), "{left:?}");
}

#[test]
fn directories_and_dot_components_are_accepted() {
    let hex = sha256(b"x");
    let name = format!("./blobs/sha256/{hex}");
    let bytes = raw_tar(&[
        ("blobs/", tar::EntryType::Directory, b""),
        (&name, tar::EntryType::Regular, b"x"),
    ]);
    let root = tempfile::tempdir().unwrap();
    let stats = unpack_bytes(&bytes, root.path()).unwrap();
    assert_eq!(stats.blobs, 1);
    assert_eq!(listing(root.path()), [format!("blobs/sha256/{hex}")]);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// A damaged archive (bytes changed anywhere, or cut short) unpacks or fails; whatever it
    /// does, nothing lands outside the root and every blob that lands hashes to its name.
    #[test]
    fn damaged_archives_fail_cleanly(
        flips in proptest::collection::vec((0usize..10240, proptest::prelude::any::<u8>()), 0..8),
        cut in 0usize..10240,
    ) {
        let (ws, files) = workspace();
        let out = tempfile::tempdir().unwrap();
        let archives = pack(ws.path(), &files, out.path(), 1 << 30).unwrap();
        let mut bytes = std::fs::read(&archives[0]).unwrap();
        for (at, b) in flips {
            let at = at % bytes.len();
            bytes[at] = b;
        }
        bytes.truncate(cut.max(1).min(bytes.len()));
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("root");
        let _ = unpack_bytes(&bytes, &root);
        for f in listing(outer.path()) {
            proptest::prop_assert!(f.starts_with("root/"), "{f}");
            if let Some(hex) = f.strip_prefix("root/blobs/sha256/") {
                let data = std::fs::read(outer.path().join(&f)).unwrap();
                proptest::prop_assert_eq!(sha256(&data), hex);
            }
        }
    }
}
