//! Policy parsing and scope lookup, with containers/image's cases (`policy_config_test.go`,
//! `policy_eval_test.go`: the same inputs, the same verdicts) where they use requirements opreg
//! reads, and the verdicts on signatures made here.

use super::*;
use crate::sign::keys;
use base64::engine::general_purpose::STANDARD as B64;

fn key_data() -> (p256::ecdsa::SigningKey, String) {
    let k = keys::generate();
    let pem = keys::public_key_pem(k.verifying_key()).unwrap();
    (k, B64.encode(pem))
}

fn sigstore(data: &str, extra: &str) -> String {
    format!(r#"{{"type":"sigstoreSigned","keyData":"{data}"{extra}}}"#)
}

#[test]
fn scopes_are_looked_up_most_specific_first() {
    let mut scopes = String::new();
    for s in [
        "",
        "unmatched",
        "deep.com",
        "*.very.deep.com",
        "*.deep.com",
        "deep.com/n1",
        "deep.com/n1/n2",
        "deep.com/n1/n2/n3",
        "deep.com/n1/n2/n3/repo",
        "deep.com/n1/n2/n3/repo:tag2",
    ] {
        scopes.push_str(&format!(r#""{s}":[{{"type":"insecureAcceptAnything"}}],"#));
    }
    scopes.pop();
    let text = format!(
        r#"{{"default":[{{"type":"reject"}}],"transports":{{"docker":{{{scopes}}},"atomic":{{"unmatched":[{{"type":"reject"}}]}}}}}}"#
    );
    let p = Policy::from_bytes(text.as_bytes()).unwrap();
    for (input, matched) in [
        ("deep.com/n1/n2/n3/repo:tag2", "deep.com/n1/n2/n3/repo:tag2"),
        ("deep.com/n1/n2/n3/repo:nottag2", "deep.com/n1/n2/n3/repo"),
        ("deep.com/n1/n2/n3/notrepo:tag2", "deep.com/n1/n2/n3"),
        ("deep.com/n1/n2/notn3/repo:tag2", "deep.com/n1/n2"),
        ("deep.com/n1/notn2/n3/repo:tag2", "deep.com/n1"),
        ("deep.com/notn1/n2/n3/repo:tag2", "deep.com"),
        ("very.deep.com/n1/n2/n3/repo:tag2", "*.deep.com"),
        ("not.very.deep.com/n1/n2/n3/repo:tag2", "*.very.deep.com"),
        ("this.does-not/match:anything", ""),
    ] {
        let n = Named::parse(input).unwrap();
        let (scope, _) = p.requirements_for(&Subject::Registry(&n));
        assert_eq!(scope, format!("transports.docker[{matched:?}]"), "{input}");
    }
    // Without a "" scope, the global default.
    let p = Policy::from_bytes(
        br#"{"default":[{"type":"reject"}],"transports":{"docker":{"a.com":[{"type":"insecureAcceptAnything"}]}}}"#,
    )
    .unwrap();
    let n = Named::parse("this.does-not/match:anything").unwrap();
    assert_eq!(p.requirements_for(&Subject::Registry(&n)).0, "default");
    assert_eq!(p.requirements_for(&Subject::Layout).0, "default");
}

#[test]
fn malformed_policies_are_refused() {
    let (_, data) = key_data();
    let ok = r#"[{"type":"insecureAcceptAnything"}]"#;
    for bad in [
        String::new(),
        "&".into(),
        "[]".into(),
        "{}".into(),
        format!(r#"{{"default":{ok},"unexpected":1}}"#),
        r#"{"default":1}"#.into(),
        r#"{"default":{}}"#.into(),
        r#"{"default":[]}"#.into(),
        format!(r#"{{"default":{ok},"transports":1}}"#),
        format!(r#"{{"default":{ok},"transports":{{"docker":1}}}}"#),
        format!(r#"{{"default":{ok},"transports":{{"docker":{{"a.com":[]}}}}}}"#),
        format!(r#"{{"default":{ok},"default":{ok}}}"#),
        format!(r#"{{"default":{ok},"transports":{{"docker":{{"a.com":{ok},"a.com":{ok}}}}}}}"#),
        r#"{"default":[{"type":"insecureAcceptAnything","x":1}]}"#.into(),
        r#"{"default":[{"type":"reject","x":1}]}"#.into(),
        r#"{"default":[{"type":"unknown"}]}"#.into(),
        r#"{"default":[{}]}"#.into(),
        r#"{"default":[1]}"#.into(),
        // sigstoreSigned: no key, two kinds of key, bad key data, unknown key, empty lists
        r#"{"default":[{"type":"sigstoreSigned"}]}"#.into(),
        format!(
            r#"{{"default":[{{"type":"sigstoreSigned","keyData":"{data}","keyDatas":["{data}"]}}]}}"#
        ),
        r#"{"default":[{"type":"sigstoreSigned","keyData":"not base64!"}]}"#.into(),
        format!(r#"{{"default":[{}]}}"#, sigstore(&data, r#","unknown":1"#)),
        r#"{"default":[{"type":"sigstoreSigned","keyDatas":[]}]}"#.into(),
        r#"{"default":[{"type":"sigstoreSigned","keyPaths":[]}]}"#.into(),
        r#"{"default":[{"type":"sigstoreSigned","keyPath":"/nonexistent/cosign.pub"}]}"#.into(),
        // signedIdentity: unknown type, extra field, invalid references
        format!(
            r#"{{"default":[{}]}}"#,
            sigstore(&data, r#","signedIdentity":{"type":"x"}"#)
        ),
        format!(
            r#"{{"default":[{}]}}"#,
            sigstore(&data, r#","signedIdentity":{"type":"matchExact","x":1}"#)
        ),
        format!(
            r#"{{"default":[{}]}}"#,
            sigstore(
                &data,
                r#","signedIdentity":{"type":"exactReference","dockerReference":"busybox"}"#
            )
        ),
        format!(
            r#"{{"default":[{}]}}"#,
            sigstore(
                &data,
                r#","signedIdentity":{"type":"exactReference","dockerReference":"UPPER:1"}"#
            )
        ),
        format!(
            r#"{{"default":[{}]}}"#,
            sigstore(
                &data,
                r#","signedIdentity":{"type":"exactRepository","dockerRepository":"UPPER"}"#
            )
        ),
        format!(
            r#"{{"default":[{}]}}"#,
            sigstore(
                &data,
                r#","signedIdentity":{"type":"remapIdentity","prefix":"a.com/","signedPrefix":"b.com"}"#
            )
        ),
    ] {
        assert!(Policy::from_bytes(bad.as_bytes()).is_err(), "{bad}");
    }
}

#[test]
fn unsupported_requirements_say_so() {
    let (_, data) = key_data();
    for (text, says) in [
        (r#"{"default":[{"type":"signedBy","keyType":"GPGKeys","keyPath":"/k"}]}"#.to_string(), "signedBy (GPG signatures) is not supported yet"),
        (r#"{"default":[{"type":"signedBaseLayer"}]}"#.into(), "signedBaseLayer is not supported yet"),
        (format!(r#"{{"default":[{}]}}"#, sigstore(&data, r#","rekorPublicKeyPath":"/r""#)), "rekorPublicKeyPath is not supported yet"),
        (r#"{"default":[{"type":"sigstoreSigned","fulcio":{"caPath":"/ca","oidcIssuer":"x","subjectEmail":"y"}}]}"#.into(), "fulcio is not supported yet"),
        (r#"{"default":[{"type":"sigstoreSigned","pki":{}}]}"#.into(), "pki is not supported yet"),
    ] {
        let e = Policy::from_bytes(text.as_bytes()).unwrap_err().to_string();
        assert!(e.contains(says), "{text}: {e}");
    }
}

#[test]
fn every_identity_kind_is_read() {
    let (_, data) = key_data();
    for si in [
        r#"{"type":"matchExact"}"#,
        r#"{"type":"matchRepoDigestOrExact"}"#,
        r#"{"type":"matchRepository"}"#,
        r#"{"type":"exactReference","dockerReference":"a.com/x:1"}"#,
        r#"{"type":"exactRepository","dockerRepository":"a.com/x"}"#,
        r#"{"type":"remapIdentity","prefix":"a.com","signedPrefix":"b.com/ns"}"#,
    ] {
        let text = format!(
            r#"{{"default":[{}]}}"#,
            sigstore(&data, &format!(r#","signedIdentity":{si}"#))
        );
        assert!(Policy::from_bytes(text.as_bytes()).is_ok(), "{si}");
    }
}

/// A policy requiring `key`'s signatures under `identity`, and a signature of `payload`.
fn signed(key: &p256::ecdsa::SigningKey, payload: &[u8]) -> Found {
    Found {
        payload: payload.to_vec(),
        signature: B64.encode(keys::sign(key, payload)),
    }
}

#[test]
fn verdicts_on_signatures() {
    let (k, data) = key_data();
    let (other, _) = key_data();
    let digest = format!("sha256:{}", "1".repeat(64));
    let policy = |si: &str| {
        Policy::from_bytes(
            format!(
                r#"{{"default":[{}]}}"#,
                sigstore(&data, &format!(r#","signedIdentity":{{"type":"{si}"}}"#))
            )
            .as_bytes(),
        )
        .unwrap()
    };
    let by_digest = Named::parse(&format!("reg.example/ns/cat@{digest}")).unwrap();
    let by_tag = Named::parse("reg.example/ns/cat:v1").unwrap();
    let run = |p: &Policy, n: &Named, sigs: Vec<Found>| {
        p.check(&Subject::Registry(n), &digest, &mut || {
            Ok(Signatures::Found(sigs.clone()))
        })
    };
    let cosign_style = payload::payload("reg.example/ns/cat", &digest);
    let repo = policy("matchRepository");
    assert!(run(&repo, &by_tag, vec![signed(&k, &cosign_style)]).is_ok());
    let e = run(&repo, &by_tag, vec![signed(&other, &cosign_style)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("no signature verifies"), "{e}");
    let mut tampered = cosign_style.clone();
    tampered[10] ^= 1;
    let mut sig = signed(&k, &cosign_style);
    sig.payload = tampered;
    assert!(run(&repo, &by_tag, vec![sig]).is_err());
    let elsewhere = payload::payload("reg.example/ns/other", &digest);
    let e = run(&repo, &by_tag, vec![signed(&k, &elsewhere)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not match"), "{e}");
    let stale = payload::payload("reg.example/ns/cat", &format!("sha256:{}", "2".repeat(64)));
    let e = run(&repo, &by_tag, vec![signed(&k, &stale)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("another digest"), "{e}");
    // One good signature among bad ones is enough.
    assert!(run(
        &repo,
        &by_tag,
        vec![signed(&other, &cosign_style), signed(&k, &cosign_style)]
    )
    .is_ok());
    // Unsigned.
    let e = repo
        .check(&Subject::Registry(&by_tag), &digest, &mut || {
            Ok(Signatures::Unsigned {
                tag: "t.sig".into(),
            })
        })
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("unsigned"), "{e}");

    // The default rule: a repository-only identity is refused by tag and by digest alike
    // (containers/image's matchRepoDigestOrExact); an identity with a tag is accepted for a
    // pull by digest, and for a pull by that tag.
    let default = policy("matchRepoDigestOrExact");
    assert!(run(&default, &by_digest, vec![signed(&k, &cosign_style)]).is_err());
    assert!(run(&default, &by_tag, vec![signed(&k, &cosign_style)]).is_err());
    let tagged = payload::payload("reg.example/ns/cat:v1", &digest);
    assert!(run(&default, &by_digest, vec![signed(&k, &tagged)]).is_ok());
    assert!(run(&default, &by_tag, vec![signed(&k, &tagged)]).is_ok());
    let v2 = Named::parse("reg.example/ns/cat:v2").unwrap();
    assert!(run(&default, &v2, vec![signed(&k, &tagged)]).is_err());
}

#[test]
fn reject_and_accept_need_no_signatures() {
    let p = Policy::from_bytes(
        br#"{"default":[{"type":"reject"}],"transports":{"docker":{"a.com/open":[{"type":"insecureAcceptAnything"}]}}}"#,
    )
    .unwrap();
    let open = Named::parse("a.com/open:1").unwrap();
    let closed = Named::parse("a.com/closed:1").unwrap();
    let mut never =
        || -> Result<Signatures, crate::sign::Error> { panic!("no signatures are read") };
    assert!(p
        .check(&Subject::Registry(&open), "sha256:x", &mut never)
        .is_ok());
    let e = p
        .check(&Subject::Registry(&closed), "sha256:x", &mut never)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("rejected by the signature policy (default)"),
        "{e}"
    );
    assert!(!p.needs_signatures(&Subject::Registry(&open)));
}
