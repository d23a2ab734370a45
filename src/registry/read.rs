//! A registry as a [`BlobSource`]: manifests (size-limited, a 404 as `None` where asked) and
//! blobs, streamed, a body cut off part way asked for again from where it stopped.

use super::retry::{self, SendError};
use super::{read_limited, send, BlobSource, Fetched, Registry, Response};
use anyhow::{anyhow, Result};
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
    /// A manifest; with `missing_ok`, `None` for a 404. A body cut off part way is asked for
    /// again, under the one retry policy.
    fn fetch_manifest(
        &mut self,
        reference: &str,
        limit: u64,
        missing_ok: bool,
    ) -> Result<Option<Fetched>> {
        let url = format!("{}/v2/{}/manifests/{reference}", self.base, self.repository);
        let accept = [("Accept", crate::oci::manifest::ACCEPT)];
        let retries = self.retries;
        let outcome = retry::run(&retries, &url, || {
            let resp = self
                .send_once("GET", &url, &accept, &[])
                .and_then(retry::answered)?;
            if !resp.status().is_success() {
                return Ok(Err(resp));
            }
            read_manifest(resp, limit).map(Ok)
        });
        let resp = match retry::or_answer(outcome).map_err(|e| e.error)? {
            Ok(Ok(fetched)) => return Ok(Some(fetched)),
            Ok(Err(resp)) | Err(resp) => resp,
        };
        if missing_ok && resp.status() == 404 {
            discard(resp);
            return Ok(None);
        }
        let what = if crate::digest::is_valid(reference) {
            format!("manifest {reference}")
        } else {
            format!("tag {reference:?}")
        };
        Err(self.status_error(&what, resp))
    }

    fn fetch_blob(&mut self, digest: &str) -> Result<Box<dyn Read + Send>> {
        let url = format!("{}/v2/{}/blobs/{digest}", self.base, self.repository);
        let resp = self.get(&url, None)?;
        if !resp.status().is_success() {
            return Err(self.status_error(&format!("blob {digest}"), resp));
        }
        // A body cut off part way is asked for again from where it stopped.
        let (transport, auth, retries) = (
            self.transport.clone(),
            self.authorization.clone(),
            self.retries,
        );
        let reopen = move |offset: u64| {
            let range = format!("bytes={offset}-");
            let mut headers = vec![("Range", range.as_str())];
            if let Some(h) = &auth {
                headers.push(("Authorization", h));
            }
            retry::answer_of(retry::run(&retries, &url, || {
                let req = send::request("GET", &url, &headers).body(())?;
                transport.send(req).and_then(retry::answered)
            }))
            .map_err(|e| e.error)
        };
        Ok(Box::new(retry::Resuming::new(
            Box::new(resp.into_body().into_reader()),
            Box::new(reopen),
            retries,
        )))
    }
}

/// A manifest's answer read: its type, its digest header, its bytes (at most `limit`).
fn read_manifest(resp: Response, limit: u64) -> std::result::Result<Fetched, SendError> {
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
            return Err(SendError::fatal(anyhow!(
                "the manifest is {len} bytes, over the size limit of {limit} bytes"
            )));
        }
    }
    let bytes =
        read_limited(resp.into_body().into_reader(), limit, "manifest").map_err(SendError::body)?;
    Ok(Fetched {
        bytes,
        content_type,
        digest,
    })
}

/// Reads away a short answer that is not used (a 404's error document), so that its
/// connection goes back to the agent's pool instead of being closed.
pub fn discard(resp: Response) {
    let _ = read_limited(resp.into_body().into_reader(), 64 * 1024, "answer");
}
