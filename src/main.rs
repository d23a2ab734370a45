fn main() {
    std::process::exit(opreg::cli::run(std::env::args_os().collect()));
}
