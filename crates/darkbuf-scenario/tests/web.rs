//! `kind = "web"` entries load with their size distribution, and a CDF file's bad line
//! is an error at that file's line and column (exit 2), never a panic.

use darkbuf_scenario::web::SizeDist;
use darkbuf_scenario::*;

fn repo(p: &str) -> String {
    format!("{}/../../{p}", env!("CARGO_MANIFEST_DIR"))
}

fn web(cdf: &str) -> String {
    format!("duration = \"1s\"\n[device]\ndriver = \"nic\"\nrate = \"100Mbit\"\n[[traffic]]\nkind = \"web\"\narrivals = \"50/s\"\nsize_dist = \"cdf\"\nsize_cdf = \"{cdf}\"\n")
}

#[test]
fn the_shipped_cdfs_load_with_their_means() {
    for (file, mean) in [("scenarios/cdf/websearch.txt", 1_711_250.0), ("scenarios/cdf/datamining.txt", 12_658_198.6)] {
        let s = load_str("x.toml", &web(&repo(file)), &[]).unwrap_or_else(|d| panic!("{file}: {d}"));
        let Traffic::Web(w) = &s.traffic[0] else { panic!("a web entry") };
        assert!(matches!(&w.size, SizeDist::Cdf { .. }));
        assert!((w.size.mean_bytes() - mean).abs() < 1.0, "{file}: {}", w.size.mean_bytes());
        assert!(w.tcp.handshake, "every connection opens with the handshake");
    }
    // The scenario shipped with them finds its CDF beside itself.
    let path = repo("scenarios/web-50pct-fifo-vs-fq_codel.toml");
    let s = load(std::path::Path::new(&path), &[]).unwrap_or_else(|d| panic!("{d}"));
    assert!(matches!(&s.traffic[0], Traffic::Web(w) if w.arrivals_per_s == 3.65));
}

#[test]
fn a_bad_cdf_line_is_refused_at_its_line_and_column() {
    let dir = std::env::temp_dir().join(format!("darkbuf-web-cdf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.txt");
    std::fs::write(&bad, "# sizes\n0 0\n1000 0.5\n  2000 abc\n").unwrap();
    let d = load_str("x.toml", &web(&bad.display().to_string()), &[]).unwrap_err();
    assert_eq!(d.file, bad.display().to_string());
    assert_eq!((d.line, d.column), (Some(4), Some(8)), "{d}");
    assert!(d.message.contains("\"abc\" is not a non-negative number"), "{}", d.message);
    let d = load_str("x.toml", &web("/nonexistent/cdf.txt"), &[]).unwrap_err();
    assert_eq!(d.key, "traffic.0.size_cdf");
    assert!(d.message.contains("there is no file /nonexistent/cdf.txt"), "{}", d.message);
    // A key a web entry does not take (its connections are one flow each).
    let d = load_str("x.toml", &format!("{}flows = 2\n", web(&bad.display().to_string())), &[]).unwrap_err();
    assert!(d.message.contains("unknown key `flows`"), "{}", d.message);
    std::fs::remove_dir_all(&dir).unwrap();
}
