//! The machine's physical NICs and whether their BQL is visible, read-only from sysfs
//! (`/sys/class/net/DEV/device`, `.../queues/tx-N/byte_queue_limits/`), for
//! `darkbuf check`. darkbuf never changes them: a NIC scenario runs on the simulator.

use serde::Serialize;
use std::path::Path;

/// One physical network device (one with a `device` link: a bus device behind it).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NicInfo {
    pub name: String,
    /// The bound driver (`device/driver`'s name), if any.
    pub driver: Option<String>,
    /// `speed` in Mbit/s, when the link reports one.
    pub speed_mbit: Option<u64>,
    pub tx_queues: usize,
    /// TX queues with a `byte_queue_limits` directory.
    pub bql_queues: usize,
    /// tx-0's BQL `limit`, `inflight` and `limit_min` (bytes), when readable.
    pub bql_tx0: Option<(u64, u64, u64)>,
}

fn read_u64(p: &Path) -> Option<u64> {
    std::fs::read_to_string(p).ok()?.trim().parse().ok()
}

/// The NICs under `net` (normally `/sys/class/net`), by name.
pub fn list(net: &Path) -> Vec<NicInfo> {
    let Ok(dir) = std::fs::read_dir(net) else { return Vec::new() };
    let mut out: Vec<NicInfo> = dir
        .flatten()
        .filter(|e| e.path().join("device").exists())
        .map(|e| {
            let p = e.path();
            let driver = std::fs::read_link(p.join("device/driver"))
                .ok()
                .and_then(|l| l.file_name().map(|n| n.to_string_lossy().into_owned()));
            let queues: Vec<_> = std::fs::read_dir(p.join("queues"))
                .map(|d| d.flatten().map(|q| q.path()).filter(|q| q.file_name().is_some_and(|n| n.to_string_lossy().starts_with("tx-"))).collect())
                .unwrap_or_default();
            let bql = p.join("queues/tx-0/byte_queue_limits");
            let bql_tx0 = match (read_u64(&bql.join("limit")), read_u64(&bql.join("inflight")), read_u64(&bql.join("limit_min"))) {
                (Some(l), Some(i), Some(m)) => Some((l, i, m)),
                _ => None,
            };
            NicInfo {
                name: e.file_name().to_string_lossy().into_owned(),
                driver,
                // A link that is down reports -1 or refuses the read.
                speed_mbit: read_u64(&p.join("speed")),
                tx_queues: queues.len(),
                bql_queues: queues.iter().filter(|q| q.join("byte_queue_limits").is_dir()).count(),
                bql_tx0,
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// One line per NIC for `darkbuf check`'s table.
pub fn render(nics: &[NicInfo]) -> String {
    if nics.is_empty() {
        return "NICs: none (no device under /sys/class/net has a bus device)\n".into();
    }
    let mut s = format!("{:<14} {:<12} {:>10} {:>9}  {}\n", "NIC (read-only)", "driver", "speed", "tx queues", "BQL");
    for n in nics {
        let speed = n.speed_mbit.map_or("-".into(), |m| format!("{m}Mb/s"));
        let bql = match (n.bql_queues, n.bql_tx0) {
            (0, _) => "not visible (no byte_queue_limits: CONFIG_BQL off or a driver without it)".to_string(),
            (q, Some((limit, inflight, min))) => format!("{q}/{} queues; tx-0 limit {limit} B, inflight {inflight} B, limit_min {min} B", n.tx_queues),
            (q, None) => format!("{q}/{} queues (values not readable)", n.tx_queues),
        };
        s.push_str(&format!("{:<14} {:<12} {:>10} {:>9}  {}\n", n.name, n.driver.as_deref().unwrap_or("-"), speed, n.tx_queues, bql));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake sysfs: eth0 (virtio_net, BQL on two queues), lo (no device: not a NIC).
    #[test]
    fn lists_physical_devices_and_their_bql() {
        let root = std::env::temp_dir().join(format!("darkbuf-nics-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let eth = root.join("eth0");
        for q in ["tx-0", "tx-1"] {
            std::fs::create_dir_all(eth.join("queues").join(q).join("byte_queue_limits")).unwrap();
        }
        std::fs::create_dir_all(eth.join("queues/rx-0")).unwrap();
        std::fs::create_dir_all(root.join("devices/virtio2/driver_dir/virtio_net")).unwrap();
        std::os::unix::fs::symlink(root.join("devices/virtio2"), eth.join("device")).unwrap();
        std::os::unix::fs::symlink(root.join("devices/virtio2/driver_dir/virtio_net"), root.join("devices/virtio2/driver")).unwrap();
        std::fs::write(eth.join("speed"), "-1\n").unwrap();
        let b = eth.join("queues/tx-0/byte_queue_limits");
        for (f, v) in [("limit", "2169"), ("inflight", "0"), ("limit_min", "0")] {
            std::fs::write(b.join(f), v).unwrap();
        }
        std::fs::create_dir_all(root.join("lo/queues/tx-0")).unwrap();
        let nics = list(&root);
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(nics.len(), 1, "{nics:?}");
        let n = &nics[0];
        assert_eq!((n.name.as_str(), n.driver.as_deref(), n.speed_mbit), ("eth0", Some("virtio_net"), None));
        assert_eq!((n.tx_queues, n.bql_queues, n.bql_tx0), (2, 2, Some((2169, 0, 0))));
        assert!(render(&nics).contains("2/2 queues; tx-0 limit 2169 B"));
    }
}
