//! The connection flags, written once: `connection_flags!` expands them for the plain form
//! (every registry), `--src-` (the registries images are read from) and `--dest-` (the
//! registry written to), and [`RegistryArgs`] merges a side's flags onto the plain ones, the
//! one merge rule: a side's `--*-use-http` and `--*-skip-tls-verify` add to the plain flags,
//! its `--*-cert-dir` replaces `--cert-dir`. `--insecure-registry` names registries, so it
//! has no side form: it holds on both.

use crate::registry::{Connection, Connections, DEFAULT_REGISTRY_TIMEOUT};
use std::path::PathBuf;
use std::time::Duration;

/// One side's flags, whatever their prefix.
struct Side<'a> {
    use_http: bool,
    skip_tls_verify: bool,
    cert_dir: Option<&'a PathBuf>,
}

// A clap derive cannot prefix a flattened struct's flags, so each form is its own struct,
// made by this macro from the one list.
macro_rules! connection_flags {
    ($name:ident, $http:ident, $skip:ident, $certs:ident, $whom:literal) => {
        #[derive(clap::Args, Debug, Clone, Default)]
        #[command(next_help_heading = "Registries")]
        pub struct $name {
            #[arg(long, help = concat!("Talk plain HTTP to ", $whom, "."))]
            pub $http: bool,
            #[arg(long, help = concat!("Do not verify the TLS certificates of ", $whom, "."))]
            pub $skip: bool,
            #[arg(
                long,
                value_name = "DIR",
                help = concat!(
                    "CA certificates (`*.crt`) and a client certificate (`NAME.cert` with ",
                    "`NAME.key`) for ", $whom, ", in place of containers' certs.d directory."
                )
            )]
            pub $certs: Option<PathBuf>,
        }

        impl $name {
            fn side(&self) -> Side<'_> {
                Side {
                    use_http: self.$http,
                    skip_tls_verify: self.$skip,
                    cert_dir: self.$certs.as_ref(),
                }
            }
        }
    };
}

connection_flags!(
    ConnectionFlags,
    use_http,
    skip_tls_verify,
    cert_dir,
    "registries"
);
connection_flags!(
    SrcFlags,
    src_use_http,
    src_skip_tls_verify,
    src_cert_dir,
    "the registries images are read from"
);
connection_flags!(
    DestFlags,
    dest_use_http,
    dest_skip_tls_verify,
    dest_cert_dir,
    "the registry written to"
);

// How to reach registries: the plain flags and the timeout, flattened into every command that
// reads or writes images. (A plain comment: a doc comment would become the about text of every
// subcommand it is in.)
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Registries")]
pub struct RegistryArgs {
    #[command(flatten)]
    pub plain: ConnectionFlags,
    /// A registry (HOST[:PORT]) reached as registries.conf's `insecure = true` says: its
    /// certificate is not verified, and plain HTTP is used when HTTPS gets no answer; other
    /// registries keep verified HTTPS. Repeatable; registries.conf's own entries count too.
    #[arg(long, value_name = "HOST[:PORT]")]
    pub insecure_registry: Vec<String>,
    /// Longest wait, in seconds, on a registry that sends nothing (connecting, the first byte
    /// of an answer, or a body that stalls); a blob that keeps arriving is never cut.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_REGISTRY_TIMEOUT)]
    pub registry_timeout: u64,
}

impl RegistryArgs {
    /// Every registry reached the same way.
    pub fn connection(&self) -> Connection {
        self.merged(&Side {
            use_http: false,
            skip_tls_verify: false,
            cert_dir: None,
        })
    }

    /// The registries images are read from.
    pub fn source(&self, s: &SrcFlags) -> Connection {
        self.merged(&s.side())
    }

    /// The registry written to.
    pub fn destination(&self, d: &DestFlags) -> Connection {
        self.merged(&d.side())
    }

    /// Both sides.
    pub fn connections(&self, s: &SrcFlags, d: &DestFlags) -> Connections {
        Connections {
            source: self.source(s),
            destination: self.destination(d),
        }
    }

    fn merged(&self, side: &Side<'_>) -> Connection {
        let plain = self.plain.side();
        Connection {
            use_http: plain.use_http || side.use_http,
            skip_tls_verify: plain.skip_tls_verify || side.skip_tls_verify,
            timeout: Duration::from_secs(self.registry_timeout.max(1)),
            cert_dir: side.cert_dir.or(plain.cert_dir).cloned(),
            insecure_registries: self.insecure_registry.clone(),
            ..Connection::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Cmd {
        #[command(flatten)]
        registries: RegistryArgs,
        #[command(flatten)]
        src: SrcFlags,
        #[command(flatten)]
        dest: DestFlags,
    }

    fn parse(args: &[&str]) -> Connections {
        let c = Cmd::parse_from(std::iter::once("x").chain(args.iter().copied()));
        c.registries.connections(&c.src, &c.dest)
    }

    /// No command defines a flag twice through the groups it flattens (clap checks this only
    /// in debug builds; the suite runs in release).
    #[test]
    fn no_command_defines_a_flag_twice() {
        fn check(cmd: &clap::Command, path: &str) {
            let path = format!("{path} {}", cmd.get_name());
            let mut ids = std::collections::BTreeSet::new();
            let mut longs = std::collections::BTreeSet::new();
            for a in cmd.get_arguments() {
                assert!(
                    ids.insert(a.get_id().as_str()),
                    "{path}: {} twice",
                    a.get_id()
                );
                if let Some(l) = a.get_long() {
                    assert!(longs.insert(l), "{path}: --{l} twice");
                }
            }
            cmd.get_subcommands().for_each(|s| check(s, &path));
        }
        let cli = <crate::cli::Cli as clap::CommandFactory>::command();
        check(&cli, "");
        // The rule above catches a repeat: a command given --use-http twice fails it.
        let twice = clap::Command::new("x").args([
            clap::Arg::new("a").long("use-http"),
            clap::Arg::new("b").long("use-http"),
        ]);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&twice, "")));
        assert!(caught.is_err());
    }

    #[test]
    fn a_side_adds_to_the_plain_flags_and_its_cert_dir_replaces_the_plain_one() {
        let c = parse(&["--src-use-http", "--cert-dir", "a", "--dest-cert-dir", "b"]);
        assert!(c.source.use_http && !c.destination.use_http);
        assert_eq!(c.source.cert_dir, Some(PathBuf::from("a")));
        assert_eq!(c.destination.cert_dir, Some(PathBuf::from("b")));
        let c = parse(&[
            "--use-http",
            "--dest-skip-tls-verify",
            "--registry-timeout",
            "0",
        ]);
        assert!(c.source.use_http && c.destination.use_http);
        assert!(!c.source.skip_tls_verify && c.destination.skip_tls_verify);
        assert_eq!(c.source.timeout, Duration::from_secs(1));
    }
}
