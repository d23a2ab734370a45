//! Content digests, once: parsing and validating `ALGORITHM:HEX` (sha256, sha384 and sha512,
//! go-digest's known algorithms), computing them, a reader that verifies what it streams, and
//! cosign's tag form (`sha256:HEX` → `sha256-HEX`).
//!
//! Every digest opreg checks or computes goes through here, so that the rules (which
//! algorithms, lowercase hex, the length each algorithm gives) are written once; `sha2` is
//! used nowhere else.

use sha2::Digest as _;
use std::io::{self, Read, Write};

/// A hash algorithm opreg can check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    Sha256,
    Sha384,
    Sha512,
}

impl Algorithm {
    /// The algorithm of this name (`sha256`, `sha384`, `sha512`).
    pub fn from_name(name: &str) -> Option<Algorithm> {
        match name {
            "sha256" => Some(Algorithm::Sha256),
            "sha384" => Some(Algorithm::Sha384),
            "sha512" => Some(Algorithm::Sha512),
            _ => None,
        }
    }

    /// Its name, as in a digest.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Sha256 => "sha256",
            Algorithm::Sha384 => "sha384",
            Algorithm::Sha512 => "sha512",
        }
    }

    /// The number of hex digits its digests have.
    pub fn hex_len(self) -> usize {
        match self {
            Algorithm::Sha256 => 64,
            Algorithm::Sha384 => 96,
            Algorithm::Sha512 => 128,
        }
    }
}

/// Why a digest is refused, in go-digest's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    /// An algorithm-shaped name opreg has no hash for.
    #[error("unsupported digest algorithm")]
    Unsupported,
    #[error("invalid checksum digest length")]
    Length,
    #[error("invalid checksum digest format")]
    Format,
}

/// A valid digest's algorithm and hex (go-digest's `Digest.Validate`).
pub fn parse(d: &str) -> Result<(Algorithm, &str), Invalid> {
    let (name, hex) = d.split_once(':').ok_or(Invalid::Format)?;
    let Some(alg) = Algorithm::from_name(name) else {
        let generic = name.split(['+', '.', '_', '-']).all(|c| {
            !c.is_empty()
                && c.bytes()
                    .all(|x| x.is_ascii_lowercase() || x.is_ascii_digit())
        }) && hex
            .bytes()
            .all(|x| x.is_ascii_alphanumeric() || matches!(x, b'=' | b'_' | b'-'));
        return Err(if generic {
            Invalid::Unsupported
        } else {
            Invalid::Format
        });
    };
    if hex.len() != alg.hex_len() {
        return Err(Invalid::Length);
    }
    if !is_lower_hex(hex) {
        return Err(Invalid::Format);
    }
    Ok((alg, hex))
}

/// True when `d` is a valid digest (see [`parse`]).
pub fn is_valid(d: &str) -> bool {
    parse(d).is_ok()
}

/// The hex of `ALGORITHM:HEX` (or `d` itself when it has no `:`).
pub fn hex(d: &str) -> &str {
    d.split_once(':').map_or(d, |(_, h)| h)
}

/// `d`'s path relative to an OCI layout or blob store: `blobs/ALGORITHM/HEX`, for a valid
/// digest only (so a digest never names a path outside `blobs/`).
pub fn blob_path(d: &str) -> Option<std::path::PathBuf> {
    let (alg, hex) = parse(d).ok()?;
    Some(std::path::Path::new("blobs").join(alg.name()).join(hex))
}

/// cosign's tag form of a digest: `sha256:HEX` → `sha256-HEX` (the tags `.sig`, `.att` and
/// the OCI referrers fallback tag are built on it).
pub fn tag_form(d: &str) -> String {
    d.replacen(':', "-", 1)
}

fn is_lower_hex(s: &str) -> bool {
    s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// `sha256:HEX` of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    let mut h = Hasher::new(Algorithm::Sha256);
    h.update(bytes);
    h.digest()
}

/// True when `d` is a valid digest of `bytes`, in `d`'s own algorithm.
pub fn matches(d: &str, bytes: &[u8]) -> bool {
    parse(d).is_ok_and(|(alg, hex)| {
        let mut h = Hasher::new(alg);
        h.update(bytes);
        h.hex() == hex
    })
}

/// A digest being computed; also a [`Write`] sink (`io::copy` into it).
#[derive(Clone)]
pub enum Hasher {
    Sha256(sha2::Sha256),
    Sha384(sha2::Sha384),
    Sha512(sha2::Sha512),
}

impl Hasher {
    pub fn new(alg: Algorithm) -> Hasher {
        match alg {
            Algorithm::Sha256 => Hasher::Sha256(sha2::Sha256::new()),
            Algorithm::Sha384 => Hasher::Sha384(sha2::Sha384::new()),
            Algorithm::Sha512 => Hasher::Sha512(sha2::Sha512::new()),
        }
    }

    /// A SHA-256 hasher (what opreg computes for everything it writes).
    pub fn sha256() -> Hasher {
        Hasher::new(Algorithm::Sha256)
    }

    pub fn algorithm(&self) -> Algorithm {
        match self {
            Hasher::Sha256(_) => Algorithm::Sha256,
            Hasher::Sha384(_) => Algorithm::Sha384,
            Hasher::Sha512(_) => Algorithm::Sha512,
        }
    }

    pub fn update(&mut self, b: &[u8]) {
        match self {
            Hasher::Sha256(h) => h.update(b),
            Hasher::Sha384(h) => h.update(b),
            Hasher::Sha512(h) => h.update(b),
        }
    }

    /// The hex of what was hashed.
    pub fn hex(self) -> String {
        match self {
            Hasher::Sha256(h) => format!("{:x}", h.finalize()),
            Hasher::Sha384(h) => format!("{:x}", h.finalize()),
            Hasher::Sha512(h) => format!("{:x}", h.finalize()),
        }
    }

    /// `ALGORITHM:HEX` of what was hashed.
    pub fn digest(self) -> String {
        let name = self.algorithm().name();
        format!("{name}:{}", self.hex())
    }
}

impl Write for Hasher {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A stream hashed and counted as it is read. Reading past `size` (when given), or reaching
/// the end with another digest or size, is an [`io::ErrorKind::InvalidData`] error naming
/// the digest; every later read repeats it.
pub struct Verifying<R> {
    inner: R,
    expected: String,
    size: Option<u64>,
    hasher: Option<Hasher>,
    count: u64,
    failed: Option<String>,
}

impl<R: Read> Verifying<R> {
    /// Verifies `inner` against `digest` (refused here when it is not a valid digest) and,
    /// when given, `size`.
    pub fn new(inner: R, digest: &str, size: Option<u64>) -> io::Result<Verifying<R>> {
        let (alg, _) = parse(digest).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("unsupported or malformed digest {digest:?}: {e}"),
            )
        })?;
        Ok(Verifying {
            inner,
            expected: digest.to_string(),
            size,
            hasher: Some(Hasher::new(alg)),
            count: 0,
            failed: None,
        })
    }

    /// The bytes read so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The first failure, if any.
    pub fn failure(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    fn fail(&mut self, msg: String) -> io::Error {
        self.failed = Some(msg.clone());
        io::Error::new(io::ErrorKind::InvalidData, msg)
    }
}

impl<R: Read> Read for Verifying<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(f) = &self.failed {
            return Err(io::Error::new(io::ErrorKind::InvalidData, f.clone()));
        }
        let Some(hasher) = self.hasher.as_mut() else {
            return Ok(0);
        };
        if buf.is_empty() {
            return Ok(0);
        }
        let n = self.inner.read(buf)?;
        if n == 0 {
            let got = self.hasher.take().map(Hasher::digest).unwrap_or_default();
            let size_ok = self.size.is_none_or(|s| s == self.count);
            if !size_ok || got != self.expected {
                let expected = match self.size {
                    Some(s) => format!(", expected {s}"),
                    None => String::new(),
                };
                let msg = format!(
                    "blob digest mismatch for {}: got {got} ({} bytes{expected})",
                    self.expected, self.count
                );
                return Err(self.fail(msg));
            }
            return Ok(0);
        }
        hasher.update(&buf[..n]);
        self.count += n as u64;
        if let Some(size) = self.size.filter(|s| self.count > *s) {
            let msg = format!(
                "blob digest mismatch for {}: more than the {size} bytes its descriptor says",
                self.expected
            );
            return Err(self.fail(msg));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_known_algorithm_is_accepted_with_its_length() {
        for (alg, len) in [("sha256", 64), ("sha384", 96), ("sha512", 128)] {
            let d = format!("{alg}:{}", "a".repeat(len));
            let (got, hex) = parse(&d).unwrap();
            assert_eq!((got.name(), hex.len()), (alg, len));
            assert!(is_valid(&d));
            // One digit short or long is refused.
            assert_eq!(
                parse(&format!("{alg}:{}", "a".repeat(len - 1))),
                Err(Invalid::Length)
            );
            assert_eq!(
                parse(&format!("{alg}:{}", "a".repeat(len + 1))),
                Err(Invalid::Length)
            );
        }
    }

    #[test]
    fn malformed_and_unknown_digests_are_refused() {
        let a64 = "a".repeat(64);
        assert_eq!(
            parse(&format!("sha256:{}", "A".repeat(64))),
            Err(Invalid::Format)
        );
        assert_eq!(
            parse(&format!("sha256:{}", "g".repeat(64))),
            Err(Invalid::Format)
        );
        assert_eq!(parse(&a64), Err(Invalid::Format), "no algorithm");
        assert_eq!(parse(&format!("md5:{a64}")), Err(Invalid::Unsupported));
        assert_eq!(parse(&format!("Sha256:{a64}")), Err(Invalid::Format));
        assert_eq!(parse(""), Err(Invalid::Format));
        assert!(!is_valid("sha256:"));
        assert_eq!(blob_path("sha256:../../etc"), None);
    }

    #[test]
    fn computes_known_values() {
        assert_eq!(
            sha256(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let mut h = Hasher::new(Algorithm::Sha384);
        h.write_all(b"abc").unwrap();
        assert!(h.digest().starts_with("sha384:cb00753f45a35e8b"));
        let mut h = Hasher::new(Algorithm::Sha512);
        h.update(b"abc");
        let d = h.digest();
        assert!(d.starts_with("sha512:ddaf35a193617aba"));
        assert!(is_valid(&d));
        assert!(matches(&d, b"abc"));
        assert!(!matches(&d, b"abd"));
        assert!(matches(&sha256(b""), b""));
    }

    #[test]
    fn paths_hex_and_tag_form() {
        let d = format!("sha512:{}", "b".repeat(128));
        assert_eq!(
            blob_path(&d).unwrap(),
            std::path::Path::new("blobs/sha512").join("b".repeat(128))
        );
        assert_eq!(hex(&d), "b".repeat(128));
        assert_eq!(tag_form("sha256:ab"), "sha256-ab");
    }

    fn read_all(r: &mut impl Read) -> io::Result<Vec<u8>> {
        let mut v = Vec::new();
        r.read_to_end(&mut v).map(|_| v)
    }

    #[test]
    fn the_verifying_reader_passes_the_right_bytes_and_refuses_others() {
        let d = sha256(b"hello");
        let mut ok = Verifying::new(&b"hello"[..], &d, Some(5)).unwrap();
        assert_eq!(read_all(&mut ok).unwrap(), b"hello");
        assert_eq!(ok.count(), 5);

        let mut wrong = Verifying::new(&b"hellO"[..], &d, None).unwrap();
        let e = read_all(&mut wrong).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("blob digest mismatch"), "{e}");
        assert!(wrong.failure().is_some());
        // A failure sticks.
        assert!(wrong.read(&mut [0u8; 4]).is_err());

        let mut long = Verifying::new(&b"hello!"[..], &d, Some(5)).unwrap();
        let e = read_all(&mut long).unwrap_err();
        assert!(e.to_string().contains("more than the 5 bytes"), "{e}");

        let mut short = Verifying::new(&b"hello"[..], &d, Some(6)).unwrap();
        assert!(
            read_all(&mut short).is_err(),
            "the right bytes, the wrong size"
        );

        assert!(Verifying::new(&b""[..], "sha256:xyz", None).is_err());
    }
}
