//! Deleting from a registry: a manifest by digest (distribution removes every tag on it in the
//! repository), and the probe that tells, before anything is pushed or deleted, whether the
//! registry accepts deletes at all.

use super::{discard, Registry};
use anyhow::{anyhow, Result};

/// What a DELETE of a manifest did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deleted {
    /// The registry deleted it (202).
    Now,
    /// The registry does not have it (404): already gone.
    AlreadyGone,
}

/// A digest no registry holds: the probe's DELETE names it.
const NOTHING: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

impl Registry {
    /// DELETEs the manifest `digest` of this repository. A refusal is an error saying so: 405
    /// (deletes not enabled), or another status with the registry's words.
    pub fn delete_manifest(&mut self, digest: &str) -> Result<Deleted> {
        let url = self.url(&format!("manifests/{digest}"));
        let resp = self.send("DELETE", &url, None, &[]).map_err(|e| e.error)?;
        match resp.status().as_u16() {
            200..=299 => {
                discard(resp);
                Ok(Deleted::Now)
            }
            404 => {
                discard(resp);
                Ok(Deleted::AlreadyGone)
            }
            405 => {
                discard(resp);
                Err(self.refuses_deletes())
            }
            _ => Err(self.status_error(&format!("deleting the manifest {digest}"), resp)),
        }
    }

    /// Whether the registry accepts deletes: a DELETE of a manifest it cannot have. Distribution
    /// answers 405 `UNSUPPORTED` when deletes are not enabled (before looking the digest up),
    /// and 404 when they are.
    pub fn probe_delete(&mut self) -> Result<()> {
        self.delete_manifest(NOTHING).map(|_| ())
    }

    /// The one line a registry that refuses deletes gets.
    fn refuses_deletes(&self) -> anyhow::Error {
        anyhow!(
            "the registry {} refuses deletes (405): for distribution's registry set storage.delete.enabled: true (or REGISTRY_STORAGE_DELETE_ENABLED=true) and restart it",
            self.transport.host
        )
    }
}
