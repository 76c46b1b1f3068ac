//! The tools the VM backend drives, found on PATH: virtme-ng (`vng`), QEMU and the
//! busybox virtme-ng builds its initramfs from. Missing ones are reported at once with
//! the command that installs them (exit 3).

use darkbuf_kernel::{KernelError, Result};
use std::path::{Path, PathBuf};

/// The install line for everything the VM backend needs (Debian/Ubuntu).
pub const INSTALL_LINE: &str = "apt-get install --no-install-recommends qemu-system-x86 busybox-static && pip install virtme-ng";

/// Where the tools are.
#[derive(Clone, Debug)]
pub struct Tools {
    pub vng: PathBuf,
    pub qemu: PathBuf,
}

/// `name` on `path_var` (a PATH value), if an executable file is there.
pub fn which_in(name: &str, path_var: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path_var).map(|d| d.join(name)).find(|p| {
        std::fs::metadata(p).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
    })
}

/// Finds vng, qemu-system-x86_64 and busybox on `path_var`; exit 3 naming what is
/// missing and how to install it.
pub fn find(path_var: &str) -> Result<Tools> {
    let want = [
        ("vng", "virtme-ng (pip install virtme-ng)"),
        ("qemu-system-x86_64", "QEMU (Debian package qemu-system-x86)"),
        ("busybox", "busybox (Debian package busybox-static), which virtme-ng builds its initramfs from"),
    ];
    let found: Vec<Option<PathBuf>> = want.iter().map(|(n, _)| which_in(n, path_var)).collect();
    let missing: Vec<String> = want.iter().zip(&found).filter(|(_, f)| f.is_none()).map(|((n, what), _)| format!("{n}: {what}")).collect();
    if !missing.is_empty() {
        return Err(KernelError::Unavailable(format!(
            "--backend vm needs these on PATH: {}; install with: {INSTALL_LINE}",
            missing.join("; ")
        )));
    }
    Ok(Tools { vng: found[0].clone().unwrap_or_default(), qemu: found[1].clone().unwrap_or_default() })
}

/// Whether this process can open /dev/kvm read-write (KVM is usable at all).
pub fn kvm_accessible(dev: &Path) -> bool {
    std::fs::OpenOptions::new().read(true).write(true).open(dev).is_ok()
}

/// Why `/dev/kvm` cannot boot a stock kernel, when that is known without trying: the
/// host's KVM is PVM (`kvm_pvm` loaded, neither `kvm_intel` nor `kvm_amd`), the
/// pagetable-based nested hypervisor some cloud sandboxes expose. PVM runs only guest
/// kernels built as PVM guests (`CONFIG_KVM_PVM_GUEST`); a distro kernel stops before
/// its first console line (measured on the development machines: nothing after SeaBIOS's
/// "Probing EDD" in 20 s, with `-cpu host` and `-cpu qemu64`). `sys_module` is
/// /sys/module.
pub fn kvm_unusable_for_stock_kernels(sys_module: &Path) -> Option<String> {
    let has = |m: &str| sys_module.join(m).is_dir();
    (has("kvm_pvm") && !has("kvm_intel") && !has("kvm_amd")).then(|| {
        "/dev/kvm is PVM (kvm_pvm is loaded, kvm_intel and kvm_amd are not), which boots only kernels built as PVM guests; \
         --vm-accel kvm forces it for such a kernel"
            .to_string()
    })
}

/// The first line of `prog --version` (for `environment.vm.tools`), bounded in time.
pub fn version_line(prog: &Path) -> String {
    let out = std::process::Command::new("timeout")
        .arg("10")
        .arg(prog)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    match out {
        Ok(o) => String::from_utf8_lossy(&o.stdout).lines().next().unwrap_or("").trim().to_string(),
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pvm_only_kvm_is_recognised() {
        let dir = std::env::temp_dir().join(format!("darkbuf-vm-sysmod-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("kvm")).unwrap();
        assert_eq!(kvm_unusable_for_stock_kernels(&dir), None, "plain kvm without a vendor module: not known to be PVM");
        std::fs::create_dir_all(dir.join("kvm_pvm")).unwrap();
        let why = kvm_unusable_for_stock_kernels(&dir).expect("kvm_pvm alone");
        assert!(why.contains("PVM") && why.contains("--vm-accel kvm"), "{why}");
        std::fs::create_dir_all(dir.join("kvm_intel")).unwrap();
        assert_eq!(kvm_unusable_for_stock_kernels(&dir), None, "kvm_intel boots stock kernels");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn missing_tools_name_the_install_line() {
        let dir = std::env::temp_dir().join(format!("darkbuf-vm-tools-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let e = find(dir.to_str().unwrap()).unwrap_err();
        match e {
            KernelError::Unavailable(m) => {
                assert!(m.contains("vng: virtme-ng"), "{m}");
                assert!(m.contains("qemu-system-x86_64"), "{m}");
                assert!(m.contains(INSTALL_LINE), "{m}");
            }
            e => panic!("{e:?}"),
        }
        use std::os::unix::fs::PermissionsExt;
        for n in ["vng", "qemu-system-x86_64", "busybox"] {
            let p = dir.join(n);
            std::fs::write(&p, b"#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let t = find(dir.to_str().unwrap()).unwrap();
        assert_eq!(t.vng, dir.join("vng"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
