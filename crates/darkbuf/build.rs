//! Records the git commit darkbuf is built from (`DARKBUF_COMMIT`), for the report
//! page and the results' `provenance`: a reader of shared results can check out the
//! exact code. Outside a git checkout (a source tarball) it is `unknown`.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=DARKBUF_COMMIT={commit}");
    // Rebuild when HEAD moves: HEAD itself (a checkout), the branch it points to (a
    // commit), and packed refs. `--git-path` finds them in a worktree too. Only files
    // that exist: cargo reruns a script every time for a path that does not.
    let mut paths = vec!["HEAD".to_string(), "packed-refs".to_string()];
    paths.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for path in paths {
        if let Some(p) = git(&["rev-parse", "--git-path", &path]).filter(|p| std::path::Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
