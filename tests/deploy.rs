//! deploy/'s kustomize base and overlays, rendered with the real `kubectl kustomize` and checked
//! field by field by `tests/deploy_check.py` under Debian's python3 (which has
//! python3-kubernetes): every field of the core, apps, policy and autoscaling/v1 objects against
//! the API models, the CatalogSource against operator-framework/api's field names, and what the
//! manifests promise (OLM's probe, read-only root, address mode, the HA overlay's replicas,
//! disruption budget and spread). A misspelt field fails the test with its path.

use std::path::Path;
use std::process::Command;

/// Debian's interpreter, not whatever `python3` comes first on PATH: python3-kubernetes is
/// installed for it.
const PYTHON: &str = "/usr/bin/python3";

fn check(dirs: &[&str]) -> std::process::Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    Command::new(PYTHON)
        .arg(root.join("tests/deploy_check.py"))
        .args(dirs)
        .current_dir(root)
        .output()
        .expect("run /usr/bin/python3 (apt-get install python3-kubernetes kubernetes-client)")
}

#[test]
fn base_and_overlays_check_against_the_api_models() {
    let out = check(&[
        "deploy/base",
        "deploy/overlays/ha",
        "deploy/overlays/ha-autoscaling",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // Every kind was walked, in every kustomization that has it.
    for kind in [
        "deploy/base: Deployment hello-catalog",
        "deploy/base: Service hello-catalog",
        "deploy/base: CatalogSource hello-catalog",
        "deploy/overlays/ha: PodDisruptionBudget hello-catalog",
        "deploy/overlays/ha-autoscaling: HorizontalPodAutoscaler hello-catalog",
    ] {
        assert!(
            stdout.contains(&format!("checked {kind}")),
            "{kind} not checked:\n{stdout}"
        );
    }
}

#[test]
fn a_misspelt_field_fails() {
    // A copy of the base with one field misspelt in each checker: a core model and OLM's type.
    let dir = tempfile::tempdir().unwrap();
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/base");
    for entry in std::fs::read_dir(&base).unwrap() {
        let p = entry.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        let text = text
            .replace("readOnlyRootFilesystem", "readOnlyRootFileSystem")
            .replace("sourceType:", "sourcetype:");
        std::fs::write(dir.path().join(p.file_name().unwrap()), text).unwrap();
    }
    let out = check(&[dir.path().to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(".securityContext.readOnlyRootFileSystem: V1SecurityContext has no field"),
        "{stderr}"
    );
    assert!(
        stderr.contains(".spec.sourcetype: no such field"),
        "{stderr}"
    );
}
