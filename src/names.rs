//! Kubernetes' DNS-1123 name rules, once: package names (labels) and catalogd's catalog names
//! (subdomains), with the messages Kubernetes' validation prints.

/// One label's characters: lowercase alphanumerics and '-', alphanumeric at both ends, not
/// empty (no length limit).
fn label_chars(l: &str) -> bool {
    let b = l.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// The messages of Kubernetes' `IsDNS1123Label`, which upstream prints as a list.
pub fn dns1123_label_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !label_chars(s) {
        if s.split('.').all(label_chars) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".to_string());
        }
    }
    errs
}

/// DNS-1123 label: lowercase alphanumerics and '-', alphanumeric at both ends, at most 63 chars.
pub fn is_dns1123_label(s: &str) -> bool {
    s.len() <= 63 && label_chars(s)
}

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// Kubernetes' `IsDNS1123Subdomain` messages (empty when valid).
pub fn dns1123_subdomain_errors(s: &str) -> Vec<&'static str> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push("must be no more than 253 characters");
    }
    if !s.split('.').all(label_chars) {
        errs.push(SUBDOMAIN_MSG);
    }
    errs
}
