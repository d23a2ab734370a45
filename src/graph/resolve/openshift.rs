//! The `olm.maxOpenShiftVersion` marks on a path: whether a bundle blocks the cluster upgrade.

use super::Step;
use crate::version::blang;

/// Records the bundle's `olm.maxOpenShiftVersion` and, for a cluster at `4.Y`, whether
/// it blocks the cluster upgrade: the value must be exactly `major.minor` (unusable values
/// count as blocking) and blocks when below the cluster's next minor (4.23 counts as 5.0).
pub(super) fn mark_openshift(s: &mut Step, values: &[String], cluster: Option<(u64, u64)>) {
    let texts: Vec<String> = values
        .iter()
        .map(|v| v.trim_matches('"').to_string())
        .collect();
    s.max_openshift_version = texts.join(", ");
    let Some(cluster) = cluster else { return };
    let next = match (cluster.0, cluster.1 + 1) {
        (4, 23) => (5, 0),
        n => n,
    };
    let parsed = match texts.as_slice() {
        [] => return,
        [one] if one.trim().is_empty() => Err("the value is empty".to_string()),
        [one] => blang::parse_tolerant(one)
            .map_err(|e| e.to_string())
            .and_then(|v| {
                if v.patch == 0 && v.pre.is_empty() && v.build.is_empty() {
                    Ok((v.major, v.minor))
                } else {
                    Err(format!("{one:?} is not exactly major.minor"))
                }
            }),
        _ => Err("the bundle has several olm.maxOpenShiftVersion properties".into()),
    };
    let (block, note) = match parsed {
        Ok(max) if max < next => (
            true,
            format!(
                "olm.maxOpenShiftVersion {}.{} is below {}.{}, the next minor after {}.{}: while \
                 installed, it blocks the cluster upgrade",
                max.0, max.1, next.0, next.1, cluster.0, cluster.1
            ),
        ),
        Ok(_) => (false, String::new()),
        Err(e) => (
            true,
            format!(
                "unusable olm.maxOpenShiftVersion ({e}); OpenShift treats it as \
                 incompatible and blocks the cluster upgrade"
            ),
        ),
    };
    s.blocks_openshift_upgrade = block;
    s.openshift_note = note;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marked(values: &[&str], cluster: (u64, u64)) -> (bool, String) {
        let mut s = Step {
            name: String::new(),
            version: String::new(),
            channel: String::new(),
            edge: String::new(),
            from: String::new(),
            max_openshift_version: String::new(),
            blocks_openshift_upgrade: false,
            openshift_note: String::new(),
            downgrade: false,
        };
        let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        mark_openshift(&mut s, &values, Some(cluster));
        (s.blocks_openshift_upgrade, s.openshift_note)
    }

    #[test]
    fn max_openshift_version_compares_major_minor_with_the_next_minor() {
        assert!(marked(&["\"4.12\""], (4, 12)).0);
        assert!(!marked(&["\"4.13\""], (4, 12)).0);
        assert!(
            !marked(&["4.13"], (4, 12)).0,
            "a JSON number reads the same"
        );
        assert!(
            marked(&["4.1"], (4, 9)).0,
            "4.10 turned into 4.1 by YAML blocks"
        );
        // 4.22's next minor counts as 5.0.
        assert!(marked(&["\"4.30\""], (4, 22)).0);
        assert!(!marked(&["\"5.0\""], (4, 22)).0);
        assert!(!marked(&["\"4.30\""], (4, 21)).0);
        // Unusable values count as blocking.
        for bad in [
            &["\"4.12.1\""][..],
            &["\"\""],
            &["\"4.20\"", "\"4.21\""],
            &["\"four\""],
        ] {
            let (block, note) = marked(bad, (4, 12));
            assert!(block && note.contains("unusable"), "{bad:?}: {note}");
        }
        assert_eq!(marked(&[], (4, 12)), (false, String::new()));
    }
}
