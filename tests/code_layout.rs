//! The linker lays out the functions a loaded server runs first, in the order of
//! `scripts/hot-functions.txt` (build.rs; x86_64 Linux, where rustc links with lld).
//!
//! The list was recorded from the `dist` build; Rust symbol names carry hashes of each crate's
//! build settings, so in this (release) build mostly the C functions (SQLite, mimalloc) match
//! it. Those are enough to see the layout: the binary's text must begin with the listed
//! functions it has, in the list's order.
#![cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]

use std::collections::HashSet;
use std::process::Command;

#[test]
fn listed_functions_come_first_in_the_text() {
    if option_env!("OPREG_NO_SYMBOL_ORDER").is_some() {
        return; // built with the layout turned off
    }
    let list = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/hot-functions.txt"
    ))
    .expect("scripts/hot-functions.txt");
    let out = Command::new("nm")
        .args(["-n", "--defined-only", env!("CARGO_BIN_EXE_opreg")])
        .output()
        .expect("nm (binutils) runs");
    assert!(out.status.success(), "nm failed");
    // Text symbols by address; aliases of one address count once.
    let mut text = Vec::new();
    let mut seen_addr = HashSet::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == 3 && (f[1] == "t" || f[1] == "T") && seen_addr.insert(f[0].to_string()) {
            text.push(f[2].to_string());
        }
    }
    let in_binary: HashSet<&str> = text.iter().map(String::as_str).collect();
    let listed: Vec<&str> = list
        .lines()
        .filter(|n| in_binary.contains(n))
        .take(20)
        .collect();
    assert!(
        listed.len() >= 20,
        "only {} listed functions are in the binary",
        listed.len()
    );
    let first: Vec<&str> = text.iter().take(20).map(String::as_str).collect();
    assert_eq!(first, listed, "the text begins with the listed functions");
}
