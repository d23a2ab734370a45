//! A private certificate authority made with openssl, as an enterprise registry has one: the
//! CA, a server certificate it signed for 127.0.0.1 (rustls refuses a CA certificate used as a
//! server's), and a client certificate for mutual TLS. Laid out as containers-certs.d(5) wants
//! a registry's directory: `certs/ca.crt`, `certs/client.cert`, `certs/client.key`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct Pki {
    pub dir: PathBuf,
}

fn openssl(args: &[&str], at: &Path) {
    let st = Command::new("openssl")
        .args(args)
        .current_dir(at)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run openssl");
    assert!(st.success(), "openssl {args:?} failed");
}

impl Pki {
    pub fn new(dir: &Path) -> Pki {
        std::fs::create_dir_all(dir.join("certs")).unwrap();
        openssl(
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "2",
                "-keyout",
                "ca.key",
                "-out",
                "ca.crt",
                "-subj",
                "/CN=opreg-test-ca",
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
            dir,
        );
        for (name, ext) in [
            (
                "server",
                "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n",
            ),
            (
                "client",
                "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n",
            ),
        ] {
            std::fs::write(dir.join(format!("{name}.ext")), ext).unwrap();
            openssl(
                &[
                    "req", "-newkey", "rsa:2048", "-nodes", "-keyout", &format!("{name}.key"),
                    "-out", &format!("{name}.csr"), "-subj", &format!("/CN=opreg-test-{name}"),
                ],
                dir,
            );
            openssl(
                &[
                    "x509", "-req", "-in", &format!("{name}.csr"), "-CA", "ca.crt", "-CAkey",
                    "ca.key", "-CAcreateserial", "-days", "2", "-out", &format!("{name}.crt"),
                    "-extfile", &format!("{name}.ext"),
                ],
                dir,
            );
        }
        let certs = dir.join("certs");
        std::fs::copy(dir.join("ca.crt"), certs.join("ca.crt")).unwrap();
        std::fs::copy(dir.join("client.crt"), certs.join("client.cert")).unwrap();
        std::fs::copy(dir.join("client.key"), certs.join("client.key")).unwrap();
        Pki {
            dir: dir.to_path_buf(),
        }
    }
    /// Signs the server's certificate again, expired (valid for one day in January 2020), as a
    /// registry whose certificate nobody renewed serves it. Call before starting it.
    pub fn expire_server(&self) {
        std::fs::write(
            self.dir.join("ca.cnf"),
            "[ca]\ndefault_ca = d\n[d]\ndatabase = index.txt\nnew_certs_dir = .\nserial = serial\n\
             policy = p\ndefault_md = sha256\n[p]\ncommonName = supplied\n",
        )
        .unwrap();
        std::fs::write(self.dir.join("index.txt"), "").unwrap();
        std::fs::write(self.dir.join("serial"), "1000\n").unwrap();
        openssl(
            &[
                "ca",
                "-batch",
                "-config",
                "ca.cnf",
                "-cert",
                "ca.crt",
                "-keyfile",
                "ca.key",
                "-in",
                "server.csr",
                "-out",
                "server.crt",
                "-startdate",
                "20200101000000Z",
                "-enddate",
                "20200102000000Z",
                "-extfile",
                "server.ext",
                "-notext",
            ],
            &self.dir,
        );
    }
    pub fn ca(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }
    /// The certs.d-style directory: the CA and the client certificate.
    pub fn certs_dir(&self) -> PathBuf {
        self.dir.join("certs")
    }
    /// The same with only the CA (no client certificate).
    pub fn ca_only_dir(&self) -> PathBuf {
        let d = self.dir.join("ca-only");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::copy(self.ca(), d.join("ca.crt")).unwrap();
        d
    }
}
