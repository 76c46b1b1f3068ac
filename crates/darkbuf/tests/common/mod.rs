//! Helpers the command line's integration tests share: running the `darkbuf` binary,
//! the repository's files, and scratch files and directories per test binary.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs `darkbuf ARGS` to completion (whatever its exit code).
pub fn darkbuf(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_darkbuf")).args(args).output().expect("runs")
}

/// The JSON in gzip file `p` (a `.flent.gz`).
pub fn gunzip_json(p: &std::path::Path) -> serde_json::Value {
    let bytes = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut s = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut s).unwrap();
    serde_json::from_str(&s).unwrap()
}

/// The path of `p`, relative to the repository's root.
pub fn repo(p: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(p).to_string_lossy().into_owned()
}

/// A fresh (emptied) directory `darkbuf-TAG-PID-NAME` for one test, removed with all
/// it holds when the test drops it (also when the test fails and unwinds).
pub fn tmp(tag: &str, name: &str) -> TmpDir {
    let d = std::env::temp_dir().join(format!("darkbuf-{tag}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TmpDir(d)
}

/// A test's scratch directory (see [`tmp`]); derefs to its path.
pub struct TmpDir(PathBuf);

impl std::ops::Deref for TmpDir {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The directories [`write`] made: the test binary's tests share their files, so no one
/// test removes them; the binary does, as it exits ([`remove_written`], `atexit`).
static WRITTEN: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

extern "C" fn remove_written() {
    let dirs = WRITTEN.lock().map(|d| d.clone()).unwrap_or_default();
    for d in dirs {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// Writes `text` to `NAME` in the directory `darkbuf-TAG-PID`, and returns its path. The
/// directory goes when the test binary exits.
pub fn write(tag: &str, name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("darkbuf-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    {
        let mut w = WRITTEN.lock().unwrap_or_else(|e| e.into_inner());
        if w.is_empty() {
            // SAFETY: atexit(3) with a function that only removes directories.
            unsafe {
                libc::atexit(remove_written);
            }
        }
        if !w.contains(&dir) {
            w.push(dir.clone());
        }
    }
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
