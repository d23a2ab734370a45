//! `opreg validate --images` at the community catalog's scale (`scripts/bench.sh --images`): a
//! synthetic catalog naming 19,152 distinct images, 6,597 of them by digest, every one a
//! stand-in image in a `docker-registry` on loopback. Measured: plain `opreg validate` of the
//! catalog (the RSS floor), the first `--images` run (an empty cache), and a rerun with the
//! cache (only the tags asked again). Targets: the first run under 60 s, its peak RSS within
//! 30 MB of plain validate's, the rerun under 5 s.

use crate::image::start_registry;
use crate::procs::{run_child, ChildStats};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Distinct references, and how many of them are by digest (the community catalog's counts).
const REFS: usize = 19_152;
const BY_DIGEST: usize = 6_597;
/// Repositories the stand-ins are spread over, and references per bundle (its image first).
const REPOS: usize = 100;
const PER_BUNDLE: usize = 4;
const BUNDLES_PER_PACKAGE: usize = 20;

pub const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

fn e(x: impl std::fmt::Display) -> String {
    x.to_string()
}

pub fn sha(b: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(b))
}

/// A stand-in image's manifest; `n` makes its digest its own (an annotation).
pub fn manifest(config: &(String, usize), layer: &(String, usize), n: Option<usize>) -> Vec<u8> {
    let mut m = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config.0, "size": config.1},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layer.0, "size": layer.1}],
    });
    if let Some(n) = n {
        m["annotations"] = serde_json::json!({"bench.n": n.to_string()});
    }
    m.to_string().into_bytes()
}

/// Sends one blob to `repo` (POST, then PUT), or mounts it from `from`.
pub fn blob(
    agent: &ureq::Agent,
    base: &str,
    repo: &str,
    bytes: &[u8],
    from: Option<&str>,
) -> Result<(), String> {
    let digest = sha(bytes);
    let url = match from {
        Some(f) => format!("{base}/v2/{repo}/blobs/uploads/?mount={digest}&from={f}"),
        None => format!("{base}/v2/{repo}/blobs/uploads/"),
    };
    let resp = agent.post(&url).send_empty().map_err(e)?;
    if resp.status() == 201 {
        return Ok(());
    }
    let loc = resp.headers()["location"].to_str().map_err(e)?.to_string();
    let loc = if loc.starts_with("http") {
        loc
    } else {
        format!("{base}{loc}")
    };
    let sep = if loc.contains('?') { '&' } else { '?' };
    agent
        .put(&format!("{loc}{sep}digest={digest}"))
        .header("Content-Type", "application/octet-stream")
        .send(bytes)
        .map_err(e)?;
    Ok(())
}

/// Puts the stand-ins in the registry at `base`; returns every reference, the tags first.
fn stand_ins(base: &str, host: &str) -> Result<Vec<String>, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder().build().into();
    let layer = b"stand-in layer".to_vec();
    let config = serde_json::json!({"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers", "diff_ids": [sha(&layer)]}})
        .to_string()
        .into_bytes();
    let (c, l) = ((sha(&config), config.len()), (sha(&layer), layer.len()));
    let repo = |k: usize| format!("stand-in/r{k}");
    for k in 0..REPOS {
        let from = (k > 0).then(|| repo(0));
        blob(&agent, base, &repo(k), &layer, from.as_deref())?;
        blob(&agent, base, &repo(k), &config, from.as_deref())?;
    }
    let tagged = manifest(&c, &l, None);
    let next = AtomicUsize::new(0);
    let failed = std::sync::Mutex::new(None);
    let refs: Vec<String> = (0..REFS)
        .map(|i| {
            if i < REFS - BY_DIGEST {
                format!("{host}/{}:t{i}", repo(i % REPOS))
            } else {
                format!(
                    "{host}/{}@{}",
                    repo(i % REPOS),
                    sha(&manifest(&c, &l, Some(i)))
                )
            }
        })
        .collect();
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= REFS {
                    break;
                }
                let (body, name) = if i < REFS - BY_DIGEST {
                    (tagged.clone(), format!("t{i}"))
                } else {
                    let m = manifest(&c, &l, Some(i));
                    let d = sha(&m);
                    (m, d)
                };
                let url = format!("{base}/v2/{}/manifests/{name}", repo(i % REPOS));
                if let Err(x) = agent
                    .put(&url)
                    .header("Content-Type", MANIFEST)
                    .send(&body[..])
                {
                    *failed.lock().unwrap() = Some(format!("PUT {url}: {x}"));
                    break;
                }
            });
        }
    });
    match failed.into_inner().unwrap() {
        Some(f) => Err(f),
        None => Ok(refs),
    }
}

/// A catalog whose bundles name `refs`, `PER_BUNDLE` each, in packages of
/// `BUNDLES_PER_PACKAGE` bundles on one channel.
fn catalog(refs: &[String], out: &Path) -> Result<(), String> {
    let mut text = String::new();
    for (p, pkg_refs) in refs.chunks(PER_BUNDLE * BUNDLES_PER_PACKAGE).enumerate() {
        let pkg = format!("pkg{p}");
        let mut entries = Vec::new();
        let mut bundles = String::new();
        for (b, r) in pkg_refs.chunks(PER_BUNDLE).enumerate() {
            let name = format!("{pkg}.v1.0.{b}");
            let mut entry = serde_json::json!({"name": name});
            if b > 0 {
                entry["replaces"] = serde_json::json!(format!("{pkg}.v1.0.{}", b - 1));
            }
            entries.push(entry);
            let related: Vec<_> = r
                .iter()
                .map(|i| serde_json::json!({"name": "", "image": i}))
                .collect();
            let bundle = serde_json::json!({
                "schema": "olm.bundle", "name": name, "package": pkg, "image": r[0],
                "properties": [{"type": "olm.package", "value": {"packageName": pkg, "version": format!("1.0.{b}")}}],
                "relatedImages": related,
            });
            let _ = writeln!(bundles, "{bundle}");
        }
        let _ = writeln!(
            text,
            "{}",
            serde_json::json!({"schema": "olm.package", "name": pkg, "defaultChannel": "stable"})
        );
        let _ = writeln!(
            text,
            "{}",
            serde_json::json!({"schema": "olm.channel", "name": "stable", "package": pkg, "entries": entries})
        );
        text.push_str(&bundles);
    }
    std::fs::create_dir_all(out).map_err(e)?;
    std::fs::write(out.join("catalog.json"), text).map_err(e)
}

pub fn measure(bin: &Path, work: &Path, rounds: usize) -> Result<String, String> {
    let dir = work.join("image-checks");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(e)?;
    let reg = start_registry(&dir)?;
    let host = format!("127.0.0.1:{}", reg.port);
    let refs = stand_ins(&reg.base(), &host)?;
    let cat = dir.join("catalog");
    catalog(&refs, &cat)?;
    let errf = dir.join("child.stderr");
    let run = |extra: &[&str], cache: &Path| -> Result<ChildStats, String> {
        let mut cmd = Command::new(bin);
        cmd.arg("validate")
            .arg(&cat)
            .args(extra)
            .arg("--image-cache")
            .arg(cache);
        cmd.env_remove("OPREG_SIGNATURE_POLICY");
        run_child(&mut cmd, &errf).map_err(|x| {
            let text = std::fs::read_to_string(&errf).unwrap_or_default();
            format!("{x}: {}", text.trim())
        })
    };
    let images = ["--images", "--use-http", "-q"];
    let (mut plain, mut cold, mut warm) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..rounds {
        let cache = dir.join(format!("cache-{r}"));
        plain.push(run(&[], &cache)?);
        cold.push(run(&images, &cache)?);
        warm.push(run(&images, &cache)?);
    }
    let med = |v: &[ChildStats], f: &dyn Fn(&ChildStats) -> f64| {
        let mut x: Vec<f64> = v.iter().map(f).collect();
        x.sort_by(f64::total_cmp);
        x[x.len() / 2]
    };
    let wall = |s: &ChildStats| s.wall.as_secs_f64();
    let mb = |s: &ChildStats| s.maxrss_kb as f64 / 1024.0;
    let (pw, pr) = (med(&plain, &wall), med(&plain, &mb));
    let (cw, cr) = (med(&cold, &wall), med(&cold, &mb));
    let (ww, wr) = (med(&warm, &wall), med(&warm, &mb));
    let verdict = |ok: bool| if ok { "MET" } else { "NOT MET" };
    let mut t = String::new();
    let _ = writeln!(t, "{} bundles in {} packages naming {REFS} distinct images ({BY_DIGEST} by digest), stand-ins in one `docker-registry` on loopback; medians of {rounds}.\n", REFS / PER_BUNDLE, REFS.div_ceil(PER_BUNDLE * BUNDLES_PER_PACKAGE));
    let _ = writeln!(
        t,
        "| run | wall | peak RSS | target | verdict |\n|---|---|---|---|---|"
    );
    let _ = writeln!(
        t,
        "| `opreg validate` (no images) | {pw:.2} s | {pr:.1} MB | | |"
    );
    let _ = writeln!(
        t,
        "| `--images`, empty cache | {cw:.2} s | {cr:.1} MB | < 60 s; RSS ≤ plain + 30 MB | {} |",
        verdict(cw < 60.0 && cr <= pr + 30.0)
    );
    let _ = writeln!(
        t,
        "| `--images` again, with the cache | {ww:.2} s | {wr:.1} MB | < 5 s | {} |",
        verdict(ww < 5.0)
    );
    drop(reg);
    Ok(t)
}
