//! Rules that confine a kind of code to the one module that owns it: stderr and exiting, files
//! put in place, digests, the HTTP client and the one function that sends a request, and
//! errors as plain strings.
//!
//! An allow-list here names today's files that break a rule because the module that will own
//! the code is being written elsewhere. It may only shrink: an entry that keeps the rule fails
//! the test, so it is taken out as soon as its code moves.

use super::{check, check_sources, fails_on, functions, names_crate, under, uses, Source};
use std::collections::BTreeSet;

/// `eprint!`/`eprintln!` and exiting the process: only `main` and the CLI's output module.
const STDERR_AND_EXIT: &[&str] = &["eprint!", "eprintln!", "process::exit"];
const STDERR_AND_EXIT_PLACES: &[&str] = &["main.rs", "cli/output.rs"];

fn writes_stderr_or_exits(s: &Source) -> Option<String> {
    if under(&s.rel, STDERR_AND_EXIT_PLACES) {
        return None;
    }
    let found = uses(&s.code(), STDERR_AND_EXIT);
    (!found.is_empty()).then(|| format!("uses {} (report through cli::output)", found.join(", ")))
}

#[test]
fn only_main_and_cli_output_write_stderr_or_exit() {
    check(
        "eprint!, eprintln! and process::exit only in main.rs and cli/output.rs",
        &[],
        writes_stderr_or_exits,
    );
}

#[test]
fn the_stderr_rule_fails_on_a_planted_exit() {
    let planted = [
        Source::planted("main.rs", "fn main() { std::process::exit(2) }\n"),
        Source::planted(
            "cli/list.rs",
            "fn f() { eprintln!(\"oops\"); std::process::exit(1) }\n",
        ),
        Source::planted(
            "cli/mod.rs",
            "// eprintln!, which panics\nconst S: &str = \"//\";\n",
        ),
    ];
    let result = check_sources("stderr", &[], &planted, writes_stderr_or_exits);
    fails_on(
        result.clone(),
        "src/cli/list.rs: uses eprintln!, process::exit",
    );
    assert!(!result.unwrap_err().contains("cli/mod.rs"));
}

/// Putting a file in place (`persist(`, `rename(`): only the atomic module.
const PUTS_IN_PLACE: &[&str] = &["persist(", "rename("];
const ATOMIC: &[&str] = &["atomic.rs"];
/// May only shrink; emptied when the atomic module (`src/atomic.rs`) lands.
const PUTS_IN_PLACE_TODAY: &[&str] = &[];

fn puts_files_in_place(s: &Source) -> Option<String> {
    if under(&s.rel, ATOMIC) {
        return None;
    }
    let found = uses(&s.code(), PUTS_IN_PLACE);
    (!found.is_empty()).then(|| format!("calls {} (use crate::atomic)", found.join(", ")))
}

#[test]
fn only_the_atomic_module_puts_files_in_place() {
    check(
        "persist( and rename( only in atomic.rs",
        PUTS_IN_PLACE_TODAY,
        puts_files_in_place,
    );
}

#[test]
fn the_atomic_rule_fails_on_a_planted_rename() {
    let planted = [
        Source::planted(
            "atomic.rs",
            "fn f() { tmp.persist(p); std::fs::rename(a, b); }\n",
        ),
        Source::planted(
            "mirror/disk.rs",
            "fn f() { std::fs::rename(&tmp, &to)?; }\n",
        ),
        Source::planted(
            "store/mod.rs",
            "fn f() { t.persist_noclobber(p); x.renamed(); }\n",
        ),
    ];
    let result = check_sources("atomic", &[], &planted, puts_files_in_place);
    fails_on(result.clone(), "src/mirror/disk.rs: calls rename(");
    assert!(!result.unwrap_err().contains("store/mod.rs"));
}

/// Computing a digest: only the digest module.
const COMPUTES_DIGESTS: &[&str] = &["Sha256::", "Sha384::", "Sha512::"];
const DIGEST: &[&str] = &["digest.rs"];
/// May only shrink; emptied when the digest module (`src/digest.rs`) lands.
const COMPUTES_DIGESTS_TODAY: &[&str] = &[];

fn computes_digests(s: &Source) -> Option<String> {
    if under(&s.rel, DIGEST) {
        return None;
    }
    let code = s.code();
    let mut found = uses(&code, COMPUTES_DIGESTS);
    if names_crate(&code, "sha2") {
        found.insert(0, "sha2");
    }
    (!found.is_empty()).then(|| format!("uses {} (use crate::digest)", found.join(", ")))
}

#[test]
fn only_the_digest_module_computes_digests() {
    check(
        "sha2 and digest computation only in digest.rs",
        COMPUTES_DIGESTS_TODAY,
        computes_digests,
    );
}

#[test]
fn the_digest_rule_fails_on_a_planted_hash() {
    let planted = [
        Source::planted("digest.rs", "use sha2::{Digest, Sha256};\n"),
        Source::planted(
            "mirror/plan.rs",
            "fn f(b: &[u8]) { let d = sha2::Sha256::digest(b); }\n",
        ),
        Source::planted("image/kind.rs", "fn f() { let h = Sha512::new(); }\n"),
        Source::planted(
            "sign/mod.rs",
            "/// sha2::Sha256 in a comment\nconst A: &str = \"sha256\";\n",
        ),
    ];
    let result = check_sources("digest", &[], &planted, computes_digests);
    fails_on(result.clone(), "src/mirror/plan.rs: uses sha2, Sha256::");
    fails_on(result.clone(), "src/image/kind.rs: uses Sha512::");
    assert!(!result.unwrap_err().contains("sign/mod.rs"));
}

/// ureq's methods that send a request.
const SENDS: &[&str] = &[".call()", ".send_empty()", ".send_json("];
const TRANSPORT: &[&str] = &["registry/"];
/// May only shrink; emptied when the transport module (`registry`) lands.
const SENDS_TODAY: &[&str] = &[];

/// The functions of a source that send a request: `file::fn` for each.
fn send_functions(s: &Source) -> BTreeSet<String> {
    let code = s.code();
    let lines: Vec<String> = code.lines().map(String::from).collect();
    let fns = functions(&lines);
    let mut out = BTreeSet::new();
    for (i, l) in lines.iter().enumerate() {
        if SENDS.iter().any(|m| l.contains(m)) {
            // The innermost function around the line: the last to begin before it.
            let name = fns
                .iter()
                .filter(|(_, first, len)| *first <= i + 1 && i < first + len - 1)
                .max_by_key(|(_, first, _)| *first)
                .map_or("(outside a function)", |(n, _, _)| n.as_str());
            out.insert(format!("{}::{name}", s.rel));
        }
    }
    out
}

fn sends_outside_the_transport(s: &Source) -> Option<String> {
    if under(&s.rel, TRANSPORT) {
        return None;
    }
    let sends = send_functions(s);
    (!sends.is_empty()).then(|| {
        let sends: Vec<String> = sends.into_iter().collect();
        format!("sends requests in {} (outside registry/)", sends.join(", "))
    })
}

/// Every function of the transport that sends a request: there must be one.
fn transport_senders(sources: &[Source]) -> Result<(), String> {
    let senders: BTreeSet<String> = sources
        .iter()
        .filter(|s| under(&s.rel, TRANSPORT))
        .flat_map(send_functions)
        .collect();
    if senders.len() > 1 {
        let senders: Vec<String> = senders.into_iter().collect();
        return Err(format!(
            "every request goes through one send function, but {} send: {}",
            senders.len(),
            senders.join(", ")
        ));
    }
    Ok(())
}

#[test]
fn requests_are_sent_only_by_the_transport() {
    check(
        "requests are sent only in registry/",
        SENDS_TODAY,
        sends_outside_the_transport,
    );
}

#[test]
fn the_transport_sends_from_one_function() {
    transport_senders(&super::sources()).unwrap();
}

#[test]
fn the_send_rules_fail_on_a_planted_request() {
    let planted = [
        Source::planted(
            "registry/send.rs",
            "fn send(r: Req) -> R {\n    r.call()\n}\n\nfn head(r: Req) -> R {\n    let x = 1;\n    r.send_empty()\n}\n",
        ),
        Source::planted("mirror/run.rs", "fn go(a: &Agent) {\n    a.get(u).call();\n}\n"),
    ];
    fails_on(
        check_sources("send", &[], &planted, sends_outside_the_transport),
        "src/mirror/run.rs: sends requests in mirror/run.rs::go (outside registry/)",
    );
    fails_on(
        transport_senders(&planted),
        "2 send: registry/send.rs::head, registry/send.rs::send",
    );
    let one = [Source::planted(
        "registry/send.rs",
        "fn send(r: Req) -> R {\n    r.call()\n}\n",
    )];
    assert_eq!(transport_senders(&one), Ok(()));
}
