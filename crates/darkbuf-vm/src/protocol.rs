//! What the host and the guest say to each other: JSON files in the scratch directory,
//! the guest's only writable view of the host (`vng --rwdir`).
//!
//! ```text
//! host writes plan.json ─ boots ─ guest writes boot.json, check.json,
//!                                  calibration.json, profile.json, job-0.json,
//!                                  job-1.json, ..., done
//! ```
//!
//! Each file is written to a temporary name and renamed, so the host, which polls the
//! directory, never reads half a file.

use serde::{Deserialize, Serialize};
use std::io;
use std::path::Path;

pub const PLAN: &str = "plan.json";
pub const BOOT: &str = "boot.json";
pub const CALIBRATION: &str = "calibration.json";
pub const CHECK: &str = "check.json";
/// The guest's machine profile (`darkbuf calibrate --backend vm`): [`ProfileOutcome`].
pub const PROFILE: &str = "profile.json";
pub const DONE: &str = "done";
/// The guest agent's own log (what it would print on stderr).
pub const GUEST_LOG: &str = "guest.log";
/// vng's and QEMU's output (the guest console).
pub const CONSOLE_LOG: &str = "console.log";

pub fn job_file(i: usize) -> String {
    format!("job-{i}.json")
}

/// One scenario to run on the guest's kernel: one `run`, or one sweep point. The
/// scenario travels as text with the overrides that make the point, so the guest
/// resolves exactly what the host validated.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Job {
    /// The file name diagnostics name (and whose stem is the default `name`).
    pub name_for_errors: String,
    pub text: String,
    /// `KEY=VALUE`, as `--set` takes them (a sweep point's own, then the fixed ones).
    pub overrides: Vec<String>,
    /// The sweep point's label ("" for `run`).
    pub label: String,
    pub runs: Option<u32>,
    pub seed: Option<u64>,
    pub probe_trace: bool,
}

/// What the host asks of one boot.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Plan {
    /// Run the boot's calibration before the jobs.
    pub calibrate: bool,
    /// Write `check.json` (`darkbuf check` in the guest) before the jobs.
    pub check: bool,
    pub jobs: Vec<Job>,
    /// A modules directory to bind onto the guest's /lib/modules/RELEASE
    /// (`--kernel-modules`), for an image whose modules are not installed on the host.
    pub modules: Option<String>,
    /// The host had `DARKBUF_TIMING` set: the guest sets it too, and each run's notes
    /// say where its time went.
    #[serde(default)]
    pub timing: bool,
    /// The host had `DARKBUF_VM_FRESH_TOPOLOGY` set: the guest sets it too, and builds
    /// every run's namespaces and devices afresh.
    #[serde(default)]
    pub fresh_topology: bool,
    /// Fit a machine profile to the guest (`darkbuf calibrate` inside it) after the
    /// boot's calibration and before the jobs; the guest writes [`PROFILE`].
    #[serde(default)]
    pub profile: Option<ProfileAsk>,
}

/// `darkbuf calibrate`'s flags, for the guest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileAsk {
    pub quick: bool,
    pub force: bool,
}

/// What `darkbuf calibrate` gave inside the guest.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ProfileOutcome {
    /// The profile TOML (as `calibrate --out` writes it), when it was written.
    pub toml: Option<String>,
    /// `darkbuf calibrate`'s summary (what was fitted, what assumed, notes).
    pub summary: String,
    /// Disturbed steps, "step: what was seen" (written anyway with `force`).
    pub disturbed: Vec<String>,
    /// Why no profile was written.
    pub error: Option<JobError>,
    /// Guest wall time of the calibration, s.
    pub wall_s: f64,
}

/// The guest, as soon as the agent runs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Boot {
    /// `uname -r`.
    pub release: String,
    /// /proc/uptime when the agent started, s.
    pub uptime_s: f64,
    pub cpus: u32,
    pub memory_mib: u64,
    /// Modules the agent loaded, and those it could not load (name: why).
    pub modules_loaded: Vec<String>,
    pub modules_missing: Vec<String>,
}

/// One job's outcome.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JobOutcome {
    /// The results JSON of the kernel backend (`backend = "kernel"`), when it ran.
    pub results: Option<serde_json::Value>,
    /// The kernel backend's notes (printed as `darkbuf: vm: ...`).
    pub notes: Vec<String>,
    /// Why it did not run: (exit code class, message).
    pub error: Option<JobError>,
    /// Guest wall time of the job, s.
    pub wall_s: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JobError {
    /// The CLI's exit code for it (2 input, 3 unavailable, 1 internal, 128+N a signal).
    pub code: u8,
    pub message: String,
}

/// Writes `value` as JSON into `dir/name`, atomically (a temporary name, then rename).
pub fn write_json<T: Serialize>(dir: &Path, name: &str, value: &T) -> io::Result<()> {
    let body = serde_json::to_vec_pretty(value).map_err(io::Error::other)?;
    write_atomic(dir, name, &body)
}

pub fn write_atomic(dir: &Path, name: &str, body: &[u8]) -> io::Result<()> {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, body)?;
    std::fs::rename(&tmp, dir.join(name))
}

/// Reads `dir/name` if it is there (`Ok(None)` when it is not yet).
pub fn read_json<T: for<'de> Deserialize<'de>>(dir: &Path, name: &str) -> io::Result<Option<T>> {
    match std::fs::read(dir.join(name)) {
        Ok(b) => serde_json::from_slice(&b).map(Some).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{name}: {e}"))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_atomic() {
        let dir = std::env::temp_dir().join(format!("darkbuf-vm-proto-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(read_json::<Boot>(&dir, BOOT).unwrap().is_none());
        let b = Boot { release: "6.1.0-56-amd64".into(), uptime_s: 4.5, cpus: 2, memory_mib: 2048, ..Default::default() };
        write_json(&dir, BOOT, &b).unwrap();
        let r: Boot = read_json(&dir, BOOT).unwrap().unwrap();
        assert_eq!(r.release, "6.1.0-56-amd64");
        assert_eq!(r.cpus, 2);
        assert!(!dir.join(".boot.json.tmp").exists());
        std::fs::write(dir.join("job-0.json"), b"{not json").unwrap();
        assert!(read_json::<JobOutcome>(&dir, &job_file(0)).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A plan.json without `profile` (what a host before it wrote) still reads.
    #[test]
    fn a_plan_without_a_profile_step_reads() {
        let p: Plan = serde_json::from_str(r#"{"calibrate":true,"check":false,"jobs":[],"modules":null}"#).unwrap();
        assert_eq!(p.profile, None);
        let p: Plan = serde_json::from_str(r#"{"calibrate":false,"check":false,"jobs":[],"modules":null,"profile":{"quick":true,"force":false}}"#).unwrap();
        assert_eq!(p.profile, Some(ProfileAsk { quick: true, force: false }));
    }
}
