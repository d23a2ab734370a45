//! Errors as plain strings: `Result<_, String>` carries no kind a caller can match and no
//! source chain. The library returns typed errors (`thiserror` enums) or `error::Error`; a few
//! private helpers may keep a string, and no `pub fn` a user of the library can reach does.

use super::{check, check_sources, fails_on, sources, Source};
use std::collections::BTreeSet;

/// The most `Result<_, String>` the library may hold (today's count, test code left out): private
/// helpers whose string is wrapped by their caller. May only shrink.
const MOST_STRING_RESULTS: usize = 8;

/// Files with a reachable `pub fn` returning `Result<_, String>`: none.
const PUB_STRING_RESULTS_TODAY: &[&str] = &[];

/// How many times `code` spells a `Result` whose error type is `String`.
fn string_results(code: &str) -> usize {
    let mut n = 0;
    for (i, _) in code.match_indices("Result<") {
        if code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue; // `ParseResult<`, `io::Result` is fine (`::` before is allowed)
        }
        if let Some(args) = generic_args(&code[i + "Result<".len()..]) {
            if args.len() == 2 && args[1] == "String" {
                n += 1;
            }
        }
    }
    n
}

/// The top-level arguments of a generic list whose `<` was just read, trimmed.
fn generic_args(rest: &str) -> Option<Vec<String>> {
    let mut depth = 0usize;
    let mut args = Vec::new();
    let mut current = String::new();
    let mut prev = ' ';
    for c in rest.chars() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' if prev == '-' => {}
            '>' | ')' | ']' if depth == 0 => {
                args.push(current.trim().to_string());
                return Some(args);
            }
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                args.push(current.trim().to_string());
                current.clear();
                prev = c;
                continue;
            }
            _ => {}
        }
        current.push(c);
        prev = c;
    }
    None
}

/// The files of the library's public modules: `lib.rs`, and each file a `pub mod x;` of a
/// public file declares.
fn public_files(sources: &[Source]) -> BTreeSet<String> {
    let rels: BTreeSet<&str> = sources.iter().map(|s| s.rel.as_str()).collect();
    let mut public = BTreeSet::new();
    let mut todo = vec!["lib.rs".to_string()];
    while let Some(f) = todo.pop() {
        if !rels.contains(f.as_str()) || !public.insert(f.clone()) {
            continue;
        }
        let dir = match f.rsplit_once('/') {
            _ if f == "lib.rs" => String::new(),
            Some((d, "mod.rs")) => format!("{d}/"),
            _ => format!("{}/", f.trim_end_matches(".rs")),
        };
        let s = sources.iter().find(|s| s.rel == f).unwrap();
        for l in s.code().lines().map(str::trim) {
            if let Some(m) = l.strip_prefix("pub mod ").and_then(|m| m.strip_suffix(';')) {
                todo.push(format!("{dir}{m}.rs"));
                todo.push(format!("{dir}{m}/mod.rs"));
            }
        }
    }
    public
}

/// The `pub fn`s of a source whose signature returns `Result<_, String>`.
fn pub_fns_returning_strings(s: &Source) -> Vec<String> {
    let code = s.code();
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        let Some(rest) = [
            "pub fn ",
            "pub async fn ",
            "pub const fn ",
            "pub unsafe fn ",
        ]
        .iter()
        .find_map(|p| t.strip_prefix(p)) else {
            continue;
        };
        let mut signature = String::new();
        for next in &lines[i..] {
            let end = next.find(['{', ';']);
            signature.push_str(&next[..end.unwrap_or(next.len())]);
            signature.push(' ');
            if end.is_some() {
                break;
            }
        }
        let returns = signature.split_once("->").map_or("", |(_, r)| r);
        if string_results(returns) > 0 {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push(name);
        }
    }
    out
}

fn public_string_results(public: &BTreeSet<String>, s: &Source) -> Option<String> {
    if !public.contains(&s.rel) {
        return None;
    }
    let fns = pub_fns_returning_strings(s);
    (!fns.is_empty()).then(|| {
        format!(
            "pub fn {} returns Result<_, String> (return a typed error or error::Error)",
            fns.join(", pub fn ")
        )
    })
}

fn count_string_results(sources: &[Source], most: usize) -> Result<(), String> {
    let n: usize = sources.iter().map(|s| string_results(&s.code())).sum();
    println!("Result<_, String>: {n} in the library, at most {most}");
    if n > most {
        return Err(format!(
            "the library spells Result<_, String> {n} times; at most {most} may remain"
        ));
    }
    Ok(())
}

#[test]
fn few_results_carry_a_string() {
    count_string_results(&sources(), MOST_STRING_RESULTS).unwrap();
}

#[test]
fn no_public_function_returns_a_string_error() {
    let all = sources();
    let public = public_files(&all);
    check(
        "no pub fn of a public module returns Result<_, String>",
        PUB_STRING_RESULTS_TODAY,
        |s| public_string_results(&public, s),
    );
}

#[test]
fn the_string_error_rules_fail_on_planted_results() {
    let planted = [
        Source::planted("lib.rs", "pub mod store;\nmod cli;\n"),
        Source::planted("store/mod.rs", "pub mod list;\nmod build;\n"),
        Source::planted(
            "store/list.rs",
            "pub fn rows(\n    a: u8,\n) -> Result<Vec<(u8, String)>, String> {\n    todo!()\n}\npub(crate) fn f() -> Result<(), String> {}\n",
        ),
        Source::planted("store/build.rs", "pub fn b() -> Result<(), String> {}\n"),
        Source::planted("cli/mod.rs", "pub fn run() -> Result<(), String> {}\n"),
        Source::planted("store/x.rs", "pub fn ok() -> Result<HashMap<String, u8>, Error> {}\n"),
    ];
    let public = public_files(&planted);
    fails_on(
        check_sources("pub", &[], &planted, |s| public_string_results(&public, s)),
        "src/store/list.rs: pub fn rows returns Result<_, String>",
    );
    let e = check_sources("pub", &[], &planted, |s| public_string_results(&public, s));
    assert!(
        !e.unwrap_err().contains("build.rs"),
        "store::build is private"
    );
    fails_on(
        count_string_results(&planted, 3),
        "spells Result<_, String> 4 times; at most 3",
    );
    assert_eq!(count_string_results(&planted, 4), Ok(()));
}
