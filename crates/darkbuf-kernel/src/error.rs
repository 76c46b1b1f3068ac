//! Errors of the kernel backend, classified by the CLI's exit codes
//! (docs/design.md "Command line": 1 internal, 2 bad input, 3 backend unavailable).

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelError {
    /// The scenario or a flag asks for something invalid: exit 2.
    Input(String),
    /// This machine cannot run it (not root, a qdisc or BQL missing, a tool missing): exit 3.
    Unavailable(String),
    /// A command failed unexpectedly: exit 1.
    Internal(String),
    /// A signal (SIGINT, SIGTERM, SIGHUP) stopped the run after everything it created
    /// was removed: exit 128 + `signal`, as a shell reports a process the signal killed.
    Interrupted { signal: i32, message: String },
}

impl KernelError {
    pub fn code(&self) -> u8 {
        match self {
            KernelError::Input(_) => 2,
            KernelError::Unavailable(_) => 3,
            KernelError::Internal(_) => 1,
            KernelError::Interrupted { signal, .. } => (128 + signal).clamp(129, 255) as u8,
        }
    }

    pub fn message(&self) -> &str {
        match self {
            KernelError::Input(m) | KernelError::Unavailable(m) | KernelError::Internal(m) => m,
            KernelError::Interrupted { message, .. } => message,
        }
    }

    /// The same class with `context: ` in front of the message.
    pub fn context(self, context: &str) -> KernelError {
        match self {
            KernelError::Input(m) => KernelError::Input(format!("{context}: {m}")),
            KernelError::Unavailable(m) => KernelError::Unavailable(format!("{context}: {m}")),
            KernelError::Internal(m) => KernelError::Internal(format!("{context}: {m}")),
            KernelError::Interrupted { signal, message } => KernelError::Interrupted { signal, message: format!("{context}: {message}") },
        }
    }
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for KernelError {}

pub type Result<T> = std::result::Result<T, KernelError>;

/// Exit 3 unless the process runs as root (euid 0).
pub fn require_root() -> Result<()> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err(KernelError::Unavailable(
            "the kernel backend needs root (it creates network namespaces, veth/tap devices, qdiscs and \
             netfilter rules); run it with sudo, or use --backend sim"
                .into(),
        ));
    }
    Ok(())
}

pub fn is_root() -> bool {
    // SAFETY: as above.
    unsafe { libc::geteuid() == 0 }
}
