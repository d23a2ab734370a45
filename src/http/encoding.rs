//! Content codings as catalogd's `gzhttp` handler chooses them: `zstd` when the client offers
//! it, else `gzip`, else the bytes as they are, and only for bodies of at least
//! [`super::GZIP_MIN_SIZE`] bytes. Every answer says `Vary: Accept-Encoding`.
//!
//! A served version is compressed once, when it is written ([`super::runs`]), so that
//! `/api/v1/all` and most `/metas` answers cost no compression per request.

use http::HeaderMap;
use std::path::{Path, PathBuf};

/// A content coding of an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coding {
    Identity,
    Gzip,
    Zstd,
}

impl Coding {
    /// The `Content-Encoding` value; `None` for the bytes as they are.
    pub fn header(self) -> Option<&'static str> {
        match self {
            Coding::Identity => None,
            Coding::Gzip => Some("gzip"),
            Coding::Zstd => Some("zstd"),
        }
    }
    /// The file name suffix of a version's precompressed copy.
    fn suffix(self) -> &'static str {
        match self {
            Coding::Identity => "",
            Coding::Gzip => ".gz",
            Coding::Zstd => ".zst",
        }
    }
}

/// The coding for an answer of `len` bytes to a request with `headers`: `zstd` when offered
/// (a q-value above 0), else `gzip` when offered, else none; none below the size threshold.
pub fn negotiate(headers: &HeaderMap, len: u64) -> Coding {
    if len < u64::from(super::GZIP_MIN_SIZE) {
        return Coding::Identity;
    }
    let (mut gzip, mut zstd) = (false, false);
    for v in headers.get_all(http::header::ACCEPT_ENCODING) {
        let Ok(v) = v.to_str() else { continue };
        for item in v.split(',') {
            let mut parts = item.split(';');
            let name = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q=").or(p.trim().strip_prefix("Q=")))
                .filter_map(|q| q.trim().parse::<f32>().ok())
                .next()
                .unwrap_or(1.0);
            if q <= 0.0 {
                continue;
            }
            match name.as_str() {
                "zstd" => zstd = true,
                "gzip" | "*" => gzip = true,
                _ => {}
            }
        }
    }
    if zstd {
        Coding::Zstd
    } else if gzip {
        Coding::Gzip
    } else {
        Coding::Identity
    }
}

/// The path of `file`'s copy in `coding`.
pub fn variant_path(file: &Path, coding: Coding) -> PathBuf {
    let mut s = file.as_os_str().to_owned();
    s.push(coding.suffix());
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn offer(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            http::header::ACCEPT_ENCODING,
            HeaderValue::from_str(v).unwrap(),
        );
        h
    }

    #[test]
    fn zstd_preferred_then_gzip_above_the_threshold() {
        assert_eq!(negotiate(&offer("gzip, zstd"), 2000), Coding::Zstd);
        assert_eq!(negotiate(&offer("zstd;q=0.1, gzip"), 2000), Coding::Zstd);
        assert_eq!(negotiate(&offer("zstd;q=0, gzip"), 2000), Coding::Gzip);
        assert_eq!(negotiate(&offer("gzip"), 2000), Coding::Gzip);
        assert_eq!(negotiate(&offer("br, deflate"), 2000), Coding::Identity);
        assert_eq!(negotiate(&offer("gzip, zstd"), 1023), Coding::Identity);
        assert_eq!(negotiate(&HeaderMap::new(), 2000), Coding::Identity);
    }
}
