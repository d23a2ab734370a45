//! `opreg health-probe`, also installed as `grpc_health_probe`: a gRPC health check client
//! with grpc_health_probe's flags and exit codes, so OLM's exec probes run unchanged.
//!
//! Exit codes: 0 SERVING, 1 bad arguments, 2 connection failure, 3 RPC failure or timeout,
//! 4 the status was not SERVING (`cli::exit_code` maps each ending to its code).

use super::Ended;
use crate::probe::Outcome;
use std::time::Duration;

// Help text: the doc comment of `Command::HealthProbe` in src/cli/mod.rs.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Address to dial; a bare `:PORT` means this host.
    #[arg(long, default_value = ":50051")]
    pub addr: String,
    /// Service name to ask about ("" means the server as a whole).
    #[arg(long, default_value = "")]
    pub service: String,
    /// Timeout for establishing the connection (Go duration: 1s, 500ms, 2m).
    #[arg(long, default_value = "1s", value_parser = crate::duration::parse)]
    pub connect_timeout: Duration,
    /// Timeout for the health RPC.
    #[arg(long, default_value = "1s", value_parser = crate::duration::parse)]
    pub rpc_timeout: Duration,
    /// Verbose output: the timings of the connection and the RPC, on stderr.
    #[arg(short, long)]
    pub verbose: bool,
    /// Connect with TLS (`opreg serve --tls-cert`); the server's certificate is checked
    /// against the public roots unless --tls-ca-cert or --tls-no-verify is given.
    #[arg(long)]
    pub tls: bool,
    /// With --tls: trust the certificates in this PEM file.
    #[arg(long, value_name = "FILE", requires = "tls")]
    pub tls_ca_cert: Option<std::path::PathBuf>,
    /// With --tls: do not check the server's certificate.
    #[arg(long, requires = "tls", conflicts_with = "tls_ca_cert")]
    pub tls_no_verify: bool,
    /// With --tls: the name to check the certificate against [default: the host of --addr].
    #[arg(long, value_name = "NAME", requires = "tls")]
    pub tls_server_name: Option<String>,
}

/// grpc_health_probe's usage text, for `-h`/`-help`.
const GO_USAGE: &str = "\
Usage of grpc_health_probe (opreg):
  -addr string
    	tcp host:port to connect (default \":50051\"; a bare :PORT means this host)
  -service string
    	service name to check (default \"\")
  -connect-timeout duration
    	timeout for establishing connection (default 1s)
  -rpc-timeout duration
    	timeout for health check rpc (default 1s)
  -user-agent string, -rpc-header value, -gzip
    	accepted and ignored
  -v	verbose logs
  -version
    	print version and exit
  -tls	use TLS (default: plaintext h2c)
  -tls-ca-cert string
    	path to file containing CA certificates (to override system roots)
  -tls-no-verify
    	with -tls, don't verify the certificate presented by the server
  -tls-server-name string
    	override the hostname used to verify the server certificate
  -tls-client-cert, -tls-client-key, -alts, -spiffe
    	refused: opreg serves no mutual TLS
Exit codes: 0 SERVING, 1 bad arguments, 2 connection failure, 3 RPC failure, 4 not SERVING.
";

/// Parses grpc_health_probe's Go-style flags (`-addr=:50051`, `-addr :50051`, `--addr=...`).
fn parse_go_flags(args: &[std::ffi::OsString]) -> Result<Args, String> {
    let mut a = Args {
        addr: ":50051".into(),
        service: String::new(),
        connect_timeout: Duration::from_secs(1),
        rpc_timeout: Duration::from_secs(1),
        verbose: false,
        tls: false,
        tls_ca_cert: None,
        tls_no_verify: false,
        tls_server_name: None,
    };
    let args: Vec<String> = args
        .iter()
        .map(|s| s.to_string_lossy().to_string())
        .collect();
    let mut i = 0;
    while i < args.len() {
        let raw = args[i].trim_start_matches('-');
        if !args[i].starts_with('-') {
            return Err(format!("unexpected argument {:?}", args[i]));
        }
        let (name, inline) = match raw.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (raw, None),
        };
        let bool_flag = matches!(
            name,
            "v" | "version" | "gzip" | "alts" | "spiffe" | "tls" | "tls-no-verify"
        );
        let known = bool_flag
            || matches!(
                name,
                "addr"
                    | "service"
                    | "connect-timeout"
                    | "rpc-timeout"
                    | "user-agent"
                    | "rpc-header"
                    | "tls-ca-cert"
                    | "tls-server-name"
                    | "tls-client-cert"
                    | "tls-client-key"
            );
        if !known {
            return Err(format!("flag provided but not defined: -{name}"));
        }
        let value = if bool_flag {
            inline.unwrap_or_else(|| "true".into())
        } else if let Some(v) = inline {
            v
        } else {
            i += 1;
            args.get(i)
                .cloned()
                .ok_or_else(|| format!("flag needs an argument: -{name}"))?
        };
        match name {
            "addr" => a.addr = value,
            "service" => a.service = value,
            "connect-timeout" => a.connect_timeout = go_flag_duration(name, &value)?,
            "rpc-timeout" => a.rpc_timeout = go_flag_duration(name, &value)?,
            "user-agent" | "rpc-header" => {}
            "tls" => a.tls = go_flag_bool(name, &value)?,
            "tls-no-verify" => a.tls_no_verify = go_flag_bool(name, &value)?,
            "tls-ca-cert" => a.tls_ca_cert = Some(value.into()),
            "tls-server-name" => a.tls_server_name = Some(value),
            n @ ("tls-client-cert" | "tls-client-key" | "alts" | "spiffe") => {
                if value != "false" && !value.is_empty() {
                    return Err(format!("-{n} is not supported: opreg serves no mutual TLS"));
                }
            }
            "gzip" | "version" => {}
            "v" => a.verbose = value != "false",
            other => return Err(format!("flag provided but not defined: -{other}")),
        }
        i += 1;
    }
    // grpc_health_probe's own checks, in its order and words.
    if a.addr.is_empty() {
        return Err("-addr not specified".into());
    }
    if !a.tls {
        for (flag, set) in [
            ("-tls-no-verify", a.tls_no_verify),
            ("-tls-ca-cert", a.tls_ca_cert.is_some()),
            ("-tls-server-name", a.tls_server_name.is_some()),
        ] {
            if set {
                return Err(format!("specified {flag} without specifying -tls"));
            }
        }
    }
    if a.tls_no_verify && a.tls_ca_cert.is_some() {
        return Err(
            "cannot specify -tls-ca-cert with -tls-no-verify (CA cert would not be used)".into(),
        );
    }
    for (flag, d) in [
        ("connect-timeout", a.connect_timeout),
        ("rpc-timeout", a.rpc_timeout),
    ] {
        if d.is_zero() {
            return Err(format!("-{flag} must be greater than zero (specified: 0s)"));
        }
    }
    Ok(a)
}

/// A boolean flag's value, as Go's flag package reads it.
fn go_flag_bool(name: &str, value: &str) -> Result<bool, String> {
    match value {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        _ => Err(format!(
            "invalid boolean value {value:?} for -{name}: parse error"
        )),
    }
}

/// A duration flag's value, refused in the words of Go's flag package.
fn go_flag_duration(name: &str, value: &str) -> Result<Duration, String> {
    crate::duration::parse(value)
        .map_err(|_| format!("invalid value {value:?} for flag -{name}: parse error"))
}

/// Entry point when invoked as `grpc_health_probe`.
pub fn run_go_style(args: &[std::ffi::OsString]) -> Ended {
    // As grpc_health_probe: `-h`/`-help` print the usage and exit 1 (its flag set reports
    // ErrHelp as a parse error); `-version` prints the version and exits 0.
    for arg in args.iter().map(|s| s.to_string_lossy()) {
        match arg.trim_start_matches('-') {
            "h" | "help" if arg.starts_with('-') => {
                super::output::plain(GO_USAGE.trim_end());
                return Ended::ProbeArgs;
            }
            "version" | "version=true" if arg.starts_with('-') => {
                let _ = super::output::out(&format!(
                    "opreg {} (grpc_health_probe compatible)\n",
                    env!("CARGO_PKG_VERSION")
                ));
                return Ended::Done;
            }
            _ => {}
        }
    }
    match parse_go_flags(args) {
        Ok(a) => run(a),
        Err(e) => {
            super::output::plain(&format!("error: {e}"));
            Ended::ProbeArgs
        }
    }
}

impl Args {
    fn options(&self) -> crate::probe::ProbeOptions {
        crate::probe::ProbeOptions {
            addr: self.addr.clone(),
            service: self.service.clone(),
            connect_timeout: self.connect_timeout,
            rpc_timeout: self.rpc_timeout,
            tls: self.tls,
            tls_ca_cert: self.tls_ca_cert.clone(),
            tls_no_verify: self.tls_no_verify,
            tls_server_name: self.tls_server_name.clone(),
        }
    }
}

pub fn run(a: Args) -> Ended {
    let started = std::time::Instant::now();
    let outcome = crate::probe::run(&a.options());
    let msg = outcome.to_string();
    if a.verbose {
        super::output::plain(&format!(
            "addr={} service={:?} time elapsed: {:?}",
            a.addr,
            a.service,
            started.elapsed()
        ));
    }
    if matches!(outcome, Outcome::Serving) {
        let _ = super::output::out(&format!("{msg}\n"));
    } else {
        super::output::plain(&msg);
    }
    Ended::Probe(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_flags() {
        let args: Vec<std::ffi::OsString> = ["-addr=:50051", "-rpc-timeout", "5s"]
            .iter()
            .map(Into::into)
            .collect();
        let a = parse_go_flags(&args).unwrap();
        assert_eq!(a.addr, ":50051");
        assert_eq!(a.rpc_timeout, Duration::from_secs(5));
        let flags = |v: &[&str]| -> Vec<std::ffi::OsString> { v.iter().map(Into::into).collect() };
        let a = parse_go_flags(&flags(&["-tls", "-tls-ca-cert", "ca.pem", "-addr=h:1"])).unwrap();
        assert!(a.tls && !a.tls_no_verify);
        assert_eq!(
            a.tls_ca_cert.as_deref(),
            Some(std::path::Path::new("ca.pem"))
        );
        let e = parse_go_flags(&flags(&["-tls-no-verify"])).unwrap_err();
        assert_eq!(e, "specified -tls-no-verify without specifying -tls");
        let e = parse_go_flags(&flags(&["-tls", "-tls-no-verify", "-tls-ca-cert=x"])).unwrap_err();
        assert!(
            e.contains("cannot specify -tls-ca-cert with -tls-no-verify"),
            "{e}"
        );
        let e = parse_go_flags(&flags(&["-tls", "-tls-client-cert", "c.pem"])).unwrap_err();
        assert!(e.contains("not supported"), "{e}");
        let bad: Vec<std::ffi::OsString> = ["-nope=1"].iter().map(Into::into).collect();
        assert!(parse_go_flags(&bad).is_err());
        // -v is grpc_health_probe's verbose flag, not a version flag.
        let verbose: Vec<std::ffi::OsString> = ["-v", "-addr=:1"].iter().map(Into::into).collect();
        let a = parse_go_flags(&verbose).unwrap();
        assert!(a.verbose);
        assert_eq!(a.addr, ":1");
    }
}
