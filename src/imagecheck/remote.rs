//! The one file of [`super`] that talks to the registry client: a narrow surface (make a
//! client for a reference, GET its manifest, read its config blob, list a repository's tags)
//! so that the client can move without the image checks noticing. One [`Client::look`] per
//! location.
//!
//! The client answers 401 challenges itself and tries 429 and 5xx again (after `Retry-After`);
//! what comes back here is the final answer, told apart as found, missing (404 with
//! `NAME_UNKNOWN` or `MANIFEST_UNKNOWN`), denied (401, 403, or access refused while answering
//! a challenge: [`crate::registry::auth::Unauthorized`]) or failed (TLS, the network, any
//! other status).

use super::refs::Platform;
use crate::registry::{read_limited, BlobSource, Registry};
use serde::{Deserialize, Serialize};

/// What an image is, as found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Served {
    /// A single image, and its platform when it was read.
    Image(Option<Platform>),
    /// An index and the platforms it lists.
    Index(Vec<Platform>),
}

/// The platforms of image configs read before, and where a new reading is kept (the
/// cache, [`super::cache::Cache`]).
pub trait Configs {
    fn config(&self, digest: &str) -> Option<Platform>;
    fn put_config(&self, digest: &str, platform: &Platform);
}

/// One location's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// What the image is, and its manifest's digest.
    Found(Served, String),
    Missing(String),
    Denied(String),
    Failed(String),
}

/// How to reach registries, made once per run.
pub struct Client {
    conn: crate::registry::Connection,
    max_manifest: u64,
}

impl Client {
    pub fn new(image: &crate::image::ImageOptions) -> Client {
        Client {
            conn: image.connection.clone(),
            max_manifest: image.max_manifest_size,
        }
    }

    /// The registry a location's requests go to (for the per-registry limit).
    pub fn host(location: &str) -> String {
        crate::image::reference::parse(location)
            .map(|r| r.registry)
            .unwrap_or_default()
    }

    /// Asks for `location`'s manifest; for a single image with `platform`, also its config
    /// (to learn its OS and architecture), unless `cache` knows that config.
    pub fn look(&self, location: &str, platform: bool, cache: &dyn Configs) -> Reply {
        let r = match crate::image::reference::parse(location) {
            Ok(r) => r,
            Err(e) => return Reply::Failed(format!("{location}: {e}")),
        };
        let mut reg = match Registry::new(&r, &self.conn) {
            Ok(reg) => reg,
            Err(e) => return Reply::Failed(crate::text::one_line(&e)),
        };
        let url = reg.url(&format!("manifests/{}", r.manifest_ref()));
        let accept = [("Accept", crate::oci::manifest::ACCEPT)];
        let resp = match reg.send_with("GET", &url, None, &accept, &[]) {
            Ok(resp) => resp,
            Err(e) => {
                let line = crate::text::one_line(&e.error);
                return if crate::registry::auth::is_unauthorized(&e.error) {
                    Reply::Denied(line)
                } else {
                    Reply::Failed(line)
                };
            }
        };
        let status = resp.status().as_u16();
        let what = match &r.digest {
            Some(d) => format!("manifest {d}"),
            None => format!("tag {:?}", r.manifest_ref()),
        };
        match status {
            200 => {}
            404 => {
                let body = read_limited(resp.into_body().into_reader(), 64 * 1024, "error")
                    .unwrap_or_default();
                let code = serde_json::from_slice::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v.pointer("/errors/0/code")?.as_str().map(str::to_string))
                    .unwrap_or_default();
                return match code.as_str() {
                    "NAME_UNKNOWN" => Reply::Missing(format!(
                        "repository {} not found on {} (NAME_UNKNOWN)",
                        r.repository, r.registry
                    )),
                    "MANIFEST_UNKNOWN" => Reply::Missing(format!(
                        "{what} not found in {} on {} (MANIFEST_UNKNOWN)",
                        r.repository, r.registry
                    )),
                    _ => Reply::Failed(format!(
                        "{} answered HTTP 404 for {what} of {} without a registry error code",
                        r.registry, r.repository
                    )),
                };
            }
            401 | 403 => {
                let e = reg.status_error(&what, resp);
                return Reply::Denied(format!("{} (HTTP {status})", crate::text::one_line(&e)));
            }
            _ => return Reply::Failed(crate::text::one_line(reg.status_error(&what, resp))),
        }
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let bytes = match read_limited(
            resp.into_body().into_reader(),
            self.max_manifest,
            "manifest",
        ) {
            Ok(b) => b,
            Err(e) => return Reply::Failed(crate::text::one_line(&e)),
        };
        use crate::oci::manifest::{parse_manifest, Manifest};
        let digest = crate::digest::sha256(&bytes);
        let found = |served| Reply::Found(served, digest.clone());
        match parse_manifest(&bytes, content_type.as_deref()) {
            Ok(Manifest::Index { manifests }) => found(Served::Index(
                manifests
                    .iter()
                    .filter_map(|d| d.platform.as_ref())
                    .filter(|p| p.os != "unknown" && p.architecture != "unknown")
                    .map(|p| (p.os.clone(), p.architecture.clone()))
                    .collect(),
            )),
            Ok(Manifest::Image { config, .. }) if platform => found(Served::Image(
                self.config_platform(&mut reg, &config.digest, cache),
            )),
            Ok(Manifest::Image { .. }) => found(Served::Image(None)),
            Err(e) => Reply::Failed(format!("{location}: {e}")),
        }
    }

    /// The tags of the repository `location` names; `None` when they cannot be listed.
    pub fn tags(&self, location: &str) -> Option<std::collections::HashSet<String>> {
        let r = crate::image::reference::parse(location).ok()?;
        let mut reg = Registry::new(&r, &self.conn).ok()?;
        let tags = crate::image::tags::list(&mut reg);
        if let Err(e) = &tags {
            tracing::debug!(repository = %r.repository, error = %e, "the tag list was not read; tags are read one by one");
        }
        Some(tags.ok()?.into_iter().collect())
    }

    /// The OS and architecture an image's config names, from `cache` or read (and kept);
    /// `None` when it cannot be read.
    fn config_platform(
        &self,
        reg: &mut Registry,
        digest: &str,
        cache: &dyn Configs,
    ) -> Option<Platform> {
        if let Some(known) = cache.config(digest) {
            return Some(known);
        }
        let body = reg.blob(digest).ok()?;
        let bytes = read_limited(body, self.max_manifest, "image config").ok()?;
        let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        let os = v.get("os")?.as_str()?.to_string();
        let arch = v.get("architecture")?.as_str()?.to_string();
        cache.put_config(digest, &(os.clone(), arch.clone()));
        Some((os, arch))
    }
}
