//! A registry as a [`BlobSource`]: manifests (size-limited, a 404 as `None` where asked) and
//! blobs, streamed, a body cut off part way asked for again from where it stopped.

use super::{fault, time_left, with_retries, Fault, Registry, SendError};
use super::{read_limited, BlobSource, Fetched};
use anyhow::{anyhow, bail, Result};
use std::io::Read;

impl BlobSource for Registry {
    fn manifest(&mut self, reference: &str, limit: u64) -> Result<Fetched> {
        self.fetch_manifest(reference, limit, false)
            .and_then(|f| f.ok_or_else(|| anyhow!("manifest {reference} not found")))
    }

    fn manifest_if_any(&mut self, reference: &str, limit: u64) -> Result<Option<Fetched>> {
        self.fetch_manifest(reference, limit, true)
    }

    fn get_if_any(&mut self, rest: &str, limit: u64) -> Result<Option<Vec<u8>>> {
        let url = self.url(rest);
        let resp = self.get(&url, Some(crate::oci::manifest::OCI_INDEX))?;
        if !resp.status().is_success() {
            discard(resp);
            return Ok(None);
        }
        Ok(Some(read_limited(
            resp.into_body().into_reader(),
            limit,
            rest,
        )?))
    }

    fn blob(&mut self, digest: &str) -> Result<Box<dyn Read + Send>> {
        self.fetch_blob(digest)
    }
}

impl Registry {
    /// A manifest; with `missing_ok`, `None` for a 404.
    fn fetch_manifest(
        &mut self,
        reference: &str,
        limit: u64,
        missing_ok: bool,
    ) -> Result<Option<Fetched>> {
        let url = format!("{}/v2/{}/manifests/{reference}", self.base, self.repository);
        let resp = self.get(&url, Some(crate::oci::manifest::ACCEPT))?;
        if missing_ok && resp.status() == 404 {
            discard(resp);
            return Ok(None);
        }
        let what = if crate::digest::is_valid(reference) {
            format!("manifest {reference}")
        } else {
            format!("tag {reference:?}")
        };
        if !resp.status().is_success() {
            return Err(self.status_error(&what, resp));
        }
        let header = |k: &str| {
            resp.headers()
                .get(k)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let content_type = header("content-type");
        let digest = header("docker-content-digest");
        if let Some(len) = header("content-length").and_then(|l| l.parse::<u64>().ok()) {
            if len > limit {
                bail!("the manifest is {len} bytes, over the size limit of {limit} bytes");
            }
        }
        let bytes = read_limited(resp.into_body().into_reader(), limit, "manifest")?;
        Ok(Some(Fetched {
            bytes,
            content_type,
            digest,
        }))
    }

    fn fetch_blob(&mut self, digest: &str) -> Result<Box<dyn Read + Send>> {
        let url = format!("{}/v2/{}/blobs/{digest}", self.base, self.repository);
        let resp = self.get(&url, None)?;
        if !resp.status().is_success() {
            return Err(self.status_error(&format!("blob {digest}"), resp));
        }
        // A body cut off part way is asked for again from where it stopped.
        let (agent, auth, retries) = (self.agent.clone(), self.authorization.clone(), self.retries);
        let (deadline, host) = (self.deadline, self.host.clone());
        let reopen = move |offset: u64| {
            let range = format!("bytes={offset}-");
            with_retries(&retries, &url, || {
                let mut req = agent.get(&url).header("Range", &range);
                if let Some(h) = &auth {
                    req = req.header("Authorization", h);
                }
                if let Some(left) = time_left(deadline, &host)? {
                    req = req.config().timeout_global(Some(left)).build();
                }
                req.call().map_err(|e| SendError {
                    transient: fault(&e) == Fault::Broken,
                    error: anyhow!("{e}"),
                })
            })
            .map_err(|e| e.error)
        };
        Ok(Box::new(super::retry::Resuming::new(
            Box::new(resp.into_body().into_reader()),
            Box::new(reopen),
            retries,
        )))
    }
}

/// Reads away a short answer that is not used (a 404's error document), so that its
/// connection goes back to the agent's pool instead of being closed.
pub fn discard(resp: ureq::http::Response<ureq::Body>) {
    let _ = read_limited(resp.into_body().into_reader(), 64 * 1024, "answer");
}
