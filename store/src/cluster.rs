//! A PostgreSQL cluster of a test's or a benchmark's own, made with Debian's `initdb` and
//! run with `pg_ctl` on a free port, so that it can stop and start it under a replica (a
//! database going away, and coming back). Deleted when dropped.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A cluster in a temporary directory, trusting local connections as user `postgres`.
#[derive(Debug)]
pub struct OwnCluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
}

impl OwnCluster {
    /// Makes a cluster on a free port and starts it; why not, where the machine has no
    /// PostgreSQL server programs or they fail.
    pub fn start() -> Result<OwnCluster, String> {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .map_err(|_| "no /usr/lib/postgresql (Debian's postgresql package)".to_owned())?
            .filter_map(Result::ok)
            .map(|entry| entry.path().join("bin"))
            .find(|bin| bin.join("initdb").exists() && bin.join("pg_ctl").exists())
            .ok_or("no initdb and pg_ctl under /usr/lib/postgresql/*/bin")?;
        let dir = tempfile::tempdir().map_err(|error| error.to_string())?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map_err(|error| error.to_string())?
            .port();
        let cluster = OwnCluster { dir, bin, port };
        // PostgreSQL refuses to run as root: as root, the cluster is the postgres user's.
        if as_root() {
            let owner = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(cluster.dir.path())
                .status()
                .map_err(|error| format!("chown: {error}"))?;
            if !owner.success() {
                return Err("cannot give the cluster's directory to user postgres".into());
            }
        }
        let initdb = cluster.bin.join("initdb");
        let data = cluster.data();
        cluster.run(&[
            path_text(&initdb),
            "-D",
            &data,
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
        ])?;
        cluster.pg_ctl("start")?;
        Ok(cluster)
    }

    /// The URL of its `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Stops the server (fast: open connections are cut), as a database going away.
    pub fn stop(&self) -> Result<(), String> {
        self.pg_ctl("stop")
    }

    /// Starts the server again, returning once it accepts connections.
    pub fn resume(&self) -> Result<(), String> {
        self.pg_ctl("start")
    }

    fn data(&self) -> String {
        path_text(&self.dir.path().join("data")).to_owned()
    }

    fn pg_ctl(&self, action: &str) -> Result<(), String> {
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {}",
            self.port,
            self.dir.path().display()
        );
        let log = path_text(&self.dir.path().join("server.log")).to_owned();
        let (data, pg_ctl) = (self.data(), self.bin.join("pg_ctl"));
        let mut args = vec![path_text(&pg_ctl), "-D", &data, "-l", &log, "-w"];
        if action == "stop" {
            args.extend(["-m", "fast"]);
        } else {
            args.extend(["-o", &options]);
        }
        args.push(action);
        self.run(&args)
    }

    fn run(&self, args: &[&str]) -> Result<(), String> {
        let (program, rest) = args.split_first().ok_or("no program")?;
        let mut command = if as_root() {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--", program]).args(rest);
            command
        } else {
            let mut command = Command::new(program);
            command.args(rest);
            command
        };
        let output = command
            .current_dir(self.dir.path())
            .output()
            .map_err(|error| format!("{program}: {error}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{} failed: {}{}",
                args.join(" "),
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

fn as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| output.stdout.starts_with(b"0\n"))
}

fn path_text(path: &Path) -> &str {
    path.to_str().unwrap_or_default()
}
