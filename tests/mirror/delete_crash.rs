//! `kill -9` in the middle of phase 2, then the same command: it finishes the job, and nothing
//! the list does not name is deleted. The destination is behind a relay that slows each DELETE,
//! so that the kill lands between two of them.

use super::delete::{delete, delete_config, mirror_all, operator};
use super::{at, raw};
use crate::mirror_support::Source;
use crate::registry_support::ctx::Ctx;
use crate::registry_support::faults::{Action, Faults, Seen};
use crate::registry_support::Registry;
use std::time::{Duration, Instant};

#[test]
fn a_delete_killed_part_way_is_finished_by_the_same_command() {
    let src = Source::start();
    let dst = Registry::http();
    let relay = Faults::start(
        dst.port,
        Box::new(|s: &Seen, _| {
            if s.method == "DELETE" {
                std::thread::sleep(Duration::from_millis(400));
            }
            Action::Relay
        }),
    );
    let dest = format!("127.0.0.1:{}/m", relay.port);
    let target = format!("docker://{dest}");
    let ctx = Ctx::new();
    let ws = mirror_all(&ctx, &src, &dest);
    let h = &src.host;
    let del = delete_config(
        &ctx,
        &format!("  operators:\n  - catalog: {}\n    packages:\n    - name: etcd\n  additionalImages:\n  - name: {h}/tools/ubi:9\n", src.catalog()),
    );
    let ws_arg = ws.to_str().unwrap();
    let (code, _, err) = delete(
        &ctx,
        &[
            "--generate",
            "--config",
            del.to_str().unwrap(),
            "--workspace",
            ws_arg,
            &target,
        ],
    );
    assert_eq!(code, 0, "{err}");
    let list = ws.join("delete/delete-images.yaml");
    let phase2 = [
        "mirror",
        "delete",
        "--use-http",
        "--delete-yaml-file",
        list.to_str().unwrap(),
        &target,
    ];
    let deletes = || {
        relay
            .seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(s, _)| s.method == "DELETE")
            .count()
    };
    let mut child = ctx.cmd(&phase2, &[]).spawn().unwrap();
    // The probe, the superseded catalog, then the first image: kill after three DELETEs.
    let start = Instant::now();
    while deletes() < 3 {
        assert!(start.elapsed() < Duration::from_secs(60), "no deletes seen");
        assert!(
            child.try_wait().unwrap().is_none(),
            "phase 2 ended before the kill"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let op = operator(&src);
    let listed = [
        at(&src, &dest, &src.expected(false)[0]),
        at(&src, &dest, &op),
        at(&src, &dest, &format!("{h}/tools/ubi:9")),
    ];
    assert!(
        listed.iter().any(|l| raw(l).is_some()),
        "the kill left work to do"
    );
    let (code, _, err) = ctx.run(&phase2);
    assert_eq!(code, 0, "{err}");
    for l in &listed {
        assert!(raw(l).is_none(), "{l} is deleted: {err}");
    }
    let dep = at(&src, &dest, &format!("{h}/dep/dep-bundle:v1.1.0"));
    assert!(
        raw(&dep).is_some(),
        "an image the list does not name stands"
    );
    let catalog = format!("{dest}/catalogs/operators:v1");
    let (code, out, err) = ctx.run(&["render", "--use-http", &catalog]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("dep.v1.1.0") && !out.contains("etcd.v1.2.0"),
        "{out}"
    );
}
