//! What a repository holds beside one image: its tags (every page of the list), whether a
//! manifest is there (a HEAD), and the OCI 1.1 referrers of a digest. The mirror asks these to
//! find an image's signatures and to skip what the destination already has.

use crate::oci::manifest::{Descriptor, ACCEPT, OCI_INDEX};
use crate::registry::{discard, read_limited, Registry};
use anyhow::{anyhow, Result};

/// Every tag of the repository, following the list's `Link` pages. A repository that does not
/// exist has none.
pub fn list(reg: &mut Registry) -> Result<Vec<String>> {
    #[derive(serde::Deserialize)]
    struct Page {
        #[serde(default)]
        tags: Option<Vec<String>>,
    }
    let mut tags = Vec::new();
    let mut url = reg.url("tags/list?n=1000");
    for _ in 0..10_000 {
        let resp = reg.send("GET", &url, None, &[]).map_err(|e| e.error)?;
        match resp.status().as_u16() {
            200 => {}
            404 => {
                discard(resp);
                return Ok(tags);
            }
            _ => return Err(reg.status_error("the tag list", resp)),
        }
        let next = resp
            .headers()
            .get("link")
            .and_then(|v| v.to_str().ok())
            .and_then(next_link)
            .map(|l| reg.absolute(&l));
        let body = read_limited(resp.into_body().into_reader(), 64 << 20, "tag list")?;
        let page: Page = serde_json::from_slice(&body)
            .map_err(|e| anyhow!("the registry sent a malformed tag list: {e}"))?;
        tags.extend(page.tags.unwrap_or_default());
        match next {
            Some(n) if n != url => url = n,
            _ => return Ok(tags),
        }
    }
    Err(anyhow!("the tag list has more than 10,000 pages"))
}

/// The target of a `Link: <URL>; rel="next"` header.
fn next_link(header: &str) -> Option<String> {
    header.split(',').find_map(|part| {
        let (target, params) = part.split_once(';')?;
        let rel_next = params
            .split(';')
            .any(|p| p.trim().replace(' ', "") == "rel=\"next\"" || p.trim() == "rel=next");
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        rel_next.then(|| target.to_string())
    })
}

/// The digest of the manifest at `reference` (a tag or a digest), or `None` when there is none.
pub fn head_manifest(reg: &mut Registry, reference: &str) -> Result<Option<String>> {
    let url = reg.url(&format!("manifests/{reference}"));
    let resp = reg
        .send_with("HEAD", &url, None, &[("Accept", ACCEPT)], &[])
        .map_err(|e| e.error)?;
    match resp.status().as_u16() {
        200 => {
            let digest = resp
                .headers()
                .get("docker-content-digest")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            match digest {
                Some(d) => Ok(Some(d)),
                // A registry that does not say: the digest is asked of the manifest itself.
                None if crate::digest::is_valid(reference) => Ok(Some(reference.to_string())),
                None => {
                    let f = crate::oci::source::BlobSource::manifest(reg, reference, 4 << 20)?;
                    Ok(Some(crate::digest::sha256(&f.bytes)))
                }
            }
        }
        404 => Ok(None),
        _ => Err(reg.status_error(&format!("manifest {reference}"), resp)),
    }
}

/// The manifests the referrers API lists for `digest`, or `None` when the registry does not
/// offer the API (it answers 404 or 405, as registries before OCI 1.1 do).
pub fn referrers(reg: &mut Registry, digest: &str) -> Result<Option<Vec<Descriptor>>> {
    #[derive(serde::Deserialize)]
    struct Index {
        #[serde(default)]
        manifests: Vec<Descriptor>,
    }
    let url = reg.url(&format!("referrers/{digest}"));
    let resp = reg
        .send_with("GET", &url, None, &[("Accept", OCI_INDEX)], &[])
        .map_err(|e| e.error)?;
    match resp.status().as_u16() {
        200 => {}
        404 | 405 | 400 => {
            discard(resp);
            return Ok(None);
        }
        _ => return Err(reg.status_error(&format!("the referrers of {digest}"), resp)),
    }
    let json = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with(OCI_INDEX) || t.starts_with("application/json"));
    if !json {
        return Ok(None);
    }
    let body = read_limited(resp.into_body().into_reader(), 4 << 20, "referrers list")?;
    let index: Index = serde_json::from_slice(&body)
        .map_err(|e| anyhow!("the registry sent a malformed referrers list: {e}"))?;
    Ok(Some(index.manifests))
}

#[cfg(test)]
mod tests {
    use super::next_link;

    #[test]
    fn the_next_page_is_read_from_the_link_header() {
        assert_eq!(
            next_link(r#"</v2/a/tags/list?n=2&last=b>; rel="next""#).as_deref(),
            Some("/v2/a/tags/list?n=2&last=b")
        );
        assert_eq!(
            next_link(r#"<https://r/x>; rel="prev", <https://r/y>; rel="next""#).as_deref(),
            Some("https://r/y")
        );
        assert_eq!(next_link(r#"<https://r/x>; rel="prev""#), None);
        assert_eq!(next_link("garbage"), None);
    }
}
