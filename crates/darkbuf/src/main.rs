//! `darkbuf`: where are my packets waiting? See docs/design.md "Command line".
//!
//! Exit codes: 0 ok, 1 internal error, 2 bad input (scenario, flags), 3 backend
//! unavailable, 128 + N when signal N stopped it (130 SIGINT, 143 SIGTERM).

mod kernel_cli;
mod output;
mod plot_check;
mod results_json;
mod import_cli;
mod run;
mod sweep_out;
mod tc_cli;
mod validate;
mod vm_cli;

use crate::output::errln;
use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "darkbuf", version, about = "Find where packets wait in the Linux TX path (qdisc, BQL, driver ring, NAPI) and what each knob does to latency")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    Sim,
    Kernel,
    /// The kernel backend inside a kernel booted under QEMU by virtme-ng (`--kernel`,
    /// `--vm-accel`, `--vm-cpus`, `--vm-memory`); one boot serves the whole command.
    Vm,
}

/// `--backend vm`'s settings.
#[derive(clap::Args, Clone, Debug)]
pub struct VmArgs {
    /// --backend vm: the kernel to boot: a bzImage/vmlinuz, or a built kernel tree (its
    /// modules come with it). Default: the newest /boot/vmlinuz-*.
    #[arg(long, value_name = "PATH")]
    pub kernel: Option<PathBuf>,
    /// --backend vm: modules for a --kernel image that has none under /lib/modules: a
    /// modules directory, or an INSTALL_MOD_PATH holding lib/modules/RELEASE.
    #[arg(long, value_name = "DIR")]
    pub kernel_modules: Option<PathBuf>,
    /// --backend vm: KVM, TCG (QEMU's software emulation), or auto: KVM only after a
    /// probe boot comes up within 25 s, else TCG.
    #[arg(long, value_enum, default_value_t = VmAccel::Auto)]
    pub vm_accel: VmAccel,
    /// --backend vm: vCPUs (default: this machine's CPU count).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub vm_cpus: Option<u32>,
    /// --backend vm: guest memory, e.g. 2G or 4096M (default 2G).
    #[arg(long, value_name = "SIZE", value_parser = vm_cli::parse_memory_mib)]
    pub vm_memory: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum VmAccel {
    Auto,
    Kvm,
    Tcg,
}

impl From<VmAccel> for darkbuf_vm::Accel {
    fn from(a: VmAccel) -> Self {
        match a {
            VmAccel::Auto => darkbuf_vm::Accel::Auto,
            VmAccel::Kvm => darkbuf_vm::Accel::Kvm,
            VmAccel::Tcg => darkbuf_vm::Accel::Tcg,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
    Csv,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Rows {
    /// The rows of the seed report's tables (BQL limit, inflight, ping RTT, requeues, NAPI, pps).
    Seed,
    /// Every metric.
    All,
}

#[derive(clap::Args, Clone)]
pub struct Common {
    /// Backend to run on.
    #[arg(long, value_enum, default_value_t = Backend::Sim)]
    pub backend: Backend,
    /// Override a scenario key: --set device.bql.limit_min=8 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Number of runs (overrides the scenario's `runs`, 1..=1000); run i uses seed + i.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=darkbuf_scenario::limits::MAX_RUNS as i64))]
    pub runs: Option<u32>,
    /// Simulations run at once (sweep points and --runs; default: one per CPU). The
    /// results do not depend on it. The kernel backend always runs one at a time.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: Option<u32>,
    /// Base seed (overrides the scenario's `seed`), 0..=9223372036854775807 like the
    /// scenario's `seed` (a TOML integer); run i uses seed + i, which must be in range too.
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=darkbuf_scenario::seeds::MAX_SEED))]
    pub seed: Option<u64>,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Also write into this directory: results.json, results.csv, results.flent.gz
    /// (flent's data format: `flent -i results.flent.gz -p ping_cdf`), the SVG plots
    /// and report.html. `compare` writes results.json, results.csv and each backend's
    /// flent file, sim.flent.gz and kernel.flent.gz (`flent -i DIR/sim.flent.gz
    /// DIR/kernel.flent.gz -p ping_cdf` draws them together).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Take the qdisc tree from a file of tc lines (`tc qdisc|class|filter add ...`)
    /// instead of the scenario's [qdisc]: the scenario's key qdisc.tc_file.
    #[arg(long, value_name = "FILE")]
    pub tc: Option<PathBuf>,
    /// Kernel backend, veth: trace the probes' far end (tracepoints on the receiving
    /// veth, filtered to the probe's length) for ping.wait_ring_ms and
    /// ping.wait_consumer_ms. The filter runs for every received packet: it took a
    /// tenth of a 270k packets/s consumer on the development VM.
    #[arg(long)]
    pub probe_trace: bool,
    #[command(flatten)]
    pub vm: VmArgs,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a scenario and print its metrics.
    Run {
        scenario: PathBuf,
        #[command(flatten)]
        common: Common,
        /// Also print each run's log2 histograms (the table output always prints them
        /// summed over the runs, as bpftrace does).
        #[arg(long)]
        hist: bool,
    },
    /// Run the cross product of the scenario's [sweep], its [[variant]]s and the
    /// --set KEY=V1,V2 lists; one column per point.
    Sweep {
        scenario: PathBuf,
        #[command(flatten)]
        common: Common,
        /// Which metrics to print as rows in table format.
        #[arg(long, value_enum, default_value_t = Rows::Seed)]
        rows: Rows,
        /// Metric to plot against the swept parameter, with its 95% CI band, in --out
        /// (repeatable; default ping.rtt_avg_ms and consumer.pps).
        #[arg(long = "plot", value_name = "METRIC")]
        plot: Vec<String>,
        /// Also print each point's log2 histograms (summed over its runs), as bpftrace does.
        #[arg(long)]
        hist: bool,
    },
    /// Run the scenario on both backends side by side, with the simulator's error:
    /// (sim - kernel) / kernel, in percentage points for metrics that are percentages.
    Compare {
        scenario: PathBuf,
        #[command(flatten)]
        common: Common,
    },
    /// Report what the running kernel can do (qdiscs, BQL, NAPI, rules, tracing) and
    /// leftovers of a killed run.
    Check {
        /// Remove leftovers (namespaces, devices) of a killed darkbuf run.
        #[arg(long)]
        cleanup: bool,
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// kernel: this machine's kernel; vm: a kernel booted in a VM (see --kernel).
        #[arg(long, value_enum, default_value_t = Backend::Kernel)]
        backend: Backend,
        #[command(flatten)]
        vm: VmArgs,
    },
    /// The differential suite: validation/suite.toml's cases on the simulator and on a
    /// kernel booted in a VM (one boot), one table per metric with the simulator's error
    /// and whether it is within tolerance.
    Validate(validate::ValidateArgs),
    /// The agent inside a `--backend vm` guest (started by the host through virtme-ng).
    #[command(hide = true)]
    VmGuest { dir: PathBuf },
    /// Print a scenario's qdisc tree as the tc lines that build it.
    ShowTc {
        scenario: PathBuf,
        /// Override a scenario key (repeatable), as for run.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// The far host's tree ([peer.qdisc]) instead of this host's.
        #[arg(long)]
        peer: bool,
    },
    /// Write a scenario for a real host's device: its qdisc tree as tc lines, MTU,
    /// txqueuelen, TX queues, BQL, XPS, ring and offloads, from what is running or from
    /// saved command outputs (docs/tc.md lists them).
    Import {
        /// The device (default eth0).
        #[arg(long, value_name = "IFACE")]
        dev: Option<String>,
        /// Read it inside this network namespace (ip netns exec).
        #[arg(long, value_name = "NAME")]
        netns: Option<String>,
        /// Read saved command outputs from this directory instead of running them.
        #[arg(long, value_name = "DIR")]
        from: Option<PathBuf>,
        /// Where the scenario is written; `-` writes it to standard output.
        #[arg(long, value_name = "FILE.toml")]
        out: PathBuf,
    },
    /// Fit the simulator's machine cost profile to this machine, or (--backend vm) to a
    /// kernel booted in a VM, for simulating what that guest runs (validate --profile).
    Calibrate {
        #[arg(long)]
        out: PathBuf,
        /// kernel: this machine; vm: a kernel booted in a VM (see --kernel).
        #[arg(long, value_enum, default_value_t = Backend::Kernel)]
        backend: Backend,
        #[command(flatten)]
        vm: VmArgs,
        /// A one-second, single-run matrix (about 30 s in all) instead of about 1.5 min.
        #[arg(long)]
        quick: bool,
        /// Write the profile even when other processes disturbed the measurement (it
        /// then starts with a warning naming the disturbed steps); without it a busy
        /// machine is an error (exit 3) and nothing is written.
        #[arg(long)]
        force: bool,
    },
    /// Print a saved results JSON (of `run` or `sweep`) as a table, or write it as one
    /// self-contained HTML page: scenario, environment, tables, histograms, plots.
    Report {
        results: PathBuf,
        /// Write the HTML report here (no network requests: CSS and SVG inline).
        #[arg(long, value_name = "OUT.html")]
        html: Option<PathBuf>,
        /// Sweeps: metric to plot against the swept parameter (repeatable; default
        /// ping.rtt_avg_ms and consumer.pps).
        #[arg(long = "plot", value_name = "METRIC")]
        plot: Vec<String>,
    },
}

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, so a write to a closed pipe (`darkbuf run ... | head -1`)
    // fails with EPIPE and print! panics. Restore the default action: the process ends
    // quietly when its reader has gone, as other Unix tools do. (Nothing is written to
    // stdout while a kernel run holds namespaces: results print after teardown.)
    // SAFETY: signal() with SIG_DFL has no preconditions; no other thread runs yet.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(e),
    };
    let mut cli = cli;
    if let Cmd::Run { common, .. } | Cmd::Sweep { common, .. } | Cmd::Compare { common, .. } = &mut cli.cmd {
        if let Some(f) = &common.tc {
            common.set.insert(0, format!("qdisc.tc_file={:?}", f.display().to_string()));
        }
    }
    if let Some(flag) = stray_vm_flag(&cli.cmd) {
        return exit_with(Err(run::Failure::Input(format!("{flag} sets up the VM of --backend vm; this command runs another backend (add --backend vm, or remove {flag})"))));
    }
    let r = match cli.cmd {
        Cmd::Run { scenario, common, hist } if common.backend == Backend::Kernel => {
            kernel_cli::run(&scenario, &common, hist)
        }
        Cmd::Run { scenario, common, hist } if common.backend == Backend::Vm => vm_cli::run(&scenario, &common, hist),
        Cmd::Run { scenario, common, hist } => run::run(&scenario, &common, hist),
        Cmd::Sweep { scenario, common, rows, plot, hist } => run::sweep(&scenario, &common, rows, &plot, hist),
        Cmd::Report { results, html, plot } => run::check_plot_metrics(&plot).and_then(|()| run::report(&results, html.as_deref(), &plot)),
        Cmd::Compare { scenario, common } => kernel_cli::compare(&scenario, &common),
        Cmd::Check { backend: Backend::Vm, format, vm, cleanup } => {
            if cleanup {
                errln!("darkbuf: note: --cleanup removes leftovers on this machine; a VM leaves none (its guest is discarded)");
            }
            vm_cli::check(&vm, format)
        }
        Cmd::Check { backend: Backend::Sim, .. } => {
            Err(run::Failure::Input("check describes a kernel: --backend kernel (this machine's) or vm (a booted kernel)".into()))
        }
        Cmd::Check { cleanup, format, .. } => kernel_cli::check(cleanup, format),
        Cmd::Validate(args) => validate::validate(&args),
        Cmd::VmGuest { dir } => return ExitCode::from(darkbuf_vm::guest::main(&dir, &kernel_cli::simulated_min_rtt_us).clamp(0, 255) as u8),
        Cmd::Calibrate { out, backend: Backend::Vm, vm, quick, force } => vm_cli::calibrate(&out, &vm, quick, force),
        Cmd::Calibrate { backend: Backend::Sim, .. } => {
            Err(run::Failure::Input("calibrate measures a kernel: --backend kernel (this machine's) or vm (a booted kernel)".into()))
        }
        Cmd::Calibrate { out, quick, force, .. } => kernel_cli::calibrate(&out, quick, force),
        Cmd::ShowTc { scenario, set, peer } => tc_cli::show_tc(&scenario, &set, peer),
        Cmd::Import { dev, netns, from, out } => import_cli::import(dev.as_deref(), netns.as_deref(), from.as_deref(), &out),
    };
    exit_with(r)
}

/// A `--backend vm` flag given to a command that runs another backend, which would
/// ignore it.
fn stray_vm_flag(cmd: &Cmd) -> Option<&'static str> {
    let (backend, vm) = match cmd {
        Cmd::Run { common, .. } | Cmd::Sweep { common, .. } | Cmd::Compare { common, .. } => (common.backend, &common.vm),
        Cmd::Check { backend, vm, .. } | Cmd::Calibrate { backend, vm, .. } => (*backend, vm),
        _ => return None,
    };
    if backend == Backend::Vm {
        return None;
    }
    [
        (vm.kernel.is_some(), "--kernel"),
        (vm.kernel_modules.is_some(), "--kernel-modules"),
        (vm.vm_accel != VmAccel::Auto, "--vm-accel"),
        (vm.vm_cpus.is_some(), "--vm-cpus"),
        (vm.vm_memory.is_some(), "--vm-memory"),
    ]
    .into_iter()
    .find_map(|(given, flag)| given.then_some(flag))
}

fn exit_with(r: Result<(), run::Failure>) -> ExitCode {
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            errln!("darkbuf: {f}");
            ExitCode::from(f.code())
        }
    }
}

/// clap's own output: usage errors to stderr, exit 2, as clap prints them; `--help` and
/// `--version` to stdout, coloured on a terminal, and otherwise through
/// [`output::stdout`] (a full disk is exit 1, not a silent 0).
fn clap_exit(e: clap::Error) -> ExitCode {
    use std::io::IsTerminal;
    if e.use_stderr() || std::io::stdout().is_terminal() {
        e.exit()
    }
    exit_with(output::stdout(&e.render().to_string()))
}
