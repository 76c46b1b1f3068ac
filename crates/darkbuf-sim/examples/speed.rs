//! One simulated run of a scenario, timed: `cargo run --release -p darkbuf-sim --example
//! speed -- SCENARIO.toml [KEY=VALUE...]`. Prints the real-time factor and simulated
//! packets per wall-clock second (the criterion bench `sim_speed` does the same with
//! statistics).

use darkbuf_measure::Profile;
use darkbuf_sim::simulate;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: speed SCENARIO.toml [KEY=VALUE...]");
        std::process::exit(2);
    };
    let set: Vec<String> = args.collect();
    let scn = match darkbuf_scenario::load(std::path::Path::new(&path), &set) {
        Ok(s) => s,
        Err(d) => {
            eprintln!("{d}");
            std::process::exit(2);
        }
    };
    let profile = Profile::load(&scn.machine.profile_source()).expect("profile");
    let t = std::time::Instant::now();
    let (rec, _) = simulate(&scn, &profile, scn.seed).expect("simulate");
    let wall = t.elapsed().as_secs_f64();
    let simulated = (scn.duration_ns + scn.warmup_ns) as f64 / 1e9;
    let delivered = rec.metrics["consumer.pps"].unwrap_or(0.0) * scn.duration_ns as f64 / 1e9;
    println!(
        "{path}: {simulated:.2} s simulated in {wall:.3} s wall = {:.2}x real time; {:.2} M delivered pkt/s of wall time",
        simulated / wall,
        delivered / wall / 1e6
    );
}
