// mimalloc: ingest allocates millions of small JSON nodes; glibc malloc was a third of its profile.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(opreg::cli::run(std::env::args_os().collect()));
}
