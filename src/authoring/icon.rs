//! The media type of an icon's bytes, as `opm init` detects it: the magic numbers of the
//! `h2non/filetype` library (v1.1.3) that opm links, with the SVG matcher opm registers ahead of
//! every other. opm tries SVG first, then the application types (WebAssembly, Android DEX and
//! ODEX), then the image types; a match of another kind is refused as "not an image".
//!
//! Types filetype knows but that are neither images nor applications (archives, documents,
//! audio, video, fonts) are not recognised here: such a file is refused like any other
//! non-image, only its error names no type where opm's names it.

/// What the bytes are, by their MIME type (`image/png`); `Ok("")` when no matcher knows them.
/// `Err` for empty data, as filetype refuses an empty buffer.
pub fn detect(data: &[u8]) -> Result<&'static str, &'static str> {
    if data.is_empty() {
        return Err("Empty buffer");
    }
    if is_svg(data) {
        return Ok("image/svg+xml");
    }
    const APPLICATIONS: [Matcher; 3] = [
        (wasm, "application/wasm"),
        (dex, "application/vnd.android.dex"),
        (dey, "application/vnd.android.dey"),
    ];
    const IMAGES: [Matcher; 13] = [
        (jpeg, "image/jpeg"),
        (jpeg2000, "image/jp2"),
        (png, "image/png"),
        (gif, "image/gif"),
        (webp, "image/webp"),
        (cr2, "image/x-canon-cr2"),
        (tiff, "image/tiff"),
        (bmp, "image/bmp"),
        (jxr, "image/vnd.ms-photo"),
        (psd, "image/vnd.adobe.photoshop"),
        (ico, "image/vnd.microsoft.icon"),
        (heif, "image/heif"),
        (dwg, "image/vnd.dwg"),
    ];
    Ok(APPLICATIONS
        .iter()
        .chain(IMAGES.iter())
        .find(|(m, _)| m(data))
        .map(|(_, t)| *t)
        .unwrap_or(""))
}

/// A magic-number test and the MIME type it detects.
type Matcher = (fn(&[u8]) -> bool, &'static str);

fn starts(b: &[u8], magic: &[u8]) -> bool {
    b.starts_with(magic)
}

fn jpeg(b: &[u8]) -> bool {
    b.len() > 2 && starts(b, &[0xFF, 0xD8, 0xFF])
}
fn jpeg2000(b: &[u8]) -> bool {
    b.len() > 12
        && starts(
            b,
            &[0, 0, 0, 0xC, 0x6A, 0x50, 0x20, 0x20, 0xD, 0xA, 0x87, 0xA, 0],
        )
}
fn png(b: &[u8]) -> bool {
    b.len() > 3 && starts(b, &[0x89, b'P', b'N', b'G'])
}
fn gif(b: &[u8]) -> bool {
    b.len() > 2 && starts(b, b"GIF")
}
fn webp(b: &[u8]) -> bool {
    b.len() > 11 && &b[8..12] == b"WEBP"
}
fn tiff_header(b: &[u8]) -> bool {
    b.len() > 10 && (starts(b, &[0x49, 0x49, 0x2A, 0]) || starts(b, &[0x4D, 0x4D, 0, 0x2A]))
}
fn cr2(b: &[u8]) -> bool {
    tiff_header(b) && b[8] == 0x43 && b[9] == 0x52 && b[10] == 0x02
}
fn tiff(b: &[u8]) -> bool {
    tiff_header(b) && !cr2(b)
}
fn bmp(b: &[u8]) -> bool {
    b.len() > 1 && starts(b, b"BM")
}
fn jxr(b: &[u8]) -> bool {
    b.len() > 2 && starts(b, &[0x49, 0x49, 0xBC])
}
fn psd(b: &[u8]) -> bool {
    b.len() > 3 && starts(b, b"8BPS")
}
fn ico(b: &[u8]) -> bool {
    b.len() > 3 && starts(b, &[0, 0, 1, 0])
}
fn dwg(b: &[u8]) -> bool {
    b.len() > 3 && starts(b, b"AC10")
}

/// HEIF: an ISO base media file whose major brand is `heic`, or `mif1`/`msf1` with a
/// compatible brand `heic`.
fn heif(b: &[u8]) -> bool {
    if b.len() < 16 || &b[4..8] != b"ftyp" {
        return false;
    }
    let ftyp_len = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
    if b.len() < ftyp_len || b.len() < 17 {
        return false;
    }
    let major = &b[8..12];
    if major == b"heic" {
        return true;
    }
    (major == b"mif1" || major == b"msf1")
        && (16..ftyp_len)
            .step_by(4)
            .any(|i| b.len() >= i + 4 && &b[i..i + 4] == b"heic")
}

fn wasm(b: &[u8]) -> bool {
    starts(b, &[0, 0x61, 0x73, 0x6D, 1, 0, 0, 0])
}
fn dex(b: &[u8]) -> bool {
    b.len() > 36 && starts(b, b"dex\n") && b[36] == 0x70
}
fn dey(b: &[u8]) -> bool {
    b.len() > 100 && starts(b, b"dey\n") && dex(&b[40..100])
}

/// The SVG test opm registers (`h2non/go-is-svg`): not binary (no byte at or below 8 among
/// the first 24, for data of at least 24 bytes), and, once HTML comments are removed, an
/// optional `<?xml …>` and `<!doctype svg …>`, then `<svg …>`, text without `*`, and `</svg>`
/// with only whitespace around (case-insensitive).
fn is_svg(data: &[u8]) -> bool {
    if data.len() >= 24 && data[..24].iter().any(|&c| c <= 8) {
        return false;
    }
    let s = strip_comments(data);
    let ws = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0C);
    let skip_ws = |i: usize| i + s[i..].iter().take_while(|c| ws(c)).count();
    let tag_end = |i: usize| s[i..].iter().position(|&c| c == b'>').map(|p| i + p + 1);
    let prefixed =
        |i: usize, p: &[u8]| s.len() >= i + p.len() && s[i..i + p.len()].eq_ignore_ascii_case(p);
    let mut i = skip_ws(0);
    for optional in [&b"<?xml"[..], b"<!doctype svg"] {
        if prefixed(i, optional) {
            match tag_end(i + optional.len()) {
                Some(e) => i = skip_ws(e),
                None => return false,
            }
        }
    }
    if !prefixed(i, b"<svg") {
        return false;
    }
    let Some(body) = tag_end(i + 4) else {
        return false;
    };
    let rest = &s[body..];
    let trimmed = &rest[..rest.len() - rest.iter().rev().take_while(|c| ws(c)).count()];
    !rest.contains(&b'*')
        && trimmed.len() >= 6
        && trimmed[trimmed.len() - 6..].eq_ignore_ascii_case(b"</svg>")
}

/// `data` without its `<!--…-->` comments (each from its start to the first `-->`).
fn strip_comments(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    let mut i = 0;
    while i < data.len() {
        if data[i..].starts_with(b"<!--") {
            if let Some(end) = data[i + 4..].windows(3).position(|w| w == b"-->") {
                i += 4 + end + 3;
                continue;
            }
        }
        out.push(data[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_by_magic() {
        let svg = br#"<svg viewBox="0 0 100 100"><circle cx="25" cy="25" r="25"/></svg>"#;
        assert_eq!(detect(svg), Ok("image/svg+xml"));
        assert_eq!(
            detect(b"<?xml version=\"1.0\"?>\n<!-- a * star -->\n<SVG>x</SVG>\n"),
            Ok("image/svg+xml")
        );
        assert_eq!(detect(b"<svg>a*b</svg>"), Ok(""));
        assert_eq!(detect(&[0x89, b'P', b'N', b'G', 0x0D]), Ok("image/png"));
        assert_eq!(detect(&[0xFF, 0xD8, 0xFF, 0xE0]), Ok("image/jpeg"));
        assert_eq!(detect(b"GIF89a"), Ok("image/gif"));
        assert_eq!(detect(b"foo"), Ok(""));
        assert_eq!(detect(b""), Err("Empty buffer"));
        assert_eq!(
            detect(&[0, 0x61, 0x73, 0x6D, 1, 0, 0, 0]),
            Ok("application/wasm")
        );
    }
}
