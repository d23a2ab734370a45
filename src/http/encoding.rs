//! Content codings as catalogd's `gzhttp` handler chooses them: `zstd` when the client offers
//! it, else `gzip`, else the bytes as they are, and only for bodies of at least
//! [`super::GZIP_MIN_SIZE`] bytes. Every answer says `Vary: Accept-Encoding`.
//!
//! A served version's whole file is compressed once, when the version is written
//! ([`write_variants`]), so `/api/v1/all` costs no compression per request; a filtered `/metas`
//! answer is compressed when it is sent ([`compress`]).

use anyhow::{Context, Result};
use http::HeaderMap;
use std::io::Write;
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

/// `bytes` in `coding`.
pub fn compress(coding: Coding, bytes: &[u8]) -> Vec<u8> {
    match coding {
        Coding::Identity => bytes.to_vec(),
        Coding::Gzip => {
            let mut e = flate2::write::GzEncoder::new(
                Vec::with_capacity(bytes.len() / 4),
                flate2::Compression::new(GZIP_LEVEL),
            );
            // Writing to a Vec cannot fail.
            let _ = e.write_all(bytes);
            e.finish().unwrap_or_default()
        }
        Coding::Zstd => {
            ruzstd::encoding::compress_to_vec(bytes, ruzstd::encoding::CompressionLevel::Fastest)
        }
    }
}

/// gzhttp's default level (klauspost's `gzip.DefaultCompression`, which is 5).
const GZIP_LEVEL: u32 = 5;

/// The path of `file`'s copy in `coding`.
pub fn variant_path(file: &Path, coding: Coding) -> PathBuf {
    let mut s = file.as_os_str().to_owned();
    s.push(coding.suffix());
    PathBuf::from(s)
}

/// Writes `file`'s gzip and zstd copies beside it (streaming: the file is never in memory
/// whole); returns their sizes (gzip, zstd).
pub fn write_variants(file: &Path) -> Result<(u64, u64)> {
    let open = || {
        std::fs::File::open(file)
            .map(|f| std::io::BufReader::with_capacity(1 << 16, f))
            .with_context(|| format!("cannot open {}", file.display()))
    };
    let gz_path = variant_path(file, Coding::Gzip);
    {
        let out = create(&gz_path)?;
        let mut e = flate2::write::GzEncoder::new(out, flate2::Compression::new(GZIP_LEVEL));
        std::io::copy(&mut open()?, &mut e)
            .and_then(|_| e.finish())
            .and_then(|mut w| w.flush())
            .with_context(|| format!("cannot write {}", gz_path.display()))?;
    }
    let zst_path = variant_path(file, Coding::Zstd);
    {
        let mut out = create(&zst_path)?;
        ruzstd::encoding::compress(
            open()?,
            &mut out,
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        out.flush()
            .with_context(|| format!("cannot write {}", zst_path.display()))?;
    }
    Ok((
        std::fs::metadata(&gz_path)?.len(),
        std::fs::metadata(&zst_path)?.len(),
    ))
}

fn create(p: &Path) -> Result<std::io::BufWriter<std::fs::File>> {
    std::fs::File::create(p)
        .map(|f| std::io::BufWriter::with_capacity(1 << 16, f))
        .with_context(|| format!("cannot create {}", p.display()))
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

    #[test]
    fn variants_decode_to_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("all.jsonl");
        let body: String = (0..500).map(|i| format!("{{\"n\":{i}}}\n")).collect();
        std::fs::write(&p, &body).unwrap();
        write_variants(&p).unwrap();
        let gz = std::fs::read(variant_path(&p, Coding::Gzip)).unwrap();
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut out).unwrap();
        assert_eq!(out, body.as_bytes());
        let zst = std::fs::read(variant_path(&p, Coding::Zstd)).unwrap();
        let mut out = Vec::new();
        std::io::Read::read_to_end(
            &mut ruzstd::decoding::StreamingDecoder::new(&zst[..]).unwrap(),
            &mut out,
        )
        .unwrap();
        assert_eq!(out, body.as_bytes());
        assert_eq!(compress(Coding::Identity, b"x"), b"x");
    }
}
