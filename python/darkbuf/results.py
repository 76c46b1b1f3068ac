"""A run's or a sweep's results: the command line's JSON, and pandas frames of it.

Every frame starts with the columns that say which point and run a row belongs to:
``point`` (0, 1, ... in the sweep's order), ``label`` (the point's label, empty for a
run), one column per key the point set (``consumer.nrules``, ``device.bql.limit_min``;
empty (``None``/NaN) where a point did not set it, i.e. kept the scenario's value),
and, for per-run frames, ``run`` (0, 1, ...) and ``seed``. A set key whose name is
taken by one of these columns or by a metric is prefixed with ``set.``.
"""

from __future__ import annotations

import json
import math
from functools import cached_property
from typing import Any, Dict, List, Tuple

import pandas as pd

from . import _darkbuf

#: The statistics of the summary, in the results JSON's terms.
STATS = ("mean", "ci95", "min", "max", "n")

_POINT = ("point", "label")
_RUN = ("run", "seed")


def _num(v: Any) -> float:
    return math.nan if v is None else v


class Results:
    """What :func:`darkbuf.run` and :func:`darkbuf.sweep` return.

    ``to_json()`` is ``darkbuf run|sweep --format json`` for the same scenario and
    seed, byte for byte; ``to_dict()`` is that JSON parsed. The frames (``runs``,
    ``summary``, ``timeseries``, ``histograms``, ``unavailable``, ``findings``) are
    built from it on first use and cached: copy one before changing it.
    """

    def __init__(self, raw: "_darkbuf.RawResults") -> None:
        self._raw = raw

    # The command line's outputs.

    @property
    def kind(self) -> str:
        """``"run"`` or ``"sweep"``."""
        return self._raw.kind

    def to_json(self) -> str:
        """The results JSON, as ``--format json`` prints it."""
        return self._raw.json()

    def to_csv(self) -> str:
        """As ``--format csv`` prints it."""
        return self._raw.csv()

    def table(self, rows: str = "seed") -> str:
        """A markdown table: a run's metrics, or one column per sweep point (``rows``:
        ``"seed"``, the seed report's rows, or ``"all"``)."""
        return self._raw.table(rows)

    def to_dict(self) -> Dict[str, Any]:
        """The results JSON, parsed (a new copy each call)."""
        return json.loads(self.to_json())

    def __repr__(self) -> str:
        n = len(self._points)
        return f"<darkbuf.Results {self.kind} {self.name!r}: {n} point{'s' if n != 1 else ''}, {len(self.runs)} runs>"

    # The JSON, by point.

    @cached_property
    def _data(self) -> Dict[str, Any]:
        return self.to_dict()

    @property
    def name(self) -> str:
        d = self._data
        return d["name"] if self.kind == "sweep" else d["scenario"]["name"]

    @cached_property
    def _points(self) -> List[Tuple[str, List[str], Dict[str, Any]]]:
        """``(label, set, results)`` per point; a run is one point."""
        d = self._data
        if self.kind == "run":
            return [("", [], d)]
        return [(p["label"], p["set"], p["results"]) for p in d["points"]]

    @property
    def points(self) -> List[Dict[str, Any]]:
        """The points as the JSON has them: ``label``, ``set`` and ``results`` (a
        run's results object: ``scenario``, ``environment``, ``runs``, ``summary``,
        ``unavailable``). A run is one point with an empty label."""
        return [{"label": l, "set": s, "results": r} for l, s, r in self._points]

    @cached_property
    def _metric_names(self) -> List[str]:
        names = set()
        for _, _, r in self._points:
            names.update(r["summary"])
            for run in r["runs"]:
                names.update(run["metrics"])
        return sorted(names)

    @cached_property
    def _keys(self) -> List[Tuple[str, str]]:
        """The set keys as (key, column), in first-seen order."""
        seen: Dict[str, None] = {}
        for _, s, _ in self._points:
            for k, _v in _darkbuf.set_values(s):
                seen.setdefault(k)
        taken = set(_POINT) | set(_RUN) | {"stat"} | set(self._metric_names)
        return [(k, f"set.{k}" if k in taken else k) for k in seen]

    @property
    def keys(self) -> List[str]:
        """The frames' columns of the keys the points set."""
        return [c for _, c in self._keys]

    @cached_property
    def _point_cols(self) -> List[Dict[str, Any]]:
        cols = []
        for i, (label, s, _) in enumerate(self._points):
            vals = dict(_darkbuf.set_values(s))
            row = {"point": i, "label": label}
            row.update({c: vals.get(k) for k, c in self._keys})
            cols.append(row)
        return cols

    def _frame(self, rows: List[Dict[str, Any]], columns: List[str], floats: List[str] = ()) -> pd.DataFrame:
        df = pd.DataFrame.from_records(rows, columns=columns) if rows else pd.DataFrame(columns=columns)
        df = df.infer_objects()
        if floats:
            df[list(floats)] = df[list(floats)].astype("float64")
        return df

    # Frames.

    @cached_property
    def runs(self) -> pd.DataFrame:
        """One row per point and run, one column per metric (NaN where the JSON has
        ``null``; ``unavailable`` says why)."""
        metrics = self._metric_names
        rows = []
        for pc, (_, _, r) in zip(self._point_cols, self._points):
            for i, run in enumerate(r["runs"]):
                row = dict(pc, run=i, seed=run["seed"])
                m = run["metrics"]
                row.update({name: _num(m.get(name)) for name in metrics})
                rows.append(row)
        return self._frame(rows, [*_POINT, *self.keys, *_RUN, *metrics], metrics)

    @cached_property
    def summary(self) -> pd.DataFrame:
        """One row per point and statistic (``stat``: mean, ci95, min, max, n over the
        point's runs; ci95 is the half-width of the 95% confidence interval), one
        column per metric. ``summary[summary.stat == "mean"]`` has one row per point."""
        metrics = self._metric_names
        rows = []
        for pc, (_, _, r) in zip(self._point_cols, self._points):
            for stat in STATS:
                row = dict(pc, stat=stat)
                for name in metrics:
                    s = r["summary"].get(name)
                    row[name] = math.nan if s is None else s[stat]
                rows.append(row)
        return self._frame(rows, [*_POINT, *self.keys, "stat", *metrics], metrics)

    @cached_property
    def timeseries(self) -> pd.DataFrame:
        """The time series in long form: one row per sample, with ``series`` (its
        name: ``bql.limit``, ``ping.rtt_ms``, ...), ``unit``, ``t_ms`` (from the end
        of warmup) and ``value`` (NaN for a lost probe)."""
        cols: Dict[str, list] = {c: [] for c in [*_POINT, *self.keys, *_RUN, "series", "unit", "t_ms", "value"]}
        for pc, (_, _, r) in zip(self._point_cols, self._points):
            for i, run in enumerate(r["runs"]):
                for name, ts in run.get("timeseries", {}).items():
                    n = len(ts["t_ms"])
                    for c, v in pc.items():
                        cols[c].extend([v] * n)
                    cols["run"].extend([i] * n)
                    cols["seed"].extend([run["seed"]] * n)
                    cols["series"].extend([name] * n)
                    cols["unit"].extend([ts["unit"]] * n)
                    cols["t_ms"].extend(ts["t_ms"])
                    cols["value"].extend(_num(v) for v in ts["values"])
        df = pd.DataFrame(cols).infer_objects()
        df[["t_ms", "value"]] = df[["t_ms", "value"]].astype("float64")
        return df

    @cached_property
    def histograms(self) -> pd.DataFrame:
        """The log2 histograms in long form: one row per bucket, with ``histogram``,
        ``bucket`` (bpftrace's: 0 holds 0, 1 holds 1, k >= 2 holds [2^(k-1), 2^k)),
        ``low`` and ``high`` (its value range, ``high`` excluded) and ``count``."""
        rows = []
        for pc, (_, _, r) in zip(self._point_cols, self._points):
            for i, run in enumerate(r["runs"]):
                for name, h in run.get("histograms", {}).items():
                    for b, count in enumerate(h["buckets"]):
                        low = 0 if b == 0 else 1 << (b - 1)
                        rows.append(dict(pc, run=i, seed=run["seed"], histogram=name, bucket=b,
                                         low=low, high=1 if b == 0 else 1 << b, count=count))
        return self._frame(rows, [*_POINT, *self.keys, *_RUN, "histogram", "bucket", "low", "high", "count"])

    @cached_property
    def unavailable(self) -> pd.DataFrame:
        """Why a metric is null: one row per point and metric."""
        rows = [dict(pc, metric=m, reason=why)
                for pc, (_, _, r) in zip(self._point_cols, self._points)
                for m, why in r["unavailable"].items()]
        return self._frame(rows, [*_POINT, *self.keys, "metric", "reason"])

    @cached_property
    def findings(self) -> pd.DataFrame:
        """Kernel invariants the simulator found broken (none, normally)."""
        rows = [dict(pc, run=i, seed=run["seed"], **f)
                for pc, (_, _, r) in zip(self._point_cols, self._points)
                for i, run in enumerate(r["runs"])
                for f in run.get("findings", [])]
        return self._frame(rows, [*_POINT, *self.keys, *_RUN, "time_ns", "invariant", "detail"])
