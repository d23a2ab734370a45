// mimalloc: ingest allocates millions of small JSON nodes; glibc malloc was a third of its profile.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // Before anything allocates: mimalloc reads its options as a thread's heap is made.
    opreg::memory::at_start();
    // An interrupted command ends through here too (its message printed first).
    opreg::interrupt::set_exit(std::process::exit);
    // No path may end in a panic's exit code 101: a bug becomes one line and exit code 1.
    std::panic::set_hook(Box::new(|info| {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "error: internal error: {info}");
    }));
    let code = std::panic::catch_unwind(|| opreg::cli::run(std::env::args_os().collect()))
        .unwrap_or_else(|_| opreg::cli::exit_code(opreg::cli::Ended::Panicked));
    std::process::exit(code);
}
