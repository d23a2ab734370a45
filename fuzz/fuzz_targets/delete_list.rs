//! oc-mirror's `DeleteImageList`, as `opreg mirror delete --delete-yaml-file` reads it: any
//! bytes are read (`list::read`); a list that reads is checked against two registries and a mirror on disk and
//! written back, and what is written reads again to the same items. Never panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use opreg::mirror::delete::list;
use opreg::mirror::destination::Destination;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(l) = list::read(&text, "fuzz.yaml") else {
        return;
    };
    for dest in [
        Destination::Registry("localhost:5000/myregistry".into()),
        Destination::Registry("m:5000".into()),
        Destination::Disk("/m/d".into()),
    ] {
        let _ = list::check(&l, &dest);
    }
    let written = list::write(&l.items);
    let again = list::read(&written, "written.yaml").expect("a written list reads");
    let mut want = l.items.clone();
    want.sort_by(|a, b| a.image_reference.cmp(&b.image_reference));
    want.dedup_by(|a, b| a.image_reference == b.image_reference);
    assert_eq!(again.items, want);
});
