//! Comments left out of Rust source, by a small lexer that knows where a comment cannot begin:
//! inside a string literal (`"https://…"`), a raw string (`r#"…"#`), a byte or C string, or a
//! char literal (`'"'`). Block comments nest (`/* /* */ */`). A lifetime or a label (`'a`) is
//! not a char literal.
//!
//! Each comment becomes spaces, its line breaks kept, so that line numbers and columns of the
//! code stay where they were; everything else, string contents included, is kept as it is.

/// `text` with every comment (line, block, doc) replaced by spaces, line breaks kept.
pub(crate) fn strip_comments(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(if b[i] == '\n' { '\n' } else { ' ' });
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(&b, i) {
            // r"…", r#"…"#, br"…", cr"…": no escapes; ends at `"` and the same number of `#`.
            let open = i + raw_prefix_len(&b, i) + hashes + 1;
            let mut j = open;
            while j < b.len() {
                if b[j] == '"' && (1..=hashes).all(|k| b.get(j + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.extend(&b[i..j.min(b.len())]);
            i = j;
        } else if c == '"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != '"' {
                j += if b[j] == '\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(b.len());
            out.extend(&b[i..end]);
            i = end;
        } else if c == '\'' {
            let end = char_literal_end(&b, i).unwrap_or(i + 1);
            out.extend(&b[i..end]);
            i = end;
        } else if is_ident(c) {
            // A whole identifier, so that an `r` inside one never starts a raw string (a raw
            // string's own prefix was taken above).
            let mut j = i;
            while j < b.len() && is_ident(b[j]) {
                j += 1;
            }
            out.extend(&b[i..j]);
            i = j;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The length of a raw string's prefix at `i` (`r`, `br`, `cr`), if one begins there.
fn raw_prefix_len(b: &[char], i: usize) -> usize {
    match (b.get(i), b.get(i + 1)) {
        (Some('r'), _) => 1,
        (Some('b' | 'c'), Some('r')) => 2,
        _ => 0,
    }
}

/// When a raw string begins at `i` (not inside an identifier): its number of `#`.
fn raw_string_start(b: &[char], i: usize) -> Option<usize> {
    if i > 0 && is_ident(b[i - 1]) {
        return None;
    }
    let p = raw_prefix_len(b, i);
    if p == 0 {
        return None;
    }
    let hashes = b[i + p..].iter().take_while(|c| **c == '#').count();
    (b.get(i + p + hashes) == Some(&'"')).then_some(hashes)
}

/// The end of a char literal beginning at `i` (`'x'`, `'\n'`, `'\u{1F600}'`, `'"'`); `None` for
/// a lifetime or a label (`'a`, `'static`).
fn char_literal_end(b: &[char], i: usize) -> Option<usize> {
    match b.get(i + 1)? {
        '\\' => {
            let mut j = i + 2;
            while j < b.len() && b[j] != '\'' && b[j] != '\n' {
                j += 1;
            }
            (b.get(j) == Some(&'\'')).then_some(j + 1)
        }
        '\n' => None,
        _ => (b.get(i + 2) == Some(&'\'')).then_some(i + 3),
    }
}

#[test]
fn line_and_doc_comments_go() {
    let text = "let a = 1; // a comment\n/// doc\n//! inner\nlet b = 2;";
    assert_eq!(
        strip_comments(text),
        format!(
            "let a = 1; {}\n{}\n{}\nlet b = 2;",
            " ".repeat(12),
            " ".repeat(7),
            " ".repeat(9)
        )
    );
}

#[test]
fn a_url_in_a_string_is_not_a_comment() {
    let text = r#"const HUB: &str = "https://registry-1.docker.io"; // the hub"#;
    let code = strip_comments(text);
    assert!(code.contains("\"https://registry-1.docker.io\";"), "{code}");
    assert!(!code.contains("the hub"), "{code}");
}

#[test]
fn escaped_quotes_do_not_end_a_string() {
    let code = strip_comments(r#"let s = "a \" // b"; // c"#);
    assert!(code.contains(r#""a \" // b";"#), "{code}");
    assert!(!code.contains('c'), "{code}");
}

#[test]
fn raw_strings_end_at_their_own_hashes() {
    let text = "let s = r#\"a \" // b\"#; // c\nlet t = br\"//x\"; let u = r##\"\"# //\"##;";
    let code = strip_comments(text);
    assert!(code.contains("r#\"a \" // b\"#;"), "{code}");
    assert!(code.contains("br\"//x\";"), "{code}");
    assert!(code.contains("r##\"\"# //\"##;"), "{code}");
    assert!(!code.contains('c'), "{code}");
}

#[test]
fn an_identifier_ending_in_r_does_not_start_a_raw_string() {
    let code = strip_comments("let hr = 1; for_r#\"x\"; // gone");
    assert!(!code.contains("gone"), "{code}");
}

#[test]
fn a_quote_in_a_char_literal_opens_no_string() {
    let code = strip_comments("let q = '\"'; let e = '\\''; // gone\nlet u = '\\u{22}'; // gone");
    assert!(code.contains("'\"';"), "{code}");
    assert!(code.contains("'\\'';"), "{code}");
    assert!(!code.contains("gone"), "{code}");
}

#[test]
fn a_lifetime_is_not_a_char_literal() {
    let text =
        "fn f<'a>(x: &'a str) -> &'a str { x } // gone\n'outer: loop { break 'outer; } // gone";
    let code = strip_comments(text);
    assert!(
        code.contains("fn f<'a>(x: &'a str) -> &'a str { x }"),
        "{code}"
    );
    assert!(code.contains("'outer: loop { break 'outer; }"), "{code}");
    assert!(!code.contains("gone"), "{code}");
}

#[test]
fn block_comments_nest() {
    let text = "a /* one /* two */ still \"comment */ b /* x */ c";
    let code = strip_comments(text);
    assert_eq!(code.split_whitespace().collect::<Vec<_>>(), ["a", "b", "c"]);
    assert_eq!(code.len(), text.len());
}

#[test]
fn block_comments_keep_line_breaks() {
    let code = strip_comments("a /* x\ny\n */ b\nc");
    assert_eq!(code.lines().count(), 4);
    assert_eq!(code.lines().last(), Some("c"));
}

#[test]
fn comment_markers_inside_strings_are_kept() {
    let code = strip_comments("let s = \"/* not */ // not\"; let c = '/';");
    assert!(code.contains("\"/* not */ // not\";"), "{code}");
    assert!(code.contains("'/';"), "{code}");
}
