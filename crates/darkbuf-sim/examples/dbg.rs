use darkbuf_sim::{simulate, Profile};
fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap();
    let set: Vec<String> = args.collect();
    let scn = darkbuf_scenario::load(std::path::Path::new(&path), &set).unwrap_or_else(|d| { eprintln!("{d}"); std::process::exit(2) });
    let profile = Profile::load(&scn.machine.profile_source()).expect("profile");
    let (rec, _) = simulate(&scn, &profile, scn.seed).expect("simulate");
    let mut g: Vec<(String, f64)> = rec.metrics.iter().filter(|(k, _)| k.starts_with("tcp.flow.") && k.ends_with("goodput_mbps")).map(|(k, v)| (k.clone(), v.unwrap_or(0.0))).collect();
    g.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap());
    let tot: f64 = g.iter().map(|x| x.1).sum();
    let jain = tot * tot / (g.len() as f64 * g.iter().map(|x| x.1 * x.1).sum::<f64>());
    println!("total {tot:.2} largest share {:.2} jain {:.2} >0.5: {} ping {:.1} srtt {:.1}", g[0].1 / tot, jain, g.iter().filter(|x| x.1 > 0.5).count(), rec.metrics["ping.rtt_avg_ms"].unwrap_or(0.0), rec.metrics["tcp.srtt_avg_ms"].unwrap_or(0.0));
}
