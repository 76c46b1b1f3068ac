//! Which kernel to boot: `--kernel PATH` (an image, or a kernel build tree) or the
//! newest distro kernel under /boot, and the release string the guest will report.

use darkbuf_kernel::{KernelError, KernelVersion, Result};
use std::path::{Path, PathBuf};

/// What the host tells the user to install when there is no kernel image.
pub const INSTALL_KERNEL: &str = "apt-get install --no-install-recommends linux-image-amd64 \
     (Ubuntu: linux-image-generic; Fedora: kernel-core), or pass --kernel PATH";

/// The kernel the VM boots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelImage {
    /// What `vng --run` gets: an image file, or a build tree (virtme-ng then takes the
    /// tree's modules itself).
    pub run_arg: PathBuf,
    /// The release (`uname -r` in the guest), read from the image's header when the
    /// image is a bzImage; empty when unknown.
    pub release: String,
    /// Whether run_arg is a build tree.
    pub tree: bool,
}

/// The kernel for `--kernel PATH`, or the newest under `boot_dir` (/boot).
pub fn select(kernel: Option<&Path>, boot_dir: &Path) -> Result<KernelImage> {
    match kernel {
        Some(p) => from_path(p),
        None => newest_in(boot_dir).ok_or_else(|| {
            KernelError::Unavailable(format!("no kernel image (vmlinuz-*) in {}: {INSTALL_KERNEL}", boot_dir.display()))
        }),
    }
}

fn from_path(p: &Path) -> Result<KernelImage> {
    let meta = std::fs::metadata(p).map_err(|e| KernelError::Input(format!("--kernel {}: {e}", p.display())))?;
    if meta.is_dir() {
        return tree(p).ok_or_else(|| {
            KernelError::Input(format!(
                "--kernel {}: a directory must be a built kernel tree (with arch/x86/boot/bzImage and include/config/kernel.release)",
                p.display()
            ))
        });
    }
    // An image inside a build tree (.../arch/x86/boot/bzImage): boot the tree, so that
    // virtme-ng installs its modules for the guest.
    let abs = std::fs::canonicalize(p).map_err(|e| KernelError::Input(format!("--kernel {}: {e}", p.display())))?;
    if let Some(t) = abs.ancestors().skip(1).find_map(tree) {
        if t.run_arg.join("arch/x86/boot/bzImage") == abs {
            return Ok(t);
        }
    }
    let release = bzimage_release(&abs).ok_or_else(|| {
        KernelError::Input(format!("--kernel {}: not a bzImage/vmlinuz (no \"HdrS\" boot header at offset 0x202)", p.display()))
    })?;
    Ok(KernelImage { run_arg: abs, release, tree: false })
}

/// A built kernel tree at `dir`.
fn tree(dir: &Path) -> Option<KernelImage> {
    let image = dir.join("arch/x86/boot/bzImage");
    if !image.is_file() {
        return None;
    }
    let release = std::fs::read_to_string(dir.join("include/config/kernel.release"))
        .ok()
        .map(|s| s.trim().to_string())
        .or_else(|| bzimage_release(&image))?;
    Some(KernelImage { run_arg: std::fs::canonicalize(dir).ok()?, release, tree: true })
}

/// The newest `vmlinuz-RELEASE` in `boot_dir`, by release version.
pub fn newest_in(boot_dir: &Path) -> Option<KernelImage> {
    let mut found: Vec<(KernelVersion, String, PathBuf)> = std::fs::read_dir(boot_dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let release = name.strip_prefix("vmlinuz-")?.to_string();
            let path = e.path();
            path.is_file().then(|| (KernelVersion::parse(&release).unwrap_or_default(), release, path))
        })
        .collect();
    found.sort();
    let (_, release, path) = found.pop()?;
    Some(KernelImage { run_arg: path, release, tree: false })
}

/// The kernel release in a bzImage's setup header (`kernel_version` at 0x20e points at
/// the version string, 0x200 bytes before its offset), as `file(1)` reads it: the
/// string up to the first space, e.g. "6.1.0-56-amd64".
pub fn bzimage_release(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).ok()?;
    let mut head = vec![0u8; 0x10000];
    let n = f.read(&mut head).ok()?;
    head.truncate(n);
    parse_bzimage_release(&head)
}

fn parse_bzimage_release(head: &[u8]) -> Option<String> {
    if head.get(0x202..0x206)? != b"HdrS" {
        return None;
    }
    let ptr = u16::from_le_bytes([*head.get(0x20e)?, *head.get(0x20f)?]) as usize + 0x200;
    let s = head.get(ptr..)?;
    let end = s.iter().position(|&b| b == 0 || b == b' ')?;
    let r = std::str::from_utf8(&s[..end]).ok()?;
    (!r.is_empty()).then(|| r.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_bzimage(release: &str) -> Vec<u8> {
        let mut v = vec![0u8; 0x1000];
        v[0x202..0x206].copy_from_slice(b"HdrS");
        let at = 0x400usize;
        v[0x20e..0x210].copy_from_slice(&((at - 0x200) as u16).to_le_bytes());
        let s = format!("{release} (builder@host) #1 SMP");
        v[at..at + s.len()].copy_from_slice(s.as_bytes());
        v
    }

    #[test]
    fn release_from_header() {
        assert_eq!(parse_bzimage_release(&fake_bzimage("6.1.0-56-amd64")).as_deref(), Some("6.1.0-56-amd64"));
        assert_eq!(parse_bzimage_release(b"not a kernel"), None);
        let mut bad = fake_bzimage("x");
        bad[0x20e] = 0xff;
        bad[0x20f] = 0xff;
        assert_eq!(parse_bzimage_release(&bad), None);
    }

    #[test]
    fn newest_and_missing() {
        let dir = std::env::temp_dir().join(format!("darkbuf-vm-boot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(matches!(select(None, &dir), Err(KernelError::Unavailable(m)) if m.contains("linux-image-amd64")));
        for r in ["6.1.0-56-amd64", "6.12.9-amd64", "5.10.0-30-amd64"] {
            std::fs::write(dir.join(format!("vmlinuz-{r}")), fake_bzimage(r)).unwrap();
        }
        std::fs::write(dir.join("config-6.20.0"), b"").unwrap();
        let k = select(None, &dir).unwrap();
        assert_eq!(k.release, "6.12.9-amd64");
        let k = select(Some(&dir.join("vmlinuz-5.10.0-30-amd64")), &dir).unwrap();
        assert_eq!(k.release, "5.10.0-30-amd64");
        assert!(!k.tree);
        assert!(matches!(select(Some(&dir.join("config-6.20.0")), &dir), Err(KernelError::Input(_))));
        assert!(matches!(select(Some(&dir), &dir), Err(KernelError::Input(_))));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
