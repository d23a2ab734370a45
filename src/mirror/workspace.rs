//! The workspace's files: the plan a dry run writes (`dry-run/mapping.txt`, `dry-run/plan.json`,
//! `dry-run/catalogs/`) and the record a run leaves (`mapping.txt`, `plan.json`,
//! `results.json`, and with `--keep-going` `catalogs/`). Each file is written whole or not at
//! all (a temporary file renamed into place); each filtered catalog, a directory, likewise.

use super::plan::Plan;
use super::signatures::Found;
use super::transfer::{Inspected, Outcome};
use super::MirrorError;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` whole or not at all (a temporary file beside it, synced and
/// renamed), mode 0644, creating its directory.
fn write_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use crate::atomic::{Mode, Options};
    crate::atomic::write_creating_dir(path, bytes, &Options::mode(Mode::Exact(0o644)))
}

/// [`write_file`], the error one line naming the file.
pub fn write_named(path: &Path, bytes: &[u8]) -> Result<(), MirrorError> {
    write_file(path, bytes).map_err(|e| MirrorError::from(format!("{}: {e}", path.display())))
}

/// Writes each filtered catalog of `plan` as its image will hold it (its FBC, a directory a
/// package, as `opreg render` writes it) under `dir/catalogs/<path>/<tag>/`, named as the
/// rebuilt catalog is at the destination (its repository path and tag); an earlier one there
/// is replaced. Returns each catalog's reference and directory.
pub fn write_filtered(
    dir: &Path,
    plan: &Plan,
) -> Result<Vec<(String, PathBuf)>, crate::error::Error> {
    use crate::error::Error;
    let mut out = Vec::new();
    for c in &plan.catalogs {
        let name = super::plan::catalog_destination(&c.entry, &c.digest, "", 0)?;
        let (path, tag) = name.rsplit_once(':').unwrap_or((name.as_str(), "latest"));
        let target = dir.join("catalogs").join(path).join(tag);
        let at = |e: &dyn std::fmt::Display| Error::failed(format!("{}: {e}", target.display()));
        let parent = crate::atomic::parent(&target);
        std::fs::create_dir_all(parent).map_err(|e| at(&e))?;
        let tmp = crate::atomic::Dir::create_in(parent, ".catalog-").map_err(|e| at(&e))?;
        crate::imagebuild::write_configs(c.catalog.clone(), tmp.path())?;
        if target.exists() {
            std::fs::remove_dir_all(&target).map_err(|e| at(&e))?;
        }
        tmp.commit(&target, Some(0o755), true)
            .map_err(|(_, e)| at(&e))?;
        out.push((c.entry.catalog.clone(), target));
    }
    Ok(out)
}

/// `docker://SOURCE=docker://DESTINATION`, one line per image as the catalog or configuration
/// names it, then a line for each signature tag found (by tag) and referrer (by digest).
pub fn mapping(plan: &Plan, inspected: &[Inspected], catalogs: &[(String, String)]) -> String {
    let mut out = String::new();
    for (src, dst) in catalogs {
        // A catalog read from an OCI layout is named as oc-mirror names it.
        let src = match src.strip_prefix("oci:") {
            Some(dir) => format!("oci://{dir}"),
            None => format!("docker://{src}"),
        };
        out.push_str(&format!("{src}=docker://{dst}\n"));
    }
    for (i, img) in plan.images.iter().enumerate() {
        out.push_str(&format!(
            "docker://{}=docker://{}\n",
            img.wanted.source, img.destination
        ));
        let Some(seen) = inspected.get(i) else {
            continue;
        };
        let repo = |r: &str| strip(r).to_string();
        for f in &seen.signatures {
            match f {
                Found::Tag { tag, .. } => out.push_str(&format!(
                    "docker://{}:{tag}=docker://{}:{tag}\n",
                    repo(&img.wanted.source),
                    repo(&img.destination)
                )),
                Found::Referrer { digest } => out.push_str(&format!(
                    "docker://{}@{digest}=docker://{}@{digest}\n",
                    repo(&img.wanted.source),
                    repo(&img.destination)
                )),
            }
        }
    }
    out
}

/// A reference without its tag or digest.
fn strip(r: &str) -> &str {
    let name = r.split('@').next().unwrap_or(r);
    match name.rfind(':') {
        Some(i) if !name[i..].contains('/') => &name[..i],
        _ => name,
    }
}

/// The plan as JSON: each catalog's pin, destination and filter decisions (bundles kept and
/// pruned per package, bundles added for dependencies and why, warnings), each image's
/// destination, bytes and blobs present, and the blocked images.
pub fn plan_json(plan: &Plan, inspected: &[Inspected]) -> Value {
    let catalogs: Vec<Value> = plan
        .catalogs
        .iter()
        .map(|c| {
            let packages: serde_json::Map<String, Value> = c
                .kept
                .iter()
                .map(|(p, bundles)| (p.clone(), json!(bundles)))
                .collect();
            json!({
                "catalog": c.entry.catalog,
                "pinned": c.pinned,
                "destination": c.destination,
                "bundlesInSource": c.bundles_in_source,
                "bundlesKept": c.kept.values().map(|b| b.len()).sum::<usize>(),
                "kept": packages,
                "addedForDependencies": c.added.iter().map(|a| json!({
                    "package": a.package, "bundle": a.bundle, "reason": a.reason,
                })).collect::<Vec<_>>(),
                "why": c.why,
                "warnings": c.warnings,
            })
        })
        .collect();
    let images: Vec<Value> = plan
        .images
        .iter()
        .enumerate()
        .map(|(i, img)| {
            let mut v = json!({
                "source": img.wanted.source,
                "destination": img.destination,
            });
            if let Some(s) = inspected.get(i) {
                v["digest"] = json!(s.digest);
                v["blobs"] = json!(s.blobs);
                v["bytes"] = json!(s.bytes);
                v["blobsAtDestination"] = json!(s.present);
                v["bytesAtDestination"] = json!(s.present_bytes);
                if let Some(e) = &s.error {
                    v["error"] = json!(e);
                }
            }
            v
        })
        .collect();
    json!({
        "catalogs": catalogs,
        "images": images,
        "blocked": plan.blocked,
    })
}

/// What a run did, image by image.
pub fn results_json(outcomes: &[Outcome]) -> Value {
    Value::Array(
        outcomes
            .iter()
            .map(|o| {
                json!({
                    "source": o.source,
                    "destination": o.destination,
                    "digest": o.digest,
                    "alreadyThere": o.already_there,
                    "uploaded": o.uploaded,
                    "uploadedBytes": o.uploaded_bytes,
                    "mounted": o.mounted,
                    "signatures": o.signatures,
                    "error": o.error,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn references_lose_their_tag_or_digest() {
        assert_eq!(super::strip("r:5000/a/b:v1"), "r:5000/a/b");
        assert_eq!(super::strip("r:5000/a/b@sha256:aa"), "r:5000/a/b");
        assert_eq!(super::strip("r:5000/a/b"), "r:5000/a/b");
    }
}
