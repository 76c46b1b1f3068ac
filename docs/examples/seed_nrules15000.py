# %% [markdown]
# # The seed's nrules=15000 table, from Python
#
# PERF-2651's "nrules=15000 (sfq + tiny-flood, slower consumer)" table as a sweep from
# Python: the six columns (No BQL, per-packet BQL, limit_min 4/8/16, per-poll
# "Batched") are the scenario's `[[variant]]`s, each one simulated 30 s after a 1 s
# warmup. The results come back as pandas frames, and the figure is drawn from them.
#
# A notebook-style script: the `# %%` cells open as a notebook in Jupyter (jupytext) or
# VS Code, and the whole file runs as a script from the repository root:
#
#     pip install '.[plot]'
#     python docs/examples/seed_nrules15000.py                      # 6 points, ~1 min on 2 cores
#     python docs/examples/seed_nrules15000.py --engine ray --address auto   # on a Ray cluster
#
# It writes docs/examples/seed-nrules15000.png (`--out` to change it).

# %%
import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files, no window: runs the same on a server
import matplotlib.pyplot as plt
import matplotlib.ticker

import darkbuf

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "seed-nrules15000.toml"


def args(argv):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--duration", help="measured time per point (default: the scenario's 30s)")
    p.add_argument("--engine", default="local", choices=["local", "ray"])
    p.add_argument("--address", help="Ray cluster address (with --engine ray)")
    p.add_argument("--out", type=Path, default=REPO / "docs" / "examples" / "seed-nrules15000.png")
    return p.parse_args(argv)


# %% [markdown]
# ## Run the sweep
#
# The scenario's variants are the sweep: no `{"key": [values]}` needed. Overrides are
# the command line's `--set` keys (`duration="5s"` is `--set duration=5s`).


# %%
def run(a) -> darkbuf.Results:
    overrides = {"duration": a.duration} if a.duration else {}
    return darkbuf.sweep(SCENARIO, engine=a.engine, address=a.address, progress=True, **overrides)


# %% [markdown]
# ## The frames
#
# `summary` has one row per point and statistic, one column per metric; the variants'
# labels are the columns of the seed's table. `timeseries` is long: one row per sample.


# %%
def table(r: darkbuf.Results):
    mean = r.summary[r.summary.stat == "mean"].set_index("label")
    cols = ["bql.limit_avg", "bql.inflight_avg", "ping.rtt_avg_ms", "ping.rtt_min_ms", "ping.rtt_p99_ms",
            "qdisc.requeues", "napi.avg_work", "consumer.pps"]
    return mean[cols].T


# %% [markdown]
# ## The figure
#
# Left: where the probes' round trip went (qdisc, driver ring, consumer) per
# configuration, with the p99 on top. Right: each probe's RTT over the run: BQL moves
# the queue out of the 256-entry ring into sfq, where the probe no longer waits
# behind the flood.


# %%
def figure(r: darkbuf.Results, out: Path) -> None:
    mean = r.summary[r.summary.stat == "mean"].set_index("label")
    labels = list(mean.index)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8), dpi=80, constrained_layout=True)

    bottom = [0.0] * len(labels)
    for metric, name in [("ping.wait_qdisc_ms", "qdisc"), ("ping.wait_ring_ms", "driver ring"),
                         ("ping.wait_consumer_ms", "consumer")]:
        ax1.bar(labels, mean[metric], bottom=bottom, label=name)
        bottom = [b + v for b, v in zip(bottom, mean[metric])]
    ax1.scatter(labels, mean["ping.rtt_p99_ms"], marker="_", s=300, color="black", label="RTT p99", zorder=3)
    ax1.set_ylabel("ping RTT, ms (mean)")
    ax1.set_title("Where the probes wait")
    ax1.legend(fontsize="small")

    ts = r.timeseries
    rtt = ts[ts.series == "ping.rtt_ms"]
    for label, points in rtt.groupby("label", sort=False):
        ax2.plot(points["t_ms"] / 1000, points["value"], label=label, linewidth=1)
    ax2.set_yscale("log")
    ax2.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1, 2, 5)))
    ax2.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax2.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax2.set_xlabel("time after warmup, s")
    ax2.set_ylabel("ping RTT, ms")
    ax2.set_title("Each probe")
    ax2.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.0, 0.5))

    fig.suptitle(f"{r.name}: sfq + tiny flood, 15000 rules (simulated)")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)


# %%
def main(argv=None) -> int:
    a = args(argv)
    r = run(a)
    print(table(r).to_string(float_format=lambda v: f"{v:.4g}"))
    figure(r, a.out)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
